// Graceful shutdown of an HTTPS server's keep-alive connections. Node's server.close() destroys
// every idle keep-alive socket at once; a client (the API server) that is writing a request on
// one at that moment gets ECONNRESET, and its webhook call fails. Here, once draining starts, an
// idle connection stays open for a grace period: a request arriving on it is answered (with
// `Connection: close`, so the connection ends after the response), and one still idle after the
// grace period is closed cleanly (TLS close_notify and FIN), which a client's connection pool
// notices before it reuses the connection.
import type { Server } from 'node:https';
import type { Socket } from 'node:net';

export interface DrainTiming {
  /** How long an idle connection stays open once draining starts. */
  idleGraceMs: number;
  /** After closing our side, how long the client has to close its side before the socket is destroyed. */
  lingerMs: number;
}

export const DEFAULT_DRAIN_TIMING: DrainTiming = { idleGraceMs: 1_000, lingerMs: 1_000 };

interface Connection {
  /** Requests received and not yet answered. */
  active: number;
  timer?: NodeJS.Timeout;
}

export interface ConnectionDrain {
  readonly draining: boolean;
  /** Starts draining; call before server.close(), which then only stops accepting. */
  start(): void;
}

export function trackConnections(server: Server, timing: DrainTiming = DEFAULT_DRAIN_TIMING): ConnectionDrain {
  const connections = new Map<Socket, Connection>();
  let draining = false;

  const closeWhenIdle = (socket: Socket, conn: Connection): void => {
    clearTimeout(conn.timer);
    conn.timer = setTimeout(() => {
      if (conn.active > 0) return;
      socket.end();
      setTimeout(() => socket.destroy(), timing.lingerMs).unref();
    }, timing.idleGraceMs);
  };

  server.on('secureConnection', (socket: Socket) => {
    const conn: Connection = { active: 0 };
    connections.set(socket, conn);
    socket.once('close', () => {
      clearTimeout(conn.timer);
      connections.delete(socket);
    });
    if (draining) closeWhenIdle(socket, conn);
  });

  server.on('request', (req, res) => {
    const conn = connections.get(req.socket);
    if (conn === undefined) return;
    conn.active++;
    clearTimeout(conn.timer);
    res.once('close', () => {
      conn.active--;
      if (draining && conn.active === 0) closeWhenIdle(req.socket, conn);
    });
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
      for (const [socket, conn] of connections) if (conn.active === 0) closeWhenIdle(socket, conn);
    },
  };
}
