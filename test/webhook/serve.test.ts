// `serve` end to end on real sockets: HTTPS admission port, plain-HTTP ops port, graceful drain.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { request } from 'node:https';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { parseServeArgs } from '../../src/webhook/config.ts';
import type { ServeConfig } from '../../src/webhook/config.ts';
import { createMetrics } from '../../src/observability/metrics.ts';
import { startServe } from '../../src/webhook/run.ts';
import type { Validator } from '../../src/rules/contract.ts';
import { VALIDATE, captureLogs, fakeValidator, review } from './fixtures.ts';
import { gatedValidator } from './listening.ts';

const hasIpv6 = Object.values(networkInterfaces()).some((addresses) => addresses?.some((a) => a.family === 'IPv6'));

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'tjw-serve-'));
  after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

function config(certDir: string): ServeConfig {
  const c = parseServeArgs(['--port', '0', '--ops-port', '0', '--host', '127.0.0.1', '--log-level', 'debug'], {});
  return { ...c, tls: { mode: 'generated', dir: certDir } };
}

export function httpsPost(url: string, body: unknown, ca: Buffer): Promise<{ status: number; json: any }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', ca, headers: { 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, json: text ? JSON.parse(text) : undefined }));
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

async function start(validator: Validator) {
  const dir = await tempDir();
  const { logger, lines } = captureLogs();
  const handle = await startServe(config(dir), { validator, logger, metrics: createMetrics() });
  after(() => handle.close());
  const ca = await readFile(join(dir, 'ca.crt'));
  return { handle, lines, ca, dir };
}

describe('serve', () => {
  it('answers AdmissionReviews over verified TLS; health and metrics only on the ops port', async () => {
    const { handle, ca } = await start(fakeValidator());
    assert.match(handle.admissionUrl, /^https:\/\/127\.0\.0\.1:\d+$/);
    assert.match(handle.opsUrl, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.notEqual(new URL(handle.admissionUrl).port, new URL(handle.opsUrl).port);

    const res = await httpsPost(handle.admissionUrl + VALIDATE, review('CREATE', { uid: 'tls-1' }), ca);
    assert.equal(res.status, 200);
    assert.equal(res.json.response.uid, 'tls-1');

    for (const path of ['/healthz', '/readyz', '/metrics']) {
      const ops = await fetch(handle.opsUrl + path);
      assert.equal(ops.status, 200, path);
      const admissionPort = await httpsGetStatus(handle.admissionUrl + path, ca);
      assert.equal(admissionPort, 404, `${path} is not on the admission port`);
    }
    const metrics = await (await fetch(handle.opsUrl + '/metrics')).text();
    assert.match(
      metrics,
      /trainjob_webhook_requests_total\{webhook="validate",operation="CREATE",decision="allowed"\} 1/,
    );
    assert.match(metrics, /trainjob_webhook_handoff_hints_total/);
    assert.match(metrics, /trainjob_webhook_cert_reloads_total/);
  });

  it(
    'listens on every address by default (dual-stack): both ports answer over IPv6 ::1 and IPv4 127.0.0.1',
    { skip: hasIpv6 ? false : 'this host has no IPv6 address' },
    async () => {
      const dir = await tempDir();
      const everyAddress: ServeConfig = {
        ...parseServeArgs(['--port', '0', '--ops-port', '0'], {}),
        tls: { mode: 'generated', dir },
      };
      const handle = await startServe(everyAddress, {
        validator: fakeValidator(),
        logger: captureLogs().logger,
        metrics: createMetrics(),
      });
      after(() => handle.close());
      const ca = await readFile(join(dir, 'ca.crt'));
      const [admissionPort, opsPort] = [new URL(handle.admissionUrl).port, new URL(handle.opsUrl).port];
      for (const address of ['[::1]', '127.0.0.1']) {
        const res = await httpsPost(
          `https://${address}:${admissionPort}${VALIDATE}`,
          review('CREATE', { uid: `via-${address}` }),
          ca,
        );
        assert.equal(res.json.response.uid, `via-${address}`, `admission port over ${address}`);
        assert.equal((await fetch(`http://${address}:${opsPort}/healthz`)).status, 200, `ops port over ${address}`);
      }
    },
  );

  it('close() drains an in-flight request, then stops both ports', async () => {
    const { validator, inHandler, release } = gatedValidator();
    const { handle, ca } = await start(validator);
    const inFlight = httpsPost(handle.admissionUrl + VALIDATE, review('UPDATE', { uid: 'slow' }), ca);
    await inHandler;

    let closed = false;
    const closing = handle.close().then(() => (closed = true));
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(closed, false, 'close waits for the in-flight request');
    const ready = await fetch(handle.opsUrl + '/readyz');
    assert.equal(ready.status, 503, 'not ready while draining');

    release();
    const res = await inFlight;
    assert.equal(res.status, 200);
    assert.equal(res.json.response.uid, 'slow');
    await closing;
    await assert.rejects(fetch(handle.opsUrl + '/healthz'));
  });

  it('a busy default ops port is skipped with a warning (admission still serves); a busy --ops-port is an error', async () => {
    const { createServer } = await import('node:net');
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', () => r()));
    after(() => blocker.close());
    const busy = (blocker.address() as { port: number }).port;
    const dir = await tempDir();
    const { logger, lines } = captureLogs();
    const implicit = { ...config(dir), opsPort: busy, opsPortExplicit: false };
    const handle = await startServe(implicit, { validator: fakeValidator(), logger, metrics: createMetrics() });
    after(() => handle.close());
    assert.equal(handle.opsUrl, 'none');
    assert.ok(lines.some((l) => /ops port .* is in use/.test(String(l.msg))));
    const ca = await readFile(join(dir, 'ca.crt'));
    assert.equal((await httpsPost(`${handle.admissionUrl}${VALIDATE}`, review('CREATE'), ca)).status, 200);
    const explicit = { ...config(await tempDir()), opsPort: busy, opsPortExplicit: true };
    await assert.rejects(
      startServe(explicit, { validator: fakeValidator(), logger: captureLogs().logger, metrics: createMetrics() }),
      /EADDRINUSE/,
    );
  });

  it('refuses to start with --cert-dir pointing at a directory without a key pair', async () => {
    const dir = await tempDir();
    const c = { ...config(dir), tls: { mode: 'files' as const, dir } };
    await assert.rejects(
      startServe(c, { validator: fakeValidator(), logger: captureLogs().logger, metrics: createMetrics() }),
      /--cert-dir .*: .*ENOENT/,
    );
  });
});

function httpsGetStatus(url: string, ca: Buffer): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'GET', ca }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}
