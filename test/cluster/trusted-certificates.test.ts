// A CA bundle read as Go's CertPool.AppendCertsFromPEM reads it (client-go's rootCertPool): the
// CERTIFICATE blocks without headers that parse; other blocks skipped; none at all is an error.
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { before, describe, it } from 'node:test';
import { trustedCertificates } from '../../src/cluster/connection.ts';
import { createCA } from '../harness/pki.ts';

const subjects = (pem: Buffer) => [...pem.toString('latin1').matchAll(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g)].map((m) => new X509Certificate(m[0]).subject);

describe('trustedCertificates', () => {
  let a = '';
  let b = '';
  before(async () => {
    a = (await createCA('ca-a')).certPem.trim();
    b = (await createCA('ca-b')).certPem.trim();
  });

  const bad = '-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----';
  const withHeaders = () => a.replace('-----BEGIN CERTIFICATE-----\n', '-----BEGIN CERTIFICATE-----\nProc-Type: 4,ENCRYPTED\n\n');
  const cases: [string, () => string, string[]][] = [
    ['one certificate', () => a, ['CN=ca-a']],
    ['two, with comments and blank lines around them', () => `# corporate roots\n${a}\n\n# second\n${b}\n`, ['CN=ca-a', 'CN=ca-b']],
    ['CRLF line endings', () => `${a}\n${b}\n`.replace(/\n/g, '\r\n'), ['CN=ca-a', 'CN=ca-b']],
    ['a block that does not parse among good ones (skipped, as Go)', () => `${a}\n${bad}\n${b}\n`, ['CN=ca-a', 'CN=ca-b']],
    ['a block with headers (skipped, as Go)', () => `${withHeaders()}\n${b}\n`, ['CN=ca-b']],
    ['another PEM type beside a certificate', () => `-----BEGIN X509 CRL-----\nAAAA\n-----END X509 CRL-----\n${a}\n`, ['CN=ca-a']],
    ['a BEGIN line ending in spaces and a tab (pem.Decode trims them)', () => a.replace('-----BEGIN CERTIFICATE-----\n', '-----BEGIN CERTIFICATE-----  \t\n'), ['CN=ca-a']],
    ['a block cut short before a whole one (the whole one kept, as pem.Decode)', () => `${a.slice(0, a.length / 2)}\n${b}\n`, ['CN=ca-b']],
  ];
  for (const [name, bundle, expected] of cases) {
    it(`keeps ${name}`, () => assert.deepEqual(subjects(trustedCertificates(Buffer.from(bundle()))).map((s) => s.trim()), expected));
  }

  for (const [name, bundle] of [
    ['an empty file', ''],
    ['text without PEM', 'not a certificate\n'],
    ['only a block that does not parse', bad],
    ['a certificate cut short', () => a.slice(0, a.length / 2)],
  ] as const) {
    it(`refuses ${name}: no certificate`, () => {
      const text = typeof bundle === 'function' ? bundle() : bundle;
      assert.throws(() => trustedCertificates(Buffer.from(text)), { message: 'the certificate authority holds no PEM certificate' });
    });
  }
});
