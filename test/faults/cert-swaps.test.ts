// Certificates replaced under load: `serve` (a real process) reads its pair from a folder laid out
// like a mounted Secret, which the test updates the way the kubelet does (files in a fresh
// timestamped folder, the `..data` symlink swapped atomically, the old folder removed). Clients
// verify the server against the CA, as the API server does with its caBundle. Across every swap:
// zero failed requests, each new certificate is served to new connections, each swap is reloaded
// once and no reload is reported failed (an atomic swap never shows a torn pair).
// Short form in `npm test`: 3 swaps; `npm run test:faults`: 20.
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdir, mkdtemp, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { connect } from 'node:tls';
import { createCA, issueServingCert, type KeyPairPem } from '../harness/pki.ts';
import { admissionClient, load, startServeProcess, UPSTREAM_CRD } from './serve-process.ts';
import { longForm } from './support.ts';

const SWAPS = longForm() ? 20 : 3;

/** The kubelet's atomic update of a Secret volume (pkg/volume/util/atomic_writer.go). */
async function kubeletWrite(dir: string, version: number, pair: KeyPairPem, previous?: string): Promise<string> {
  const target = `..2026_12_01_00_00_00.${version}`;
  await mkdir(path.join(dir, target));
  await writeFile(path.join(dir, target, 'tls.crt'), pair.certPem);
  await writeFile(path.join(dir, target, 'tls.key'), pair.keyPem);
  await symlink(target, path.join(dir, '..data_tmp'));
  await rename(path.join(dir, '..data_tmp'), path.join(dir, '..data'));
  if (previous === undefined) {
    await symlink('..data/tls.crt', path.join(dir, 'tls.crt'));
    await symlink('..data/tls.key', path.join(dir, 'tls.key'));
  } else {
    await rm(path.join(dir, previous), { recursive: true });
  }
  return target;
}

/** The certificate a new, verified connection is served. */
function servedFingerprint(port: number, ca: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, ca, servername: 'localhost' }, () => {
      const fp = socket.getPeerX509Certificate()?.fingerprint256 ?? '';
      socket.end();
      resolve(fp);
    });
    socket.on('error', reject);
  });
}

describe('certificates replaced under load', { timeout: 300_000 }, () => {
  it(`${SWAPS} kubelet-style swaps of the serving pair while requests flow: zero failed requests, the new certificate served after each`, async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'tjw-swaps-'));
    after(() => rm(dir, { recursive: true, force: true }));
    const certDir = path.join(dir, 'cert');
    await mkdir(certDir);
    const ca = await createCA();
    const pairs = await Promise.all(Array.from({ length: SWAPS + 1 }, () => issueServingCert(ca, 'trainjob-webhook')));
    let current = await kubeletWrite(certDir, 0, pairs[0]);

    const serve = await startServeProcess(['--crd', UPSTREAM_CRD, '--cert-dir', certDir], dir);
    after(() => serve.child.kill('SIGKILL'));
    assert.equal(await servedFingerprint(serve.port, ca.certPem), new X509Certificate(pairs[0].certPem).fingerprint256);

    // Keep-alive pools (connections made before a swap keep their session) and one pool that
    // handshakes anew for every request (it meets each new certificate at once).
    const clients = [
      ...Array.from({ length: 3 }, () => admissionClient({ port: serve.port, ca: ca.certPem })),
      admissionClient({ port: serve.port, ca: ca.certPem, keepAlive: false }),
    ];
    after(() => clients.forEach((c) => c.close()));
    const traffic = load(clients, 'swap');
    await traffic.progress(50);

    for (let i = 1; i <= SWAPS; i++) {
      current = await kubeletWrite(certDir, i, pairs[i], current);
      const expected = new X509Certificate(pairs[i].certPem).fingerprint256;
      // The directory watch reloads within its debounce; the 10 s poll is the backstop.
      const deadline = Date.now() + 30_000;
      let served: string;
      while ((served = await servedFingerprint(serve.port, ca.certPem)) !== expected && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 100));
      assert.equal(served, expected, `swap ${i}: the new certificate is served`);
      await traffic.progress(20);
    }
    await traffic.stop();

    const failed = traffic.results.filter(
      ({ uid, result }) => !result.ok || result.status !== 200 || result.uid !== uid,
    );
    assert.deepEqual(
      failed.slice(0, 5),
      [],
      `${failed.length} of ${traffic.results.length} requests failed across ${SWAPS} swaps`,
    );
    assert.ok(traffic.results.length >= 50 + 20 * SWAPS);
    // The last reload was served before its log line reached the pipe: wait for the lines.
    const logDeadline = Date.now() + 10_000;
    while (serve.lines.filter((l) => l.msg === 'certificate reloaded').length < SWAPS && Date.now() < logDeadline)
      await new Promise((r) => setTimeout(r, 50));
    assert.equal(serve.lines.filter((l) => l.msg === 'certificate reloaded').length, SWAPS, 'each swap reloaded once');
    assert.deepEqual(
      serve.lines.filter((l) => /reload failed/.test(String(l.msg))),
      [],
      'no reload reported failed',
    );
  });
});
