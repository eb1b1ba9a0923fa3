// proxy-url on the direct path (src/cluster/api-request.ts, proxy-agents.ts, proxy-credentials.ts),
// taken as client-go takes it (Go's url.Parse, then net/http's proxy dialers): an https:// API
// server through an HTTP proxy's CONNECT tunnel and through a SOCKS5 proxy, an http:// one through
// an HTTP proxy in absolute form with the proxy's credentials; the server's CA still checked, the
// token sent, the byte cap held, a watch streamed. Then the CONNECT tunnel itself (its target, the
// pool bound, keep-alive, SNI toward an https:// proxy, a proxy that never answers), SOCKS names
// left to the proxy to resolve, and the credentials in the proxy URL (decoded to bytes, a bad
// escape refused at load).
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import https, { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { Server as NetServer, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { apiClient, MAX_API_SOCKETS, type ApiClient } from '../../src/cluster/api-request.ts';
import { watchOnce, type WatchEvent } from '../../src/cluster/api-watch.ts';
import { connectCluster } from '../../src/cluster/connect.ts';
import { directConnection } from '../../src/cluster/connection.ts';
import type { KubeAccess } from '../../src/cluster/kube-access.ts';
import { proxyAgent } from '../../src/cluster/proxy-agents.ts';
import {
  percentDecodedBytes,
  proxyAuthorization,
  proxyCredentialsProblem,
} from '../../src/cluster/proxy-credentials.ts';
import { jobSetReader } from '../../src/scale/reads/jobset-read.ts';
import { createCA, issueServingCert, type CertificateAuthority } from '../harness/pki.ts';
import { acceptConnect, forwardingProxy, kubeconfig, listen, socks5Proxy, tlsApiServer } from './support/loopback.ts';

const CAP = 16 * 1024;
const job = (i: number) => ({
  metadata: { name: `node-${i}`, annotations: { note: 'x'.repeat(1024) } },
  status: { active: 1 },
});
const BIG = JSON.stringify({ kind: 'JobList', items: Array.from({ length: 64 }, (_, i) => job(i)) });
const SMALL = JSON.stringify({ kind: 'JobList', items: [job(0)] });

/** A GET of /version with the limits every call here uses. */
const version = (client: ApiClient) =>
  client.request('/version', { signal: AbortSignal.timeout(10_000), maxBytes: 1024 });

/** The API server: a big list for the JobSet `big`, a small one otherwise; a watch sends one event and ends. */
function answer(seen: string[]) {
  return (req: IncomingMessage, res: ServerResponse) => {
    seen.push(req.headers.authorization ?? '');
    if (req.url?.includes('watch=true'))
      return void res.writeHead(200).end(`${JSON.stringify({ type: 'ADDED', object: { n: 1 } })}\n`);
    res.writeHead(200, { 'content-type': 'application/json' }).end(req.url?.includes('%3Dbig') ? BIG : SMALL);
  };
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
    httpProxy = acceptConnect(
      forwardingProxy((req) => {
        proxied.forward++;
        proxied.proxyAuth.push(req.headers['proxy-authorization'] ?? '');
      }),
      () => proxied.connect++,
    );
    httpProxyUrl = `http://127.0.0.1:${await listen(httpProxy)}`;
    socks = socks5Proxy({ asked: () => proxied.socks++ });
    socksUrl = `socks5://127.0.0.1:${await listen(socks)}`;
  });
  after(() => {
    for (const s of [api, plainApi, httpProxy]) {
      s.closeAllConnections();
      s.close();
    }
    socks.close();
  });

  const access = (server: string, proxyUrl: string): KubeAccess => ({
    server,
    proxyUrl,
    ca: { data: Buffer.from(ca.certPem) },
    token: 'through-proxy',
    insecureSkipTlsVerify: false,
  });

  for (const [name, via, counter] of [
    ['an HTTP proxy (CONNECT)', () => httpProxyUrl, 'connect'],
    ['a SOCKS5 proxy', () => socksUrl, 'socks'],
  ] as const) {
    it(`an https:// server through ${name}: CA checked, token sent, the byte cap held, a watch streamed`, async () => {
      const before = proxied[counter];
      const client = apiClient(directConnection(access(apiUrl, via())));
      const read = jobSetReader(client, { maxBytes: CAP });
      assert.deepEqual(await read('ns', 'small'), {
        kind: 'read',
        jobs: [{ metadata: { name: 'node-0' }, status: { active: 1, terminating: undefined } }],
      });
      assert.equal(seen.at(-1), 'Bearer through-proxy');
      const big = await read('ns', 'big');
      assert.equal(big.kind, 'failed', 'over the cap');
      const events: WatchEvent[] = [];
      const reason = await watchOnce(
        client,
        '/apis/x/v1/things',
        {},
        { onEvent: (e) => events.push(e), onMalformed: () => {} },
        { signal: new AbortController().signal },
      );
      assert.deepEqual([reason, events], [undefined, [{ type: 'ADDED', object: { n: 1 } }]]);
      assert.ok(proxied[counter] > before, 'through the proxy');
      const other = await createCA('other');
      const refused = await jobSetReader(
        apiClient(directConnection({ ...access(apiUrl, via()), ca: { data: Buffer.from(other.certPem) } })),
      )('ns', 'small');
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

describe('CONNECT tunnel', () => {
  // The pool bound holds through a proxy: api-request.ts keeps at most MAX_API_SOCKETS connections,
  // the requests in flight beyond it queued. Node's http.Agent counts a socket only once
  // createConnection has handed it over, and a tunnel is handed over only after the proxy's 200
  // (socks-proxy-agent, through agent-base 7's incrementSockets, counts a pending socket; hpagent
  // 1.2.0 does not), so the agent's maxSockets alone would let every request arriving meanwhile open
  // one more tunnel and one more TLS session to the API server: the requests in flight are bounded
  // by api-request.ts itself (slots.ts), whatever the agent. Reads one after another keep one
  // tunnel alive.
  describe('the pool bound and keep-alive', () => {
    let ca: CertificateAuthority;
    let api: HttpsServer;
    let proxy: Server;
    let apiUrl = '';
    let proxyUrl = '';
    let tlsSessions = 0;
    let connects = 0;

    before(async () => {
      ({ ca, server: api, url: apiUrl } = await tlsApiServer());
      api.on('secureConnection', () => tlsSessions++);
      proxy = acceptConnect(createHttpServer(), () => connects++);
      proxyUrl = `http://127.0.0.1:${await listen(proxy)}`;
    });
    after(() => {
      for (const s of [api, proxy]) {
        s.closeAllConnections();
        s.close();
      }
    });

    const proxiedClient = () =>
      apiClient(
        directConnection({
          server: apiUrl,
          proxyUrl,
          ca: { data: Buffer.from(ca.certPem) },
          insecureSkipTlsVerify: false,
        }),
      );

    it(`12 concurrent reads through an HTTP proxy open at most ${MAX_API_SOCKETS} tunnels (as direct and through SOCKS)`, async () => {
      const client = proxiedClient();
      connects = 0;
      tlsSessions = 0;
      const answers = await Promise.all(Array.from({ length: 12 }, () => version(client)));
      assert.deepEqual(new Set(answers.map((a) => a.status)), new Set([200]));
      assert.ok(connects <= MAX_API_SOCKETS, `${connects} CONNECT tunnels opened`);
      assert.ok(tlsSessions <= MAX_API_SOCKETS, `${tlsSessions} TLS sessions to the API server`);
    });

    it('reads one after another reuse one tunnel (keep-alive through the proxy holds)', async () => {
      const client = proxiedClient();
      connects = 0;
      for (let i = 0; i < 5; i++) assert.equal((await version(client)).status, 200);
      assert.equal(connects, 1);
    });
  });

  // The CONNECT target is an authority (RFC 9110 §3.2.3, RFC 3986 §3.2.2: an IPv6 literal is
  // bracketed), as Go's net/http sends req.URL.Host ("[::1]:PORT") and client-node 2.0.1's undici
  // ProxyAgent sends it too. hpagent 1.2.0 writes `${host}:${port}` with the host Node hands over
  // unbracketed ("::1:PORT"), which a proxy answers 400, failing every call to such a server
  // (server: https://[fd00::1]:6443 behind an HTTP proxy).
  describe('an IPv6 API server behind an HTTP proxy', () => {
    let ca: CertificateAuthority;
    let api: HttpsServer;
    let proxy: Server;
    let apiPort = 0;
    let proxyUrl = '';
    let ipv6 = true;
    const targets: string[] = [];

    before(async () => {
      ca = await createCA();
      const serving = await issueServingCert(ca, 'apiserver', { dnsNames: ['localhost'], ips: ['::1'] });
      api = createHttpsServer({ cert: serving.certPem, key: serving.keyPem }, (_req, res) =>
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}'),
      );
      try {
        await new Promise<void>((resolve, reject) => api.once('error', reject).listen(0, '::1', resolve));
        apiPort = (api.address() as { port: number }).port;
      } catch {
        ipv6 = false;
      }
      // Like a real proxy, it takes only an authority-form target.
      proxy = acceptConnect(createHttpServer(), (req) => targets.push(req.url ?? ''));
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
      const client = apiClient(
        directConnection({
          server: `https://[::1]:${apiPort}`,
          proxyUrl,
          ca: { data: Buffer.from(ca.certPem) },
          insecureSkipTlsVerify: false,
        }),
      );
      const res = await version(client).catch((err: Error) => err);
      assert.deepEqual(targets, [`[::1]:${apiPort}`]);
      assert.equal((res as { status?: number }).status, 200);
    });
  });

  // TLS to an https:// proxy names the proxy in SNI only for a host name: an IP is no TLS server
  // name (RFC 6066), Node prints DEP0123 ("Setting the TLS ServerName to an IP address is not
  // permitted by RFC 6066") to serve's stderr for one, and Go sends no SNI for an IP. So the check
  // is isIP (IPv4 and IPv6), not isIPv6. The proxy is verified with Node's roots
  // (NODE_EXTRA_CA_CERTS), as hpagent does; Go would use the kubeconfig's TLS config for it.
  describe('an https:// proxy named by an IPv4 address', () => {
    let proxy: HttpsServer;
    let proxyPort = 0;
    before(async () => {
      const proxyCa = await createCA('proxy-ca');
      const serving = await issueServingCert(proxyCa, 'proxy');
      proxy = createHttpsServer({ cert: serving.certPem, key: serving.keyPem });
      proxy.on('connect', (_req: IncomingMessage, client: Socket) => client.end('HTTP/1.1 403 Forbidden\r\n\r\n'));
      proxyPort = await listen(proxy);
    });
    after(() => {
      proxy.closeAllConnections();
      proxy.close();
    });

    it('the CONNECT over TLS sends no IP as servername: no DEP0123 warning on stderr', async () => {
      const warnings: string[] = [];
      const onWarning = (w: Error & { code?: string }) => warnings.push(`${w.code}: ${w.message}`);
      process.on('warning', onWarning);
      try {
        const client = apiClient(
          directConnection({
            server: 'https://127.0.0.1:6443',
            proxyUrl: `https://127.0.0.1:${proxyPort}`,
            insecureSkipTlsVerify: true,
          }),
        );
        // The proxy's certificate is not in Node's roots: the call fails; the warning comes first.
        await assert.rejects(version(client));
        await new Promise((resolve) => setImmediate(resolve));
        assert.deepEqual(
          warnings.filter((w) => w.startsWith('DEP0123')),
          [],
        );
      } finally {
        process.off('warning', onWarning);
      }
    });
  });

  // A proxy that takes the CONNECT and never answers: the tunnel fails after the CONNECT timeout
  // instead of holding the request (a watch's agent has no idle timeout of its own).
  describe('timeouts: a CONNECT the proxy never answers', () => {
    let proxy: Server;
    let port = 0;
    const held: Socket[] = [];
    before(async () => {
      proxy = createHttpServer();
      proxy.on('connect', (_req: IncomingMessage, client: Socket) => void held.push(client));
      port = await listen(proxy);
    });
    after(() => {
      for (const s of held) s.destroy();
      proxy.close();
    });

    it('fails the request with a message naming the proxy', { timeout: 10_000 }, async () => {
      const agent = proxyAgent(new URL(`http://127.0.0.1:${port}`), { keepAlive: false }, 200);
      const failure = await new Promise<Error>((resolve) => {
        const req = https.request('https://api.example:6443/version', { agent }, () => resolve(new Error('answered')));
        req.on('error', resolve);
        req.end();
      });
      assert.match(failure.message, /the proxy did not answer CONNECT in time/);
      assert.equal(held.length, 1);
    });
  });
});

// client-go hands proxy-url to Go's net/http, where "socks5 is treated the same as socks5h"
// (net/http Transport.Proxy): the API server's host name goes to the proxy (SOCKS5 address type 3)
// and the proxy resolves it. socks-proxy-agent resolves a socks5:// (and socks4://) target locally
// first, so it is given socks5h://. The common kubectl set-up, `proxy-url: socks5://localhost:1080`
// (an ssh -D tunnel) in front of a server name that only the far side's DNS knows, then works here
// as with kubectl instead of failing with ENOTFOUND before the proxy is asked. socks5h:// is the
// control case; socks4:// and socks4a:// have no client-go meaning (client-go refuses them).
describe('SOCKS: a socks5:// proxy-url and a server name only the proxy can resolve', () => {
  /** A name that resolves nowhere but at this proxy (RFC 6761: .invalid never resolves). */
  const FAR_NAME = 'api.cluster.invalid';
  let ca: CertificateAuthority;
  let api: HttpsServer;
  let socks: NetServer;
  let apiPort = 0;
  let socksPort = 0;
  const asked: string[] = [];

  before(async () => {
    let url: string;
    ({ ca, server: api, url } = await tlsApiServer({ dnsNames: [FAR_NAME], ips: [] }));
    apiPort = Number(new URL(url).port);
    // The proxy's own "DNS" knows FAR_NAME as 127.0.0.1.
    socks = socks5Proxy({ asked: (a) => asked.push(a), resolve: (a) => (a === FAR_NAME ? '127.0.0.1' : a) });
    socksPort = await listen(socks);
  });
  after(() => {
    api.closeAllConnections();
    api.close();
    socks.close();
  });

  const call = (scheme: string) =>
    version(
      apiClient(
        directConnection({
          server: `https://${FAR_NAME}:${apiPort}`,
          proxyUrl: `${scheme}://127.0.0.1:${socksPort}`,
          ca: { data: Buffer.from(ca.certPem) },
          insecureSkipTlsVerify: false,
        }),
      ),
    );

  it('socks5://: the name goes to the proxy and the call succeeds, as with client-go ("socks5 is treated the same as socks5h")', async () => {
    asked.length = 0;
    assert.equal((await call('socks5')).status, 200);
    assert.deepEqual(asked, [FAR_NAME]);
  });

  it('socks5h://: the name goes to the proxy (the control case)', async () => {
    asked.length = 0;
    assert.equal((await call('socks5h')).status, 200);
    assert.deepEqual(asked, [FAR_NAME]);
  });
});

// The user and password in proxy-url as Go's url.Parse takes them: each %XX is a byte, UTF-8 or not
// ("http://user:p%E9ss@proxy:3128" parses, Password() = "p\xe9ss"), and only a bad escape ("%zz")
// is an error ("invalid URL escape"). net/http sends those bytes in Proxy-Authorization (basicAuth
// over the string's bytes), so a Latin-1 password works with kubectl and must here too. client-go
// refuses a bad escape at load (clientcmd validateClusterInfo: "invalid 'proxy-url' ..."): bad
// input is a clear error at start, not "URI malformed" on every call. A SOCKS proxy's credentials
// must be UTF-8, as socks-proxy-agent decodes them as text.
describe('credentials', () => {
  describe('percentDecodedBytes', () => {
    const cases: [string, number[] | undefined][] = [
      ['plain', [...Buffer.from('plain')]],
      ['p%C3%A9', [0x70, 0xc3, 0xa9]],
      ['p%E9ss', [0x70, 0xe9, 0x73, 0x73]],
      ['%ff', [0xff]],
      ['é', [0xc3, 0xa9]],
      ['%zz', undefined],
      ['50%', undefined],
      ['%4', undefined],
      ['', []],
    ];
    for (const [input, bytes] of cases)
      it(JSON.stringify(input), () =>
        assert.deepEqual(percentDecodedBytes(input) && [...percentDecodedBytes(input)!], bytes),
      );
  });

  describe('proxyCredentialsProblem and proxyAuthorization', () => {
    it('an HTTP proxy: any valid escape is fine, and its bytes are sent', () => {
      const proxy = new URL('http://us%65r:p%E9ss@proxy:3128');
      assert.equal(proxyCredentialsProblem(proxy), undefined);
      assert.equal(
        proxyAuthorization(proxy),
        `Basic ${Buffer.from([...Buffer.from('user:p'), 0xe9, ...Buffer.from('ss')]).toString('base64')}`,
      );
    });
    it('no credentials: no header', () => assert.equal(proxyAuthorization(new URL('http://proxy:3128')), undefined));
    it('a bad escape is refused', () =>
      assert.equal(
        proxyCredentialsProblem(new URL('http://user:p%zz@proxy:3128')),
        'proxy-url has an invalid URL escape in its credentials',
      ));
    it('a SOCKS proxy needs UTF-8 credentials (socks-proxy-agent decodes them as text)', () => {
      assert.equal(proxyCredentialsProblem(new URL('socks5://user:p%C3%A9@proxy:1080')), undefined);
      assert.equal(
        proxyCredentialsProblem(new URL('socks5://user:p%E9@proxy:1080')),
        'proxy-url: the credentials of a SOCKS proxy must be UTF-8',
      );
    });
  });

  describe('from a kubeconfig, at load and on the wire', () => {
    let dir = '';
    let proxy: Server;
    let proxyPort = 0;
    const seen: (string | undefined)[] = [];

    before(async () => {
      dir = await mkdtemp(path.join(tmpdir(), 'tjw-proxy-credentials-'));
      // Records Proxy-Authorization and refuses: the CONNECT (https:// server) and the absolute-form request (http:// server).
      proxy = createHttpServer((req, res) => {
        seen.push(req.headers['proxy-authorization']);
        res.writeHead(407).end();
      });
      proxy.on('connect', (req: IncomingMessage, client: Socket) => {
        seen.push(req.headers['proxy-authorization']);
        client.end('HTTP/1.1 407 Proxy Authentication Required\r\n\r\n');
      });
      proxyPort = await listen(proxy);
    });
    after(async () => {
      proxy.closeAllConnections();
      proxy.close();
      await rm(dir, { recursive: true, force: true });
    });

    for (const server of ['https://127.0.0.1:6443', 'http://127.0.0.1:8080']) {
      it(`a bad percent escape is refused at load in one line naming proxy-url (client-go: invalid URL escape), not "URI malformed" on every call (${server.split(':')[0]} server)`, async () => {
        const file = path.join(dir, `bad-escape-${server.split(':')[0]}.kubeconfig`);
        await writeFile(
          file,
          kubeconfig(
            `server: "${server}", proxy-url: "http://user:p%zz@127.0.0.1:3128", insecure-skip-tls-verify: true`,
          ),
        );
        await assert.rejects(connectCluster({ mode: 'kubeconfig', path: file }), {
          message: /^--kubeconfig \S+: .*proxy-url[^\n]*$/,
        });
      });
    }

    const cases: [string, string, Buffer][] = [
      ['a Latin-1 password', 'user:p%E9ss', Buffer.from('user:p\xe9ss', 'latin1')],
      ['a 0xFF byte', 'us%FFer:pw', Buffer.from('us\xffer:pw', 'latin1')],
    ];
    for (const [name, userinfo, raw] of cases) {
      for (const server of ['https://127.0.0.1:6443', 'http://127.0.0.1:8080']) {
        it(`${name} (${userinfo}) loads as client-go loads it and its bytes go in Proxy-Authorization (${server.split(':')[0]} server)`, async () => {
          const file = path.join(dir, `${server.split(':')[0]}-${userinfo.replace(/\W/g, '')}.kubeconfig`);
          const tls = server.startsWith('https') ? ', insecure-skip-tls-verify: true' : '';
          await writeFile(
            file,
            kubeconfig(`server: "${server}", proxy-url: "http://${userinfo}@127.0.0.1:${proxyPort}"${tls}`),
          );
          const cluster = await connectCluster({ mode: 'kubeconfig', path: file });
          seen.length = 0;
          await version(cluster!.client).catch(() => undefined);
          assert.deepEqual(seen, [`Basic ${raw.toString('base64')}`]);
        });
      }
    }

    it('control: UTF-8 escapes (%C3%A9) are decoded and sent as UTF-8, as Go sends them', async () => {
      const file = path.join(dir, 'utf8.kubeconfig');
      await writeFile(
        file,
        kubeconfig(
          `server: "https://127.0.0.1:6443", proxy-url: "http://user:p%C3%A9ss@127.0.0.1:${proxyPort}", insecure-skip-tls-verify: true`,
        ),
      );
      const cluster = await connectCluster({ mode: 'kubeconfig', path: file });
      seen.length = 0;
      await version(cluster!.client).catch(() => undefined);
      assert.deepEqual(seen, [`Basic ${Buffer.from('user:p\u00e9ss', 'utf8').toString('base64')}`]);
    });
  });
});
