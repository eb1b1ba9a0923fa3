// proxy-url on the direct path (src/cluster/api-request.ts, proxy-agents.ts): an https:// API
// server through an HTTP proxy's CONNECT tunnel (hpagent) and through a SOCKS5 proxy
// (socks-proxy-agent), an http:// one through an HTTP proxy in absolute form with the proxy's
// credentials; the server's CA still checked, the token sent, the byte cap held, a watch streamed.
import assert from 'node:assert/strict';
import { createServer as createHttpServer, type IncomingMessage, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { connect, createServer as createNetServer, type Server as NetServer, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { apiClient } from '../../src/cluster/api-request.ts';
import { watchOnce, type WatchEvent } from '../../src/cluster/api-watch.ts';
import { directConnection } from '../../src/cluster/connection.ts';
import { jobSetReader } from '../../src/webhook/jobset-read.ts';
import type { KubeAccess } from '../../src/cluster/kube-access.ts';
import { createCA, issueServingCert, type CertificateAuthority } from '../harness/pki.ts';
import { forwardingProxy, listen, tunnel } from './support/loopback.ts';

const CAP = 16 * 1024;
const job = (i: number) => ({ metadata: { name: `node-${i}`, annotations: { note: 'x'.repeat(1024) } }, status: { active: 1 } });
const BIG = JSON.stringify({ kind: 'JobList', items: Array.from({ length: 64 }, (_, i) => job(i)) });
const SMALL = JSON.stringify({ kind: 'JobList', items: [job(0)] });


/** The API server: a big list for the JobSet `big`, a small one otherwise; a watch sends one event and ends. */
function answer(seen: string[]) {
  return (req: IncomingMessage, res: import('node:http').ServerResponse) => {
    seen.push(req.headers.authorization ?? '');
    if (req.url?.includes('watch=true')) return void res.writeHead(200).end(`${JSON.stringify({ type: 'ADDED', object: { n: 1 } })}\n`);
    res.writeHead(200, { 'content-type': 'application/json' }).end(req.url?.includes('%3Dbig') ? BIG : SMALL);
  };
}

/** A SOCKS5 proxy without authentication (RFC 1928: CONNECT to an IPv4 address or a domain name). */
function socks5(count: () => void): NetServer {
  return createNetServer((client: Socket) => {
    client.once('data', () => {
      client.write(Buffer.from([5, 0]));
      client.once('data', (req: Buffer) => {
        const type = req[3];
        const host = type === 1 ? [...req.subarray(4, 8)].join('.') : req.subarray(5, 5 + req[4]).toString();
        const port = req.readUInt16BE(req.length - 2);
        count();
        const upstream = connect(port, host, () => {
          client.write(Buffer.from([5, 0, 0, 1, 0, 0, 0, 0, 0, 0]));
          client.pipe(upstream).pipe(client);
        });
        upstream.on('error', () => client.destroy());
        client.on('error', () => upstream.destroy());
      });
    });
  });
}

describe('proxy-url on the direct path', () => {
  let ca: CertificateAuthority;
  let api: Server;
  let plainApi: Server;
  let httpProxy: Server;
  let socks: NetServer;
  let apiUrl = '';
  let plainApiUrl = '';
  let httpProxyUrl = '';
  let socksUrl = '';
  const seen: string[] = [];
  const proxied = { connect: 0, forward: 0, socks: 0, proxyAuth: [] as string[] };

  before(async () => {
    ca = await createCA();
    const serving = await issueServingCert(ca, 'apiserver');
    api = createHttpsServer({ cert: serving.certPem, key: serving.keyPem }, answer(seen));
    apiUrl = `https://127.0.0.1:${await listen(api)}`;
    plainApi = createHttpServer(answer(seen));
    plainApiUrl = `http://127.0.0.1:${await listen(plainApi)}`;
    // An HTTP proxy: CONNECT tunnels, and absolute-form requests forwarded.
    httpProxy = forwardingProxy((req) => {
      proxied.forward++;
      proxied.proxyAuth.push(req.headers['proxy-authorization'] ?? '');
    });
    httpProxy.on('connect', (req: IncomingMessage, client: Socket, head: Buffer) => {
      proxied.connect++;
      const [host, port] = (req.url ?? '').split(':');
      tunnel(client, head, host, Number(port));
    });
    httpProxyUrl = `http://127.0.0.1:${await listen(httpProxy)}`;
    socks = socks5(() => proxied.socks++);
    socksUrl = `socks5://127.0.0.1:${await listen(socks)}`;
  });
  after(() => {
    for (const s of [api, plainApi, httpProxy]) {
      s.closeAllConnections();
      s.close();
    }
    socks.close();
  });

  const access = (server: string, proxyUrl: string): KubeAccess => ({ server, proxyUrl, ca: { data: Buffer.from(ca.certPem) }, token: 'through-proxy', insecureSkipTlsVerify: false });

  for (const [name, via, counter] of [
    ['an HTTP proxy (CONNECT)', () => httpProxyUrl, 'connect'],
    ['a SOCKS5 proxy', () => socksUrl, 'socks'],
  ] as const) {
    it(`an https:// server through ${name}: CA checked, token sent, the byte cap held, a watch streamed`, async () => {
      const before = proxied[counter];
      const client = apiClient(directConnection(access(apiUrl, via())));
      const read = jobSetReader(client, { maxBytes: CAP });
      assert.deepEqual(await read('ns', 'small'), { kind: 'read', jobs: [{ metadata: { name: 'node-0' }, status: { active: 1, terminating: undefined } }] });
      assert.equal(seen.at(-1), 'Bearer through-proxy');
      const big = await read('ns', 'big');
      assert.equal(big.kind, 'failed', 'over the cap');
      const events: WatchEvent[] = [];
      const reason = await watchOnce(client, '/apis/x/v1/things', {}, { onEvent: (e) => events.push(e), onMalformed: () => {} }, { signal: new AbortController().signal });
      assert.deepEqual([reason, events], [undefined, [{ type: 'ADDED', object: { n: 1 } }]]);
      assert.ok(proxied[counter] > before, 'through the proxy');
      const other = await createCA('other');
      const refused = await jobSetReader(apiClient(directConnection({ ...access(apiUrl, via()), ca: { data: Buffer.from(other.certPem) } })))('ns', 'small');
      assert.equal(refused.kind, 'failed', 'a server the CA did not sign, through the proxy too');
    });
  }

  it("an http:// server through an HTTP proxy: absolute form, with the proxy URL's credentials", async () => {
    const before = proxied.forward;
    const withUser = httpProxyUrl.replace('http://', 'http://user:p%40ss@');
    const read = jobSetReader(apiClient(directConnection(access(plainApiUrl, withUser))), { maxBytes: CAP });
    assert.equal((await read('ns', 'small')).kind, 'read');
    assert.equal((await read('ns', 'big')).kind, 'failed', 'over the cap');
    assert.ok(proxied.forward > before);
    assert.equal(proxied.proxyAuth.at(-1), `Basic ${Buffer.from('user:p@ss').toString('base64')}`);
  });
});
