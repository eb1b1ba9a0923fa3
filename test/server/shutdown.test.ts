// Shutdown on real TLS sockets: the drain must not cut a keep-alive connection a client is
// writing on (ECONNRESET at the API server, a failed webhook call), must answer what arrives
// while draining with `Connection: close`, and the process must end within its timeout.
import assert from 'node:assert/strict';
import { connect, type TLSSocket } from 'node:tls';
import { after, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildAdmissionServer, installProcessHandlers } from '../../src/server.ts';
import { createMetrics } from '../../src/observability/metrics.ts';
import { VALIDATE, captureLogs, fakeValidator, review, testCert } from '../webhooks/fixtures.ts';

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** One TLS connection speaking HTTP/1.1 by hand, so a test decides exactly when each byte goes out. */
class RawClient {
  readonly socket: TLSSocket;
  #buffer = '';
  #waiters: Array<() => void> = [];
  ended = false;
  error: Error | undefined;

  constructor(port: number) {
    this.socket = connect({ host: '127.0.0.1', port, rejectUnauthorized: false });
    this.socket.setEncoding('utf8');
    this.socket.on('data', (chunk: string) => {
      this.#buffer += chunk;
      this.#wake();
    });
    this.socket.on('end', () => {
      this.ended = true;
      this.#wake();
    });
    this.socket.on('error', (err) => {
      this.error = err;
      this.#wake();
    });
  }

  #wake(): void {
    for (const w of this.#waiters.splice(0)) w();
  }

  ready(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.socket.once('secureConnect', () => resolve());
      this.socket.once('error', reject);
    });
  }

  send(body: unknown): void {
    const text = JSON.stringify(body);
    this.socket.write(`POST ${VALIDATE} HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`);
  }

  /** The next response; fails if the connection ends or breaks first. */
  async response(): Promise<RawResponse> {
    for (;;) {
      const head = this.#buffer.indexOf('\r\n\r\n');
      if (head >= 0) {
        const lines = this.#buffer.slice(0, head).split('\r\n');
        const headers = Object.fromEntries(lines.slice(1).map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
        const length = Number(headers['content-length']);
        if (this.#buffer.length >= head + 4 + length) {
          const body = this.#buffer.slice(head + 4, head + 4 + length);
          this.#buffer = this.#buffer.slice(head + 4 + length);
          return { status: Number(lines[0].split(' ')[1]), headers, body };
        }
      }
      if (this.error) throw this.error;
      if (this.ended) throw new Error('connection ended without a (whole) response');
      await new Promise<void>((r) => this.#waiters.push(r));
    }
  }

  /** Resolves when the server has closed the connection; says how. */
  closed(): Promise<'end' | 'error'> {
    return new Promise((resolve) => {
      if (this.error) return resolve('error');
      if (this.ended) return resolve('end');
      this.#waiters.push(() => resolve(this.error ? 'error' : 'end'));
    });
  }
}

async function listening(drain = { idleGraceMs: 200, lingerMs: 200 }): Promise<{ app: FastifyInstance; port: number }> {
  const app = await buildAdmissionServer({ tls: await testCert(), drain }, { validator: fakeValidator(), logger: captureLogs().logger, metrics: createMetrics() });
  await app.listen({ host: '127.0.0.1', port: 0 });
  after(() => app.close());
  return { app, port: (app.server.address() as { port: number }).port };
}

describe('shutdown drain', () => {
  it('a request written on an idle keep-alive connection as the shutdown starts is answered, with Connection: close', async () => {
    const { app, port } = await listening();
    const client = new RawClient(port);
    await client.ready();
    client.send(review('CREATE', { uid: 'first' }));
    const first = await client.response();
    assert.equal(first.status, 200);
    assert.notEqual(first.headers.connection, 'close');

    // The connection is idle; the shutdown starts and the client writes in the same turn.
    const closing = app.close();
    client.send(review('CREATE', { uid: 'second' }));
    const second = await client.response();
    assert.equal(second.status, 200);
    assert.equal(JSON.parse(second.body).response.uid, 'second');
    assert.equal(second.headers.connection, 'close');
    assert.equal(await client.closed(), 'end');
    assert.equal(client.error, undefined);
    await closing;
  });

  it('an idle connection that stays quiet is closed cleanly (no reset), and close() then completes', async () => {
    const { app, port } = await listening();
    const client = new RawClient(port);
    await client.ready();
    client.send(review('CREATE'));
    assert.equal((await client.response()).status, 200);
    await app.close();
    assert.equal(await client.closed(), 'end');
    assert.equal(client.error, undefined);
  });

  it('an in-flight request finishes (Connection: close); no new connection is accepted once closing', async () => {
    let release!: () => void;
    let entered!: () => void;
    const inHandler = new Promise<void>((r) => (entered = r));
    const gate = new Promise<void>((r) => (release = r));
    const app = await buildAdmissionServer(
      { tls: await testCert(), drain: { idleGraceMs: 200, lingerMs: 200 } },
      {
        validator: fakeValidator(async () => {
          entered();
          await gate;
          return { causes: [], warnings: [] };
        }),
        logger: captureLogs().logger,
        metrics: createMetrics(),
      },
    );
    await app.listen({ host: '127.0.0.1', port: 0 });
    const port = (app.server.address() as { port: number }).port;
    const client = new RawClient(port);
    await client.ready();
    client.send(review('UPDATE', { uid: 'slow' }));
    await inHandler;
    const closing = app.close();
    await new Promise((r) => setImmediate(r));
    const late = new RawClient(port);
    await assert.rejects(late.ready(), /ECONNREFUSED/);
    release();
    const res = await client.response();
    assert.equal(res.status, 200);
    assert.equal(JSON.parse(res.body).response.uid, 'slow');
    assert.equal(res.headers.connection, 'close');
    await closing;
  });
});

describe('process handlers end the process', { timeout: 20_000 }, () => {
  const signal = 'SIGVTALRM';

  function install(close: () => Promise<void>, timeoutMs = 5_000) {
    const { logger, lines } = captureLogs();
    const exits: number[] = [];
    let exited!: (code: number) => void;
    const exit = new Promise<number>((r) => (exited = r));
    const uninstall = installProcessHandlers({ close }, { logger, timeoutMs, signals: [signal], exit: (code) => (exits.push(code), exited(code)) });
    after(uninstall);
    return { exit, exits, lines };
  }

  it('after a completed close, even with a stray handle still open (a leaked client socket)', async () => {
    const stray = setInterval(() => {}, 1_000);
    after(() => clearInterval(stray));
    const { exit } = install(async () => {});
    process.emit(signal, signal);
    assert.equal(await exit, 0);
  });

  it('with code 1 when the close outlasts the timeout', async () => {
    const { exit, lines } = install(() => new Promise(() => {}), 50);
    process.emit(signal, signal);
    assert.equal(await exit, 1);
    assert.ok(lines.some((l) => l.msg === 'shutdown did not finish in time: exiting'));
  });

  it('with code 1 at once on a second signal', async () => {
    const { exit } = install(() => new Promise(() => {}));
    process.emit(signal, signal);
    process.emit(signal, signal);
    assert.equal(await exit, 1);
  });
});
