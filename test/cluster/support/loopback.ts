// Loopback stand-ins for the cluster tests: a server on a free 127.0.0.1 port, and an HTTP proxy
// that forwards absolute-form requests (as a proxy does for an http:// API server).
import { createServer, request, type Server } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import { connect, type Server as NetServer, type Socket } from 'node:net';
import { createCA, issueServingCert, type CertificateAuthority } from '../../harness/pki.ts';

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

/** Answers a proxy's CONNECT: opens `host:port`, says so, and pipes both ways. */
export function tunnel(client: Socket, head: Buffer, host: string, port: number): void {
  const upstream = connect(port, host, () => {
    client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    upstream.write(head);
    client.pipe(upstream).pipe(client);
  });
  upstream.on('error', () => client.destroy());
  client.on('error', () => upstream.destroy());
}

/** An HTTPS stand-in for the API server, its certificate signed by a new CA, answering `{}`. */
export async function tlsApiServer(): Promise<{ ca: CertificateAuthority; server: HttpsServer; url: string }> {
  const ca = await createCA();
  const serving = await issueServingCert(ca, 'apiserver');
  const server = createHttpsServer({ cert: serving.certPem, key: serving.keyPem }, (_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
  return { ca, server, url: `https://127.0.0.1:${await listen(server)}` };
}
