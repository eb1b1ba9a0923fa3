// Certificate reload over a real TLS connection on 127.0.0.1: new files are served without a
// restart; a bad pair is logged and the old certificate kept.
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdir, mkdtemp, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import tls from 'node:tls';
import { parseServeArgs } from '../../src/webhook/config.ts';
import { createMetrics } from '../../src/observability/metrics.ts';
import { startServe } from '../../src/webhook/run.ts';
import type { KeyPair } from '../../src/certs/keypair.ts';
import { generateSelfSigned } from '../../src/certs/selfsigned.ts';
import { captureLogs, fakeValidator } from '../webhook/fixtures.ts';
import { waitFor } from '../harness/wait.ts';

/** The fingerprint of the certificate the server presents to a new connection. */
function servedFingerprint(url: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = tls.connect(
      { host: hostname, port: Number(port), rejectUnauthorized: false, servername: 'localhost' },
      () => {
        const fp = socket.getPeerX509Certificate()?.fingerprint256 ?? '';
        socket.end();
        resolve(fp);
      },
    );
    socket.on('error', reject);
  });
}

/** Polls `probe` for up to a minute: the reloader's fallback poll is 10 s, as long as the old wait. */
const until = (what: string, probe: () => Promise<boolean>) => waitFor(what, probe, { intervalMs: 50 });

/**
 * Writes a pair the way the kubelet updates a mounted Secret: files in a fresh timestamped
 * directory, `..data` swapped to it atomically, `tls.crt`/`tls.key` symlinks through `..data`.
 */
let version = 0;
const linked = new Set<string>();
async function install(dir: string, cert: Buffer, key: Buffer): Promise<void> {
  const target = `..v${++version}`;
  await mkdir(join(dir, target));
  await writeFile(join(dir, target, 'tls.crt'), cert);
  await writeFile(join(dir, target, 'tls.key'), key);
  await symlink(target, join(dir, '..data_tmp'));
  await rename(join(dir, '..data_tmp'), join(dir, '..data'));
  if (!linked.has(dir)) {
    linked.add(dir);
    await symlink('..data/tls.crt', join(dir, 'tls.crt'));
    await symlink('..data/tls.key', join(dir, 'tls.key'));
  }
}

const fingerprint = (pair: KeyPair) => new X509Certificate(pair.cert).fingerprint256;

/** The protocol a client limited to TLS 1.2 negotiates, or the error code of a refused handshake. */
function tls12Handshake(url: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = tls.connect(
      {
        host: hostname,
        port: Number(port),
        rejectUnauthorized: false,
        servername: 'localhost',
        minVersion: 'TLSv1.2',
        maxVersion: 'TLSv1.2',
      },
      () => {
        resolve(socket.getProtocol() ?? 'none');
        socket.end();
      },
    );
    socket.on('error', (err: NodeJS.ErrnoException) => resolve(`refused: ${err.code ?? err.message}`));
  });
}

describe('certificate reload', () => {
  it('serves the new certificate after the files change, and keeps the old one when the new pair is bad', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tjw-reload-'));
    after(() => rm(dir, { recursive: true, force: true }));
    const [a, b, c] = await Promise.all([generateSelfSigned(), generateSelfSigned(), generateSelfSigned()]);
    await install(dir, a.cert, a.key);

    const { logger, lines } = captureLogs();
    const metrics = createMetrics();
    const config = parseServeArgs(['--port', '0', '--ops-port', '0', '--host', '127.0.0.1', '--cert-dir', dir], {});
    const handle = await startServe(config, { validator: fakeValidator(), logger, metrics });
    after(() => handle.close());
    assert.equal(await servedFingerprint(handle.admissionUrl), fingerprint(a));

    await install(dir, b.cert, b.key);
    await until(
      'certificate B to be served',
      async () => (await servedFingerprint(handle.admissionUrl)) === fingerprint(b),
    );
    assert.deepEqual(
      (await metrics.certReloads.get()).values.map((v) => [v.labels.result, v.value]),
      [['success', 1]],
    );
    assert.ok(lines.some((l) => l.msg === 'certificate reloaded' && l.fingerprint256 === fingerprint(b)));

    // C's certificate with B's key: not a pair. Logged, counted, B stays in service.
    await install(dir, c.cert, b.key);
    await until('the bad pair to be reported', async () =>
      lines.some((l) => l.msg === 'certificate reload failed; still serving the previous certificate'),
    );
    assert.match(
      String(lines.find((l) => l.msg === 'certificate reload failed; still serving the previous certificate')?.error),
      /not a usable pair/,
    );
    assert.equal(await servedFingerprint(handle.admissionUrl), fingerprint(b));
    const byResult = Object.fromEntries(
      (await metrics.certReloads.get()).values.map((v) => [v.labels.result, v.value]),
    );
    assert.deepEqual(byResult, { success: 1, failure: 1 });

    // Completing the pair puts C into service.
    await install(dir, c.cert, c.key);
    await until(
      'certificate C to be served',
      async () => (await servedFingerprint(handle.admissionUrl)) === fingerprint(c),
    );
    const final = Object.fromEntries((await metrics.certReloads.get()).values.map((v) => [v.labels.result, v.value]));
    assert.deepEqual(final, { success: 2, failure: 1 });
  });

  it('keeps its TLS settings across a reload (the settings of the first context and of each reloaded one come from one function)', async () => {
    // setSecureContext() resets every option it is not given to the process default. The
    // configured minimum (TLS 1.2) equals Node's default, so a process default of TLS 1.3 (as
    // NODE_OPTIONS=--tls-min-v1.3 would set) makes a dropped setting visible: a TLS 1.2 client.
    const processDefault = tls.DEFAULT_MIN_VERSION;
    tls.DEFAULT_MIN_VERSION = 'TLSv1.3';
    after(() => {
      tls.DEFAULT_MIN_VERSION = processDefault;
    });
    const dir = await mkdtemp(join(tmpdir(), 'tjw-reload-'));
    after(() => rm(dir, { recursive: true, force: true }));
    const [a, b] = await Promise.all([generateSelfSigned(), generateSelfSigned()]);
    await install(dir, a.cert, a.key);
    const config = parseServeArgs(['--port', '0', '--ops-port', '0', '--host', '127.0.0.1', '--cert-dir', dir], {});
    const handle = await startServe(config, {
      validator: fakeValidator(),
      logger: captureLogs().logger,
      metrics: createMetrics(),
    });
    after(() => handle.close());
    assert.equal(await tls12Handshake(handle.admissionUrl), 'TLSv1.2', 'first context');

    await install(dir, b.cert, b.key);
    await until(
      'certificate B to be served',
      async () => (await servedFingerprint(handle.admissionUrl)) === fingerprint(b),
    );
    assert.equal(await tls12Handshake(handle.admissionUrl), 'TLSv1.2', 'reloaded context');
  });
});
