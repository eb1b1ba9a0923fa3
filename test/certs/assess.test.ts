// The rotation's decisions on the Secret's material, table-driven, with real certificates.
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { assessMaterial, bundleAfterCaRotation, splitPemBundle, type CertMaterial } from '../../src/certs/assess.ts';
import { createCa, issueServingCert, type PemPair } from '../../src/certs/authority.ts';

const DAY = 86_400_000;
const now = new Date('2026-06-01T00:00:00Z');
const hosts = ['trainjob-webhook.kubeflow-system.svc', '127.0.0.1'];
const lookaheadMs = 90 * DAY;

let ca: PemPair;
let otherCa: PemPair;
let shortCa: PemPair;
let serving: PemPair;

const good = (): CertMaterial => ({
  caCrt: ca.certPem,
  caKey: ca.keyPem,
  tlsCrt: serving.certPem,
  tlsKey: serving.keyPem,
});

before(async () => {
  ca = await createCa({ now, validityMs: 3650 * DAY });
  otherCa = await createCa({ now, validityMs: 3650 * DAY });
  shortCa = await createCa({ now, validityMs: 30 * DAY });
  serving = await issueServingCert(ca, hosts, { now, validityMs: 365 * DAY });
});

describe('authority', () => {
  it('makes a CA and a serving certificate for DNS names and IPs, signed by it, never outliving it', async () => {
    const c = new X509Certificate(ca.certPem);
    const s = new X509Certificate(serving.certPem);
    assert.equal(c.ca, true);
    assert.equal(s.ca, false);
    assert.equal(s.subjectAltName, 'DNS:trainjob-webhook.kubeflow-system.svc, IP Address:127.0.0.1');
    assert.ok(s.checkIssued(c) && s.verify(c.publicKey));
    const capped = new X509Certificate(
      (await issueServingCert(shortCa, hosts, { now, validityMs: 365 * DAY })).certPem,
    );
    assert.equal(capped.validTo, new X509Certificate(shortCa.certPem).validTo);
  });

  it('refuses a serving certificate without names', async () => {
    await assert.rejects(issueServingCert(ca, [], { now, validityMs: DAY }), /at least one DNS name or IP address/);
  });
});

describe('assessMaterial', () => {
  const cases: {
    name: string;
    material: () => CertMaterial;
    hosts?: string[];
    at?: Date;
    expect: string;
    reason?: RegExp;
  }[] = [
    { name: 'a good pair is kept', material: good, expect: 'keep' },
    { name: 'an empty Secret gets a CA', material: () => ({}), expect: 'new-ca', reason: /no CA yet/ },
    {
      name: 'a CA without its key gets a new CA',
      material: () => ({ ...good(), caKey: undefined }),
      expect: 'new-ca',
      reason: /no CA yet/,
    },
    {
      name: 'garbage in ca.crt gets a new CA',
      material: () => ({ ...good(), caCrt: 'not a pem' }),
      expect: 'new-ca',
      reason: /holds no certificate/,
    },
    {
      name: 'a CA key of another CA gets a new CA',
      material: () => ({ ...good(), caKey: otherCa.keyPem }),
      expect: 'new-ca',
      reason: /does not belong/,
    },
    {
      name: 'an unparsable CA key gets a new CA',
      material: () => ({ ...good(), caKey: '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n' }),
      expect: 'new-ca',
      reason: /ca.key does not parse/,
    },
    {
      name: 'a leaf certificate as CA gets a new CA',
      material: () => ({ ...good(), caCrt: serving.certPem, caKey: serving.keyPem }),
      expect: 'new-ca',
      reason: /not a CA/,
    },
    {
      name: 'a CA expiring within the lookahead gets a new CA',
      material: () => ({ ...good(), caCrt: shortCa.certPem, caKey: shortCa.keyPem }),
      expect: 'new-ca',
      reason: /CA expires/,
    },
    {
      name: 'no serving certificate gets one',
      material: () => ({ ...good(), tlsCrt: undefined }),
      expect: 'new-serving',
      reason: /no serving certificate/,
    },
    {
      name: 'a serving key of another pair gets a new one',
      material: () => ({ ...good(), tlsKey: ca.keyPem }),
      expect: 'new-serving',
      reason: /tls.key does not belong/,
    },
    {
      name: 'a serving certificate of another CA gets a new one',
      material: () => ({ ...good(), caCrt: otherCa.certPem, caKey: otherCa.keyPem }),
      expect: 'new-serving',
      reason: /not signed by the CA/,
    },
    {
      name: 'a name the certificate lacks gets a new one',
      material: good,
      hosts: [...hosts, 'trainjob-webhook.other.svc'],
      expect: 'new-serving',
      reason: /does not name trainjob-webhook.other.svc/,
    },
    {
      name: 'an IP the certificate lacks gets a new one',
      material: good,
      hosts: [hosts[0], '10.0.0.1'],
      expect: 'new-serving',
      reason: /does not name 10.0.0.1/,
    },
    {
      name: 'a serving certificate expiring within the lookahead gets a new one',
      material: good,
      at: new Date(now.getTime() + 300 * DAY),
      expect: 'new-serving',
      reason: /tls.crt expires/,
    },
    {
      name: 'a serving certificate not valid yet gets a new one',
      material: good,
      at: new Date(now.getTime() - 2 * DAY),
      expect: 'new-serving',
      reason: /not valid before/,
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const a = assessMaterial(c.material(), { hosts: c.hosts ?? hosts, now: c.at ?? now, lookaheadMs });
      assert.equal(a.action, c.expect);
      if (c.reason) assert.match((a as { reason: string }).reason, c.reason);
    });
  }

  it('a bundle whose first CA signs is kept (the previous CA after it does not matter)', () => {
    assert.equal(
      assessMaterial({ ...good(), caCrt: ca.certPem + otherCa.certPem }, { hosts, now, lookaheadMs }).action,
      'keep',
    );
    assert.equal(
      assessMaterial(
        { ...good(), caCrt: otherCa.certPem + ca.certPem, caKey: otherCa.keyPem },
        { hosts, now, lookaheadMs },
      ).action,
      'new-serving',
    );
  });
});

describe('bundleAfterCaRotation', () => {
  it('puts the new CA first and keeps the previous signing CA while it is valid', () => {
    const b = splitPemBundle(bundleAfterCaRotation(otherCa.certPem, ca.certPem, now));
    assert.deepEqual(b, [otherCa.certPem.trim(), ca.certPem.trim()]);
  });
  it('keeps only one previous CA, never an expired one, never garbage', () => {
    assert.equal(splitPemBundle(bundleAfterCaRotation(otherCa.certPem, ca.certPem + shortCa.certPem, now)).length, 2);
    assert.deepEqual(
      splitPemBundle(bundleAfterCaRotation(otherCa.certPem, shortCa.certPem, new Date(now.getTime() + 60 * DAY))),
      [otherCa.certPem.trim()],
    );
    assert.deepEqual(splitPemBundle(bundleAfterCaRotation(otherCa.certPem, 'junk', now)), [otherCa.certPem.trim()]);
    assert.deepEqual(splitPemBundle(bundleAfterCaRotation(otherCa.certPem, undefined, now)), [otherCa.certPem.trim()]);
  });
});
