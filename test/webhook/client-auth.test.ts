// `serve --client-ca`: only a caller with a client certificate the CA signed completes a TLS
// handshake on the admission port, and only its requests count as the API server's
// (callerAuthenticated). Every failed handshake is counted by reason and logged at most once per
// interval; a serving-certificate reload keeps the client CA; the CA file itself is re-read.
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Agent, request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Server as TlsServer } from 'node:tls';
import { ConfigError, parseServeArgs } from '../../src/webhook/config.ts';
import { createMetrics } from '../../src/observability/metrics.ts';
import { startServe, type ServeHandle } from '../../src/webhook/run.ts';
import { ClientTrust, watchHandshakes } from '../../src/webhook/client-auth.ts';
import { buildAdmissionServer } from '../../src/webhook/server.ts';
import { replaceServingMaterial } from '../../src/certs/serving-options.ts';
import { watchClientCa } from '../../src/certs/client-ca.ts';
import {
  createCA,
  issueClientCert,
  issueServingCert,
  writeKeyPair,
  type CertificateAuthority,
  type KeyPairPem,
} from '../harness/pki.ts';
import { VALIDATE, captureLogs, fakeValidator, postOverTls, review, type FakeValidator } from './fixtures.ts';

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'tjw-client-auth-'));
  after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

interface Pki {
  dir: string;
  caFile: string;
  servingCa: string;
  apiServer: KeyPairPem;
  stranger: KeyPairPem;
  named: KeyPairPem;
}

async function pki(dir: string): Promise<Pki> {
  const ca = await createCA('webhook-client-ca');
  const other = await createCA('someone-else');
  await writeKeyPair(join(dir, 'serving'), await issueServingCert(ca, 'trainjob-webhook'));
  const caFile = join(dir, 'client-ca.crt');
  await writeFile(caFile, ca.certPem);
  return {
    dir,
    caFile,
    servingCa: ca.certPem,
    apiServer: await issueClientCert(ca, 'kube-apiserver'),
    stranger: await issueClientCert(other, 'kube-apiserver'),
    named: await issueClientCert(ca, 'kube-apiserver-admission'),
  };
}

type Result = { status: number; json: any } | { error: string };

async function post(url: string, servingCa: string, client?: KeyPairPem): Promise<Result> {
  const got = await postOverTls(url, servingCa, review('UPDATE', { uid: 'mtls' }), client);
  return 'error' in got ? got : { status: got.status, json: got.text ? JSON.parse(got.text) : undefined };
}

async function serve(p: Pki, flags: string[]) {
  const { logger, lines } = captureLogs();
  const validator = fakeValidator();
  const config = parseServeArgs(
    ['--port', '0', '--ops-port', '0', '--host', '127.0.0.1', '--cert-dir', join(p.dir, 'serving'), ...flags],
    {},
  );
  const handle = await startServe(config, { validator, logger, metrics: createMetrics() });
  after(() => handle.close());
  return { handle, lines, validator };
}

async function failures(handle: ServeHandle, reason: string): Promise<number> {
  const { values } = await handle.metrics.tlsHandshakeFailures.get();
  return values.find((v) => v.labels.reason === reason)?.value ?? 0;
}

const answered = (r: Result) => 'status' in r && r.status === 200 && r.json?.response?.uid === 'mtls';

/** Waits for a counter the server's tlsClientError handler bumps after the client already saw its error. */
async function eventually(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!(await check())) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('serve --client-ca', () => {
  let p: Pki;
  before(async () => {
    p = await pki(await mkdtemp(join(tmpdir(), 'tjw-client-auth-')));
  });
  after(() => rm(p.dir, { recursive: true, force: true }));

  it("answers the API server's certificate, and only its requests count as authenticated", async () => {
    const { handle, validator } = await serve(p, ['--client-ca', p.caFile]);
    const r = await post(handle.admissionUrl, p.servingCa, p.apiServer);
    assert.ok(answered(r), JSON.stringify(r));
    assert.equal((validator as FakeValidator).calls[0]?.callerAuthenticated, true);
  });

  it('without --client-ca, no caller counts as authenticated', async () => {
    const { handle, validator } = await serve(p, []);
    assert.ok(answered(await post(handle.admissionUrl, p.servingCa)));
    assert.ok(answered(await post(handle.admissionUrl, p.servingCa, p.apiServer)));
    assert.deepEqual(
      validator.calls.map((c) => c.callerAuthenticated),
      [undefined, undefined],
    );
  });

  it('a caller without a certificate, or with one another CA signed, cannot complete a handshake: counted by reason, logged', async () => {
    const { handle, lines, validator } = await serve(p, ['--client-ca', p.caFile]);
    const none = await post(handle.admissionUrl, p.servingCa);
    assert.ok('error' in none, `no certificate was answered: ${JSON.stringify(none)}`);
    await eventually(async () => (await failures(handle, 'no_client_certificate')) === 1, 'no_client_certificate');
    const stranger = await post(handle.admissionUrl, p.servingCa, p.stranger);
    assert.ok('error' in stranger, `a stranger's certificate was answered: ${JSON.stringify(stranger)}`);
    await eventually(
      async () => (await failures(handle, 'untrusted_client_certificate')) === 1,
      'untrusted_client_certificate',
    );
    assert.equal(validator.calls.length, 0, 'nothing reached the validator');
    const warned = lines.filter((l) => l.level === 'warn' && typeof l.reason === 'string');
    assert.deepEqual(
      warned.map((l) => l.reason),
      ['no_client_certificate', 'untrusted_client_certificate'],
    );
    assert.match(String(warned[0]?.msg), /sent no client certificate.*failurePolicy is Fail/);
    const metrics = await handle.metrics.registry.metrics();
    assert.match(metrics, /trainjob_webhook_tls_handshake_failures_total\{reason="no_client_certificate"\} 1/);
  });

  it('--client-name: a verified certificate naming none of the names is closed before any request is read', async () => {
    const { handle, validator } = await serve(p, [
      '--client-ca',
      p.caFile,
      '--client-name',
      'kube-apiserver-admission',
    ]);
    const wrong = await post(handle.admissionUrl, p.servingCa, p.apiServer);
    assert.ok('error' in wrong, JSON.stringify(wrong));
    assert.equal(await failures(handle, 'client_name_not_allowed'), 1);
    assert.ok(answered(await post(handle.admissionUrl, p.servingCa, p.named)));
    assert.deepEqual(
      validator.calls.map((c) => c.callerAuthenticated),
      [true],
    );
  });

  it('a serving-certificate reload keeps requiring the client certificate', async () => {
    const dir = await tempDir();
    const ca = await createCA('reload-ca');
    await writeKeyPair(join(dir, 'serving'), await issueServingCert(ca, 'first'));
    const caFile = join(dir, 'client-ca.crt');
    await writeFile(caFile, ca.certPem);
    const local: Pki = {
      ...p,
      dir,
      caFile,
      servingCa: ca.certPem,
      apiServer: await issueClientCert(ca, 'kube-apiserver'),
    };
    const { handle, lines } = await serve(local, ['--client-ca', caFile]);
    await writeKeyPair(join(dir, 'serving'), await issueServingCert(ca, 'second'));
    await eventually(async () => lines.some((l) => l.msg === 'certificate reloaded'), 'the reload');
    assert.ok(answered(await post(handle.admissionUrl, local.servingCa, local.apiServer)));
    const none = await post(handle.admissionUrl, local.servingCa);
    assert.ok('error' in none, `after the reload a caller without a certificate was answered: ${JSON.stringify(none)}`);
  });
});

describe('the client CA file is re-read', () => {
  it('a renewed bundle is applied; a broken one is logged once and the old one stays', async () => {
    const dir = await tempDir();
    const file = join(dir, 'ca.crt');
    const first = (await createCA('first')).certPem;
    const second = (await createCA('second')).certPem;
    await writeFile(file, first);
    const applied: string[] = [];
    const { logger, lines } = captureLogs();
    const watch = watchClientCa({
      file,
      current: Buffer.from(first),
      apply: (pem) => void applied.push(pem.toString()),
      logger,
      pollMs: 3_600_000,
    });
    after(() => watch.close());
    await watch.check();
    assert.deepEqual(applied, [], 'unchanged: nothing applied');
    await writeFile(file, 'not a certificate');
    await watch.check();
    await watch.check();
    assert.deepEqual(applied, []);
    assert.equal(lines.filter((l) => l.level === 'error').length, 1, 'a broken file is reported once');
    await writeFile(file, second);
    await watch.check();
    assert.deepEqual(applied, [second]);
  });
});

describe('a client CA reload', () => {
  it('ends connections verified under the previous bundle: an idle one at once, a busy one after its response', async () => {
    const ca = await createCA('first-ca');
    const next = await createCA('next-ca');
    const serving = await issueServingCert(ca, 'localhost');
    const client = await issueClientCert(ca, 'kube-apiserver');
    const pair = { cert: Buffer.from(serving.certPem), key: Buffer.from(serving.keyPem) };
    const trust = new ClientTrust();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let hold = false;
    const validator = fakeValidator(async () => {
      if (hold) await gate;
      return { causes: [], warnings: [] };
    });
    const app = await buildAdmissionServer(
      { tls: pair, clientAuth: { ca: Buffer.from(ca.certPem), trust } },
      { validator, logger: captureLogs().logger, metrics: createMetrics() },
    );
    const url = await app.listen({ port: 0, host: '127.0.0.1' });
    after(() => app.close());
    const agent = (cert: KeyPairPem) => {
      const a = new Agent({ keepAlive: true, maxSockets: 1, ca: ca.certPem, cert: cert.certPem, key: cert.keyPem });
      after(() => a.destroy());
      return a;
    };
    const send = (via: Agent) =>
      new Promise<{ status: number; connection?: string } | { error: string }>((resolve) => {
        const req = request(
          url + VALIDATE,
          { method: 'POST', agent: via, headers: { 'content-type': 'application/json' } },
          (res) => {
            res.resume();
            res.on('end', () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection }));
          },
        );
        req.on('error', (err: NodeJS.ErrnoException) => resolve({ error: err.code ?? err.message }));
        req.end(JSON.stringify(review('UPDATE', { uid: 'mtls' })));
      });
    const reload = (bundle: CertificateAuthority) => {
      replaceServingMaterial(app.server as unknown as TlsServer, { pair, clientCa: Buffer.from(bundle.certPem) });
      trust.renew();
    };

    // Idle: closed at once, so the next request needs a handshake the new bundle refuses.
    const idle = agent(client);
    assert.deepEqual(await send(idle), { status: 200, connection: 'keep-alive' });
    reload(next);
    const afterReload = await send(idle);
    assert.ok(
      'error' in afterReload,
      `an idle connection from before the reload was answered: ${JSON.stringify(afterReload)}`,
    );
    assert.equal(validator.calls.length, 1);

    // Busy: its answer goes out, with Connection: close, and the connection ends.
    const busy = agent(await issueClientCert(next, 'kube-apiserver'));
    assert.deepEqual(await send(busy), { status: 200, connection: 'keep-alive' });
    hold = true;
    const inFlight = send(busy);
    while (validator.calls.length < 3) await new Promise((r) => setTimeout(r, 10));
    reload(await createCA('third-ca'));
    release();
    assert.deepEqual(await inFlight, { status: 200, connection: 'close' });
    const again = await send(busy);
    assert.ok('error' in again, `a busy connection from before the reload was kept: ${JSON.stringify(again)}`);
    assert.equal(validator.calls.length, 3);
  });
});

describe('failed handshakes in the log', () => {
  it('each reason is exported at 0 from the start, so the alert sees the first failure', async () => {
    const metrics = createMetrics();
    watchHandshakes(new EventEmitter() as unknown as TlsServer, { logger: captureLogs().logger, metrics });
    const { values } = await metrics.tlsHandshakeFailures.get();
    assert.deepEqual(values.map((v) => [v.labels.reason, v.value]).sort(), [
      ['client_name_not_allowed', 0],
      ['no_client_certificate', 0],
      ['other', 0],
      ['untrusted_client_certificate', 0],
    ]);
  });

  it('once per interval and reason, with the count it stands for', () => {
    const server = new EventEmitter();
    const { logger, lines } = captureLogs();
    const metrics = createMetrics();
    let now = 0;
    watchHandshakes(server as unknown as TlsServer, { logger, metrics, intervalMs: 30_000, now: () => now });
    const noCert = Object.assign(new Error('peer did not return a certificate'), {
      code: 'ERR_SSL_PEER_DID_NOT_RETURN_A_CERTIFICATE',
    });
    const socket = { remoteAddress: '10.0.0.7', authorizationError: null };
    for (let i = 0; i < 5; i++) server.emit('tlsClientError', noCert, socket);
    now = 31_000;
    server.emit('tlsClientError', noCert, socket);
    const warned = lines.filter((l) => l.level === 'warn');
    assert.deepEqual(
      warned.map((l) => [l.reason, l.failures]),
      [
        ['no_client_certificate', 1],
        ['no_client_certificate', 5],
      ],
    );
    const reset = Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
    server.emit('tlsClientError', reset, { remoteAddress: '10.0.0.8', authorizationError: 'CERT_HAS_EXPIRED' });
    assert.equal(lines.at(-1)?.reason, 'untrusted_client_certificate');
    assert.equal(lines.at(-1)?.detail, 'CERT_HAS_EXPIRED');
  });
});

describe('--client-ca parsing', () => {
  it('reads and checks the bundle once; --client-name needs it', async () => {
    const dir = await tempDir();
    const good = join(dir, 'ca.crt');
    const pem = (await createCA('parse')).certPem;
    await writeFile(good, pem);
    const c = parseServeArgs(['--client-ca', good, '--client-name', 'kube-apiserver, front'], {});
    assert.equal(c.clientAuth?.caFile, good);
    assert.equal(c.clientAuth?.ca.toString(), pem);
    assert.deepEqual(c.clientAuth?.names, ['kube-apiserver', 'front']);
    assert.equal(parseServeArgs([], {}).clientAuth, undefined);
    assert.throws(
      () => parseServeArgs(['--client-name', 'x'], {}),
      (e: Error) => e instanceof ConfigError && /--client-name needs --client-ca/.test(e.message),
    );
  });

  it('a missing file, a file without a certificate, or a broken one is a ConfigError naming the flag and the file', async () => {
    const dir = await tempDir();
    const missing = join(dir, 'nope.crt');
    assert.throws(
      () => parseServeArgs(['--client-ca', missing], {}),
      (e: Error) => e instanceof ConfigError && e.message.startsWith(`--client-ca ${missing}: no such file`),
    );
    const text = join(dir, 'text.crt');
    await writeFile(text, 'hello\n');
    assert.throws(
      () => parseServeArgs(['--client-ca', text], {}),
      (e: Error) => e instanceof ConfigError && /holds no PEM certificate/.test(e.message),
    );
    const broken = join(dir, 'broken.crt');
    await writeFile(broken, '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n');
    assert.throws(
      () => parseServeArgs(['--client-ca', broken], {}),
      (e: Error) => e instanceof ConfigError && /certificate 1 of 1 does not parse/.test(e.message),
    );
    assert.throws(
      () => parseServeArgs(['--client-ca', ''], {}),
      (e: Error) => e instanceof ConfigError && /--client-ca needs a value/.test(e.message),
    );
  });
});
