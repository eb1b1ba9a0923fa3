// Loopback stand-ins for the cluster tests: a server on a free 127.0.0.1 port, an HTTP proxy that
// forwards absolute-form requests (as a proxy does for an http:// API server) and tunnels CONNECTs,
// a SOCKS5 proxy, an HTTPS API server with its own CA, and a one-context kubeconfig.
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import { connect, createServer as createNetServer, type Server as NetServer, type Socket } from 'node:net';
import { createCA, issueServingCert, type CertificateAuthority, type ServingCertOptions } from '../../harness/pki.ts';

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
    const upstream = request(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname + target.search,
        method: req.method,
        headers: req.headers,
      },
      (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
      },
    );
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

/**
 * Makes `server` a CONNECT proxy too (RFC 9110 §9.3.6): an authority-form target ("host:port", an
 * IPv6 literal in brackets) is tunnelled to; anything else is answered 400, as a real proxy does.
 * `seen` is told of each CONNECT.
 */
export function acceptConnect<S extends Server>(server: S, seen: (req: IncomingMessage) => void = () => {}): S {
  server.on('connect', (req: IncomingMessage, client: Socket, head: Buffer) => {
    seen(req);
    let target: URL;
    try {
      target = new URL(`http://${req.url}`);
    } catch {
      return void client.end('HTTP/1.1 400 Bad Request\r\n\r\n');
    }
    tunnel(client, head, target.hostname.replace(/^\[|\]$/g, ''), Number(target.port || 80));
  });
  return server;
}

/** What a SOCKS5 stand-in tells and asks of its test. */
export interface Socks5Options {
  /** Each client's first byte: 5 for SOCKS5 (a TLS ClientHello begins with 22). */
  hello?: (byte: number) => void;
  /**
   * Each CONNECT's address as sent: an IPv4 address, or a domain name (address type 3) left to the
   * proxy to resolve.
   */
  asked?: (address: string) => void;
  /** The proxy's own "DNS": the host it dials for an address. */
  resolve?: (address: string) => string;
}

/**
 * A SOCKS5 proxy without authentication (RFC 1928: CONNECT to an IPv4 address or a domain name); a
 * client that does not speak SOCKS5 is dropped.
 */
export function socks5Proxy({
  hello = () => {},
  asked = () => {},
  resolve = (address) => address,
}: Socks5Options = {}): NetServer {
  return createNetServer((client: Socket) => {
    client.on('error', () => {});
    client.once('data', (greeting: Buffer) => {
      hello(greeting[0]);
      if (greeting[0] !== 5) return void client.destroy();
      client.write(Buffer.from([5, 0]));
      client.once('data', (req: Buffer) => {
        const type = req[3];
        const address =
          type === 1
            ? [...req.subarray(4, 8)].join('.')
            : type === 3
              ? req.subarray(5, 5 + req[4]).toString()
              : `address type ${type}`;
        asked(address);
        const upstream = connect(req.readUInt16BE(req.length - 2), resolve(address), () => {
          client.write(Buffer.from([5, 0, 0, 1, 0, 0, 0, 0, 0, 0]));
          client.pipe(upstream).pipe(client);
        });
        upstream.on('error', () => client.destroy());
        client.on('error', () => upstream.destroy());
      });
    });
  });
}

/**
 * An HTTPS stand-in for the API server on 127.0.0.1, its certificate (for `names`) signed by a new
 * CA, answering `{}`.
 */
export async function tlsApiServer(
  names?: ServingCertOptions,
): Promise<{ ca: CertificateAuthority; server: HttpsServer; url: string }> {
  const ca = await createCA();
  const serving = await issueServingCert(ca, 'apiserver', names);
  const server = createHttpsServer({ cert: serving.certPem, key: serving.keyPem }, (_req, res) =>
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}'),
  );
  return { ca, server, url: `https://127.0.0.1:${await listen(server)}` };
}

/**
 * A kubeconfig (YAML) whose current context `c` joins cluster `k` (`cluster`: the inside of its
 * flow mapping) and user `u` (`user`: likewise).
 */
export const kubeconfig = (cluster: string, user = 'token: t'): string =>
  `clusters: [{name: k, cluster: {${cluster}}}]\ncontexts: [{name: c, context: {cluster: k, user: u}}]\ncurrent-context: c\nusers: [{name: u, user: {${user}}}]\n`;
