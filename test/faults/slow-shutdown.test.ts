// Slow clients do not hold the shutdown open: a TCP connection that never starts its TLS
// handshake, or a request whose body is still trickling in, is cut once the drain's grace for
// incomplete work is over, while a real request in flight on another connection is still answered
// and close() completes. Uncut, such a connection would keep close() waiting until Node's own
// timeouts (120 s handshake, 32 s request), far past `serve`'s 25 s shutdown timeout, which would
// then exit 1 ("shutdown did not finish in time") on every rollout that met one.
import assert from 'node:assert/strict';
import { connect as tcpConnect, type Socket } from 'node:net';
import { after, describe, it } from 'node:test';
import { connect as tlsConnect } from 'node:tls';
import { review, VALIDATE } from '../webhook/fixtures.ts';
import { RawClient } from '../webhook/raw-client.ts';
import { gatedValidator, listening } from '../webhook/listening.ts';

const closedBy = (socket: Socket) =>
  new Promise<void>((resolve) => (socket.destroyed ? resolve() : socket.once('close', () => resolve())));

describe('shutdown with slow clients', { timeout: 30_000 }, () => {
  it('a connection still in its TLS handshake and a request still receiving its body are cut after the grace; the request in flight is answered; close() completes', async () => {
    const { validator, inHandler, release } = gatedValidator();
    const { app, port } = await listening({ idleGraceMs: 100, lingerMs: 100, incompleteGraceMs: 300 }, validator);

    const noHandshake = tcpConnect({ host: '127.0.0.1', port });
    await new Promise((r) => noHandshake.once('connect', r));
    const slowBody = tlsConnect({ host: '127.0.0.1', port, rejectUnauthorized: false });
    await new Promise((r) => slowBody.once('secureConnect', r));
    slowBody.write(
      `POST ${VALIDATE} HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{`,
    );
    for (const s of [noHandshake, slowBody]) s.on('error', () => {});
    after(() => [noHandshake, slowBody].forEach((s) => s.destroy()));

    const client = new RawClient(port);
    await client.ready();
    client.send(review('UPDATE', { uid: 'in-flight' }));
    await inHandler;
    // The server has seen the slow connection's headers by now (same event loop, earlier bytes).
    await new Promise((r) => setTimeout(r, 50));

    const closing = app.close();
    await Promise.all([closedBy(noHandshake), closedBy(slowBody)]);
    release();
    const res = await client.response();
    assert.equal(res.status, 200);
    assert.equal(JSON.parse(res.body).response.uid, 'in-flight');
    await closing;
  });
});
