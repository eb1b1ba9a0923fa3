// Graceful shutdown of an HTTPS server's keep-alive connections. Node's server.close() destroys
// every idle keep-alive socket at once; a client (the API server) that is writing a request on
// one at that moment gets ECONNRESET, and its webhook call fails. Here, once draining starts, an
// idle connection stays open for a grace period: a request arriving on it is answered (with
// `Connection: close`, so the connection ends after the response), and one still idle after the
// grace period is closed cleanly (TLS close_notify and FIN), which a client's connection pool
// notices before it reuses the connection.
// What is not yet a request is not waited for: a connection still in its TLS handshake, or a
// request whose body is still arriving, `incompleteGraceMs` into the drain, is cut. The API
// server handshakes and sends a review at once; only a slow or stuck client is still at it, and
// Node's own timeouts for those (120 s handshake, 32 s request) would hold close() past the
// process's shutdown timeout.
import type { ServerResponse } from 'node:http';
import type { Server } from 'node:https';
import type { Socket } from 'node:net';

export interface DrainTiming {
  /** How long an idle connection stays open once draining starts. */
  idleGraceMs: number;
  /** After closing our side, how long the client has to close its side before the socket is destroyed. */
  lingerMs: number;
  /** How long into the drain a handshake or a request body may still be arriving (default 5 s). */
  incompleteGraceMs?: number;
}

export const DEFAULT_DRAIN_TIMING: DrainTiming = { idleGraceMs: 1_000, lingerMs: 1_000, incompleteGraceMs: 5_000 };

interface Connection {
  socket: Socket;
  /** Requests received and not yet answered. */
  active: number;
  /** Their responses, to mark them `Connection: close` and to tell a request still receiving its body. */
  responses: Set<ServerResponse>;
  timer?: NodeJS.Timeout;
}

/** The connection a response belongs to, read by one shared 'close' listener (no closure per request). */
const connectionOf = Symbol('connection');
type TrackedResponse = ServerResponse & { [connectionOf]?: Connection };

/** A TCP connection and its TLS socket name the same peer address and port. */
const peer = (socket: Socket) => `${socket.remoteAddress}|${socket.remotePort}`;

export interface ConnectionDrain {
  /** True once draining: every answer from then on, and every one still in flight, closes its connection. */
  readonly draining: boolean;
  /** Starts draining; call before server.close(), which then only stops accepting. */
  start(): void;
}

export function trackConnections(server: Server, timing: DrainTiming = DEFAULT_DRAIN_TIMING): ConnectionDrain {
  const connections = new Map<Socket, Connection>();
  /** TCP connections whose TLS handshake has not completed, by peer. */
  const handshaking = new Map<string, Socket>();
  let draining = false;

  const cutIncomplete = (): void => {
    for (const raw of handshaking.values()) raw.destroy();
    for (const [socket, conn] of connections)
      if ([...conn.responses].some((res) => !res.req.complete)) socket.destroy();
  };

  server.on('connection', (raw: Socket) => {
    const key = peer(raw);
    handshaking.set(key, raw);
    raw.once('close', () => {
      if (handshaking.get(key) === raw) handshaking.delete(key);
    });
  });

  const closeWhenIdle = (socket: Socket, conn: Connection): void => {
    clearTimeout(conn.timer);
    conn.timer = setTimeout(() => {
      if (conn.active > 0) return;
      socket.end();
      setTimeout(() => socket.destroy(), timing.lingerMs).unref();
    }, timing.idleGraceMs);
  };

  server.on('secureConnection', (socket: Socket) => {
    handshaking.delete(peer(socket));
    const conn: Connection = { socket, active: 0, responses: new Set() };
    connections.set(socket, conn);
    socket.once('close', () => {
      clearTimeout(conn.timer);
      connections.delete(socket);
    });
    if (draining) closeWhenIdle(socket, conn);
  });

  function responseClosed(this: TrackedResponse): void {
    const conn = this[connectionOf];
    if (conn === undefined) return;
    this[connectionOf] = undefined;
    conn.active--;
    conn.responses.delete(this);
    if (draining && conn.active === 0) closeWhenIdle(conn.socket, conn);
  }

  server.on('request', (req, res: TrackedResponse) => {
    const conn = connections.get(req.socket);
    if (conn === undefined) return;
    conn.active++;
    conn.responses.add(res);
    clearTimeout(conn.timer);
    if (draining && !res.headersSent) res.setHeader('connection', 'close');
    res[connectionOf] = conn;
    res.once('close', responseClosed);
  });

  return {
    get draining() {
      return draining;
    },
    start() {
      if (draining) return;
      draining = true;
      // server.close() would destroy the idle sockets now: they are closed above instead.
      server.closeIdleConnections = () => {};
      for (const [socket, conn] of connections) {
        if (conn.active === 0) closeWhenIdle(socket, conn);
        // Answers already in flight close their connection too (Node then ends it after the response).
        for (const res of conn.responses) if (!res.headersSent) res.setHeader('connection', 'close');
      }
      setTimeout(cutIncomplete, timing.incompleteGraceMs ?? DEFAULT_DRAIN_TIMING.incompleteGraceMs).unref();
    },
  };
}
