// Shutdown on real TLS sockets: the drain must not cut a keep-alive connection a client is
// writing on (ECONNRESET at the API server, a failed webhook call), must answer what arrives
// while draining with `Connection: close`, and the process must end within its timeout.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { installProcessHandlers } from '../../src/process/signals.ts';
import { captureLogs, review } from './fixtures.ts';
import { RawClient } from './raw-client.ts';
import { gatedValidator, listening } from './listening.ts';

describe('shutdown drain', () => {
  it('a request written on an idle keep-alive connection as the shutdown starts is answered, with Connection: close', async () => {
    // An idle grace far longer than a pause of a loaded machine: with 200 ms, a stall between
    // close() and reading the request let the grace timer end the connection first (timers run
    // before I/O in an event-loop turn), and the request was never answered.
    const { app, port } = await listening({ idleGraceMs: 30_000, lingerMs: 200 });
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
    const { validator, inHandler, release } = gatedValidator();
    const { app, port } = await listening({ idleGraceMs: 200, lingerMs: 200 }, validator);
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
    const uninstall = installProcessHandlers(
      { close },
      { logger, timeoutMs, signals: [signal], exit: (code) => (exits.push(code), exited(code)) },
    );
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
