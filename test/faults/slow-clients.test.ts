// Slow clients do not starve real requests: hundreds of connections held open by `serve` (a real
// process) in the three ways a slowloris can hold one (a TCP connection that never starts its TLS
// handshake, request headers a byte at a time, a body a byte at a time) while AdmissionReviews
// are sent the way the API server sends them: every real one gets its 200 with its uid, and the
// slow ones were still held when the last answer came (so they really were there).
// The long form (`npm run test:faults`) also waits for the server's own timeouts to cut every
// slow connection (none is left to hold a file descriptor for ever).
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect as tcpConnect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { connect as tlsConnect } from 'node:tls';
import { admissionClient, startServeProcess, UPSTREAM_CRD } from './serve-process.ts';
import { longForm, VALIDATE } from './support.ts';

const LONG = longForm();
/** Slow connections of each kind. */
const SLOW_PER_KIND = LONG ? 500 : 100;
const REAL_REQUESTS = LONG ? 2_000 : 200;

type Kind = 'no-handshake' | 'slow-headers' | 'slow-body';

interface SlowConnection {
  kind: Kind;
  socket: Socket;
  /** Set when the server ended or reset the connection. */
  closedByServer: boolean;
  stop(): void;
}

/** One slow connection: it writes one more byte every second and never completes its request. */
function slowConnection(port: number, kind: Kind): Promise<SlowConnection> {
  return new Promise((resolve, reject) => {
    const conn: SlowConnection = {
      kind,
      socket: undefined as unknown as Socket,
      closedByServer: false,
      stop: () => {},
    };
    let timer: NodeJS.Timeout | undefined;
    const trickle = (text: string) => {
      let i = 0;
      timer = setInterval(() => {
        if (i < text.length && conn.socket.writable) conn.socket.write(text[i++]);
      }, 1_000);
    };
    const opened = () => {
      conn.socket.on('close', () => {
        clearInterval(timer);
        conn.closedByServer = true;
      });
      conn.socket.on('error', () => {});
      if (kind === 'slow-headers')
        trickle(
          `POST ${VALIDATE} HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\nX-Padding: ${'x'.repeat(4_000)}\r\n\r\n`,
        );
      if (kind === 'slow-body') {
        conn.socket.write(
          `POST ${VALIDATE} HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{`,
        );
        trickle(' '.repeat(99_999));
      }
      conn.stop = () => {
        clearInterval(timer);
        conn.socket.removeAllListeners('close');
        conn.socket.destroy();
      };
      resolve(conn);
    };
    conn.socket =
      kind === 'no-handshake'
        ? tcpConnect({ host: '127.0.0.1', port }, opened)
        : tlsConnect({ host: '127.0.0.1', port, rejectUnauthorized: false }, opened);
    conn.socket.once('error', reject);
  });
}

describe('slow clients do not starve real requests', { timeout: LONG ? 600_000 : 120_000 }, () => {
  it(`${REAL_REQUESTS} AdmissionReviews are all answered while ${3 * SLOW_PER_KIND} slow connections are held${LONG ? '; then the server cuts every slow one' : ''}`, async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'tjw-slow-'));
    after(() => rm(dir, { recursive: true, force: true }));
    const serve = await startServeProcess(['--crd', UPSTREAM_CRD], dir);
    after(() => serve.child.kill('SIGKILL'));

    const slow: SlowConnection[] = [];
    after(() => slow.forEach((c) => c.stop()));
    for (const kind of ['no-handshake', 'slow-headers', 'slow-body'] as const) {
      slow.push(...(await Promise.all(Array.from({ length: SLOW_PER_KIND }, () => slowConnection(serve.port, kind)))));
    }

    // Four keep-alive pools as the API server keeps them, and one that opens a connection per request.
    const pools = [
      ...Array.from({ length: 4 }, () => admissionClient({ port: serve.port })),
      admissionClient({ port: serve.port, keepAlive: false }),
    ];
    after(() => pools.forEach((p) => p.close()));
    const results = await Promise.all(
      Array.from({ length: REAL_REQUESTS }, (_, i) => pools[i % pools.length].send(`real-${i}`)),
    );
    const failed = results
      .map((r, i) => ({ r, uid: `real-${i}` }))
      .filter(({ r, uid }) => !r.ok || r.status !== 200 || r.uid !== uid);
    assert.deepEqual(
      failed.slice(0, 5),
      [],
      `${failed.length} of ${REAL_REQUESTS} real requests not answered with their uid`,
    );

    const cut = slow.filter((c) => c.closedByServer).map((c) => c.kind);
    assert.deepEqual(cut, [], 'every slow connection was still held while the real requests were answered');

    if (!LONG) return;
    // The server's own timeouts end each kind: the TLS handshake timeout, then headersTimeout and
    // requestTimeout (checked every connectionsCheckingInterval). Nothing is held for ever.
    const deadline = Date.now() + 300_000;
    while (slow.some((c) => !c.closedByServer) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 1_000));
    const held = slow.filter((c) => !c.closedByServer);
    assert.deepEqual(
      Object.entries(Object.groupBy(held, (c) => c.kind)).map(([k, v]) => `${k}: ${v?.length}`),
      [],
      'slow connections still held after 5 minutes',
    );
  });
});
