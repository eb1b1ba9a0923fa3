// Loopback stand-ins for the cluster tests: a server on a free 127.0.0.1 port, and an HTTP proxy
// that forwards absolute-form requests (as a proxy does for an http:// API server).
import { createServer, request, type Server } from 'node:http';
import type { Server as NetServer } from 'node:net';

/** Listens on a free loopback port; resolves to the port. */
export async function listen(server: Server | NetServer): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as { port: number }).port;
}

/** An HTTP proxy forwarding each absolute-form request to its target; `seen` is told of each. */
export function forwardingProxy(seen: (req: import('node:http').IncomingMessage) => void = () => {}): Server {
  return createServer((req, res) => {
    seen(req);
    const target = new URL(req.url ?? '/');
    const upstream = request({ host: target.hostname, port: target.port, path: target.pathname + target.search, method: req.method, headers: req.headers }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
}
