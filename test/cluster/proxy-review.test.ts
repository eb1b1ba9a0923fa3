// Review (s14) of proxy-url on the direct path (src/cluster/proxy-agents.ts): an https:// API server
// at an IPv6 address (server: https://[fd00::1]:6443) behind an HTTP proxy. hpagent 1.2.0 writes the
// CONNECT target as `${options.host}:${options.port}`, and Node hands it the host without brackets,
// so the proxy is asked for "::1:PORT", which is not an authority (RFC 9110 §3.2.3 / RFC 3986
// §3.2.2: an IPv6 literal is bracketed); a proxy answers 400 and every call fails. Go's net/http
// sends req.URL.Host ("[::1]:PORT"), and so did the client-node path this replaced (at 4996f8e the
// same server and proxy through client-node 2.0.1 (undici ProxyAgent) sent CONNECT "[::1]:PORT", checked by hand).
import assert from 'node:assert/strict';
import { createServer as createHttpServer, type IncomingMessage, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { apiClient } from '../../src/cluster/api-request.ts';
import { directConnection } from '../../src/cluster/connection.ts';
import { createCA, issueServingCert, type CertificateAuthority } from '../harness/pki.ts';
import { listen, tunnel } from './support/loopback.ts';

describe('review: an IPv6 API server behind an HTTP proxy', () => {
  let ca: CertificateAuthority;
  let api: Server;
  let proxy: Server;
  let apiPort = 0;
  let proxyUrl = '';
  let ipv6 = true;
  const targets: string[] = [];

  before(async () => {
    ca = await createCA();
    const serving = await issueServingCert(ca, 'apiserver', { dnsNames: ['localhost'], ips: ['::1'] });
    api = createHttpsServer({ cert: serving.certPem, key: serving.keyPem }, (_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
    try {
      await new Promise<void>((resolve, reject) => api.once('error', reject).listen(0, '::1', resolve));
      apiPort = (api.address() as { port: number }).port;
    } catch {
      ipv6 = false;
    }
    // A CONNECT proxy that, like a real one, takes only an authority-form target.
    proxy = createHttpServer();
    proxy.on('connect', (req: IncomingMessage, client: Socket, head: Buffer) => {
      targets.push(req.url ?? '');
      let target: URL;
      try {
        target = new URL(`http://${req.url}`);
      } catch {
        return void client.end('HTTP/1.1 400 Bad Request\r\n\r\n');
      }
      tunnel(client, head, target.hostname.replace(/^\[|\]$/g, ''), Number(target.port));
    });
    proxyUrl = `http://127.0.0.1:${await listen(proxy)}`;
  });
  after(() => {
    for (const s of [api, proxy]) {
      s.closeAllConnections();
      s.close();
    }
  });

  it('the CONNECT names the server as [::1]:PORT and the call goes through', async (t) => {
    if (!ipv6) return t.skip('no IPv6 loopback here');
    const client = apiClient(directConnection({ server: `https://[::1]:${apiPort}`, proxyUrl, ca: { data: Buffer.from(ca.certPem) }, insecureSkipTlsVerify: false }));
    const res = await client.request('/version', { signal: AbortSignal.timeout(10_000), maxBytes: 1024 }).catch((err: Error) => err);
    assert.deepEqual(targets, [`[::1]:${apiPort}`]);
    assert.equal((res as { status?: number }).status, 200);
  });
});
