// The rotation's logic over an in-memory store that keeps resourceVersions like the API server
// (a write at a stale version is a 409). The real API server is in test/e2e/install-rotation.
import { describe, it, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import {
  ROTATION_DEFAULTS,
  startCertRotation as startRotation,
  type RotationSettings,
} from '../../src/certs/rotator.ts';
import { ConflictError, type CertStore } from '../../src/certs/store.ts';
import type { CertMaterial } from '../../src/certs/assess.ts';
import type { WebhookConfigRef } from '../../src/certs/inject.ts';
import { createCa, issueServingCert } from '../../src/certs/authority.ts';
import { writeServingFiles } from '../../src/certs/files.ts';

const root = mkdtempSync(join(tmpdir(), 'tjw-rotator-'));
after(() => rmSync(root, { recursive: true, force: true }));
const logger = pino({ level: 'silent' });

/** One shared "API server" state; each replica gets its own view with a hook before writes. */
class World {
  secret: { material: CertMaterial; rv: number } | undefined;
  configs = new Map<
    string,
    { metadata: { resourceVersion: string }; webhooks: { clientConfig: Record<string, string> }[] }
  >();
  rv = 1;
  secretWrites = 0;
  store(
    beforeWrite: () => Promise<void> = async () => {},
    beforeConfigWrite: () => Promise<void> = async () => {},
  ): CertStore {
    return {
      readSecret: async () =>
        this.secret ? { material: { ...this.secret.material }, resourceVersion: String(this.secret.rv) } : undefined,
      createSecret: async (m) => {
        await beforeWrite();
        if (this.secret) throw new ConflictError('exists');
        this.secret = { material: m, rv: ++this.rv };
        this.secretWrites++;
      },
      replaceSecret: async (m, rv) => {
        await beforeWrite();
        if (!this.secret || String(this.secret.rv) !== rv) throw new ConflictError('stale');
        this.secret = { material: m, rv: ++this.rv };
        this.secretWrites++;
      },
      readWebhookConfig: async (ref) => structuredClone(this.configs.get(ref.name)),
      replaceWebhookConfig: async (ref, c) => {
        await beforeConfigWrite();
        const cur = this.configs.get(ref.name)!;
        const next = c as typeof cur;
        if (next.metadata.resourceVersion !== cur.metadata.resourceVersion) throw new ConflictError('stale');
        this.configs.set(ref.name, { ...next, metadata: { resourceVersion: String(++this.rv) } });
      },
      watch: () => () => {},
    };
  }
}

const refs: WebhookConfigRef[] = [
  { kind: 'validating', name: 'v' },
  { kind: 'mutating', name: 'm' },
];
const settings = (name: string): RotationSettings => ({
  ...ROTATION_DEFAULTS,
  hosts: ['svc.ns.svc'],
  webhookConfigs: refs,
  certDir: join(root, name),
});
const caBundleOf = (w: World, name: string) =>
  Buffer.from(w.configs.get(name)!.webhooks[0].clientConfig.caBundle, 'base64').toString();

describe('startCertRotation', () => {
  /** Every rotation started, stopped after its test even when an assertion failed before its stop(). */
  const started: { stop(): void }[] = [];
  const startCertRotation = (...args: Parameters<typeof startRotation>) => {
    const r = startRotation(...args);
    started.push(r);
    return r;
  };
  afterEach(() => started.splice(0).forEach((r) => r.stop()));

  it('creates the Secret, writes the files, injects the CA; a configuration that does not exist is skipped', async () => {
    const w = new World();
    w.configs.set('v', { metadata: { resourceVersion: '1' }, webhooks: [{ clientConfig: {} }] });
    const r = startCertRotation(settings('a'), w.store(), logger);
    await r.ready;
    const res = await r.sync();
    r.stop();
    assert.equal(res.secret, 'kept');
    assert.equal(w.secretWrites, 1);
    assert.equal(readFileSync(join(root, 'a', 'tls.crt'), 'utf8'), w.secret!.material.tlsCrt);
    assert.equal(caBundleOf(w, 'v'), w.secret!.material.caCrt);
    assert.equal(w.configs.has('m'), false);
  });

  it('two replicas racing for an empty Secret end with one CA: the loser adopts', async () => {
    const w = new World();
    w.configs.set('v', { metadata: { resourceVersion: '1' }, webhooks: [{ clientConfig: {} }] });
    w.configs.set('m', { metadata: { resourceVersion: '1' }, webhooks: [{ clientConfig: {} }] });
    // Both read "no Secret" before either writes.
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let waiting = 0;
    const barrier = async () => {
      if (++waiting === 2) release();
      await gate;
    };
    const a = startCertRotation(settings('r1'), w.store(barrier), logger);
    const b = startCertRotation(settings('r2'), w.store(barrier), logger);
    await Promise.all([a.ready, b.ready]);
    await Promise.all([a.sync(), b.sync()]);
    a.stop();
    b.stop();
    assert.equal(w.secretWrites, 1, 'one writer won');
    const ca = w.secret!.material.caCrt;
    assert.equal(readFileSync(join(root, 'r1', 'ca.crt'), 'utf8'), ca);
    assert.equal(readFileSync(join(root, 'r2', 'ca.crt'), 'utf8'), ca);
    assert.equal(readFileSync(join(root, 'r1', 'tls.crt'), 'utf8'), readFileSync(join(root, 'r2', 'tls.crt'), 'utf8'));
    assert.equal(caBundleOf(w, 'v'), ca);
    assert.equal(caBundleOf(w, 'm'), ca);
  });

  it('renews a serving certificate within the lookahead with the same CA', async () => {
    const w = new World();
    const now = new Date();
    const ca = await createCa({ now, validityMs: ROTATION_DEFAULTS.caValidityMs });
    const short = await issueServingCert(ca, ['svc.ns.svc'], { now, validityMs: 30 * 86_400_000 });
    w.secret = {
      material: { caCrt: ca.certPem, caKey: ca.keyPem, tlsCrt: short.certPem, tlsKey: short.keyPem },
      rv: 5,
    };
    const r = startCertRotation(settings('renew'), w.store(), logger);
    await r.ready;
    await r.sync();
    r.stop();
    assert.equal(w.secret.material.caCrt, ca.certPem, 'the CA stays');
    assert.notEqual(w.secret.material.tlsCrt, short.certPem);
    assert.equal(readFileSync(join(root, 'renew', 'tls.crt'), 'utf8'), w.secret.material.tlsCrt);
  });

  it('a CA rotation keeps the previous CA in the bundle', async () => {
    const w = new World();
    const now = new Date();
    const old = await createCa({ now, validityMs: 60 * 86_400_000 });
    const s = await issueServingCert(old, ['svc.ns.svc'], { now, validityMs: 60 * 86_400_000 });
    w.secret = { material: { caCrt: old.certPem, caKey: old.keyPem, tlsCrt: s.certPem, tlsKey: s.keyPem }, rv: 5 };
    const r = startCertRotation(settings('ca'), w.store(), logger);
    await r.ready;
    r.stop();
    const bundle = w.secret.material.caCrt!;
    assert.ok(bundle.endsWith(old.certPem), 'the old CA follows the new one');
    assert.notEqual(bundle, old.certPem);
  });

  /** A Secret whose CA expires within the lookahead, and the files of it being served. */
  async function expiringCa(w: World, name: string) {
    const now = new Date();
    const old = await createCa({ now, validityMs: 60 * 86_400_000 });
    const s = await issueServingCert(old, ['svc.ns.svc'], { now, validityMs: 60 * 86_400_000 });
    w.secret = { material: { caCrt: old.certPem, caKey: old.keyPem, tlsCrt: s.certPem, tlsKey: s.keyPem }, rv: 5 };
    w.configs.set('v', { metadata: { resourceVersion: '1' }, webhooks: [{ clientConfig: {} }] });
    await writeServingFiles(join(root, name), { caCrt: old.certPem, tlsCrt: s.certPem, tlsKey: s.keyPem });
    return s;
  }

  it('a certificate of a new CA is served only after the caBundle trusts that CA', async () => {
    const w = new World();
    const served = await expiringCa(w, 'order');
    const seenAtInjection: string[] = [];
    const r = startCertRotation(
      settings('order'),
      w.store(undefined, async () => void seenAtInjection.push(readFileSync(join(root, 'order', 'tls.crt'), 'utf8'))),
      logger,
    );
    await r.ready;
    await r.sync();
    r.stop();
    assert.deepEqual(
      seenAtInjection,
      [served.certPem],
      'the old certificate was still served while the bundle was written',
    );
    assert.equal(readFileSync(join(root, 'order', 'tls.crt'), 'utf8'), w.secret!.material.tlsCrt);
  });

  it('when the caBundle cannot be written, the certificate being served stays and the pass fails (to be retried)', async () => {
    const w = new World();
    const served = await expiringCa(w, 'denied');
    const r = startCertRotation(
      settings('denied'),
      w.store(undefined, async () => Promise.reject(new Error('HTTP 403: forbidden'))),
      logger,
    );
    await assert.rejects(r.sync(), /HTTP 403/);
    r.stop();
    assert.notEqual(w.secret!.material.tlsCrt, served.certPem, 'the Secret was renewed');
    assert.equal(readFileSync(join(root, 'denied', 'tls.crt'), 'utf8'), served.certPem, 'the files were not');
  });

  it('with no files yet, they are written (the server can start) even when the caBundle cannot be', async () => {
    const w = new World();
    w.configs.set('v', { metadata: { resourceVersion: '1' }, webhooks: [{ clientConfig: {} }] });
    const r = startCertRotation(
      settings('first'),
      w.store(undefined, async () => Promise.reject(new Error('HTTP 403: forbidden'))),
      logger,
    );
    await r.ready;
    r.stop();
    assert.equal(readFileSync(join(root, 'first', 'tls.crt'), 'utf8'), w.secret!.material.tlsCrt);
  });
});
