// Review (s14) of "serve without @kubernetes/client-node": what kube-access.ts hands to client-node
// ("a user this does not implement ... a proxy scheme other than http/https/socks5") is not served
// by client-node end to end: only the credentials come from its KubeConfig
// (kubeconfig-connection.ts); the connection is still made by api-request.ts, whose agents know
// http(s) and socks5 proxies alone.
//
// 1. proxy-url socks5h:// (or socks4://, socks4a://): kube-access delegates it, then api-request's
//    agentFor() sends it to hpagent (an HTTP CONNECT over TLS, since the scheme is not 'http:'), so
//    a SOCKS proxy receives a TLS ClientHello and every call fails ("Client network socket
//    disconnected before secure TLS connection was established"). Before 2a29d7c (at 4996f8e)
//    client-node 2.0.1's own dispatcher spoke them (createSocksConnector: socks4/4a/5/5h), so the CRD
//    follower, the certificate store and the Jobs read worked through such a proxy (checked: a
//    CustomObjectsApi GET through the same loopback socks5h proxy answers, the proxy sees SOCKS5). client-go
//    refuses these schemes at load ("unsupported scheme ..., must be http, https, or socks5",
//    tools/clientcmd/helpers.go parseProxyURL); either answer is fine, a start that then fails
//    every call is not.
// 2. Impersonation: client-node 2.0.1 sets only Impersonate-User (config.js applyHTTPSOptions);
//    as-groups, as-uid and as-user-extra are dropped silently, so the calls run as another identity
//    than the kubeconfig names. client-go sends Impersonate-Group/-Uid/-Extra-* (rest.Config
//    Impersonate, transport/round_trippers.go NewImpersonatingRoundTripper) and refuses groups, uid
//    or extra without a user (tools/clientcmd/validation.go validateAuthInfo: "requesting uid,
//    groups or user-extra for ... without impersonating a user"); with client-node the groups alone
//    are ignored and the calls run as the kubeconfig's own (often broader) identity.
// 3. Credentials over plain HTTP: the direct path sends none to an http:// server, as client-go
//    ("only try to read the auth information if we are secure", tools/clientcmd/client_config.go,
//    rest.IsConfigTransportTLS); a delegated user's credentials (kubeconfig-connection.ts) go out
//    whatever the scheme. With insecure-skip-tls-verify: true (client-node refuses http:// without
//    it) a user with `as` and a token, or an exec plugin, sends its bearer token in clear. As
//    before this change (client-node made the call), but the new direct path shows the rule.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer as createHttpServer } from 'node:http';
import { createServer, type Server } from 'node:https';
import { connect, createServer as createNetServer, type Server as NetServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { connectCluster } from '../../src/cluster/connect.ts';
import { createCA, issueServingCert, type CertificateAuthority } from '../harness/pki.ts';
import { listen } from './support/loopback.ts';

/** A SOCKS5 proxy without authentication (RFC 1928), which is what socks5h:// speaks too; `first` gets each client's first byte. */
function socks5(first: (byte: number) => void): NetServer {
  return createNetServer((client: Socket) => {
    client.on('error', () => {});
    client.once('data', (hello: Buffer) => {
      first(hello[0]);
      if (hello[0] !== 5) return void client.destroy();
      client.write(Buffer.from([5, 0]));
      client.once('data', (req: Buffer) => {
        const host = req[3] === 1 ? [...req.subarray(4, 8)].join('.') : req.subarray(5, 5 + req[4]).toString();
        const upstream = connect(req.readUInt16BE(req.length - 2), host, () => {
          client.write(Buffer.from([5, 0, 0, 1, 0, 0, 0, 0, 0, 0]));
          client.pipe(upstream).pipe(client);
        });
        upstream.on('error', () => client.destroy());
      });
    });
  });
}

/** An exec credential plugin's program: it prints the token "secret". */
const EXEC_TOKEN = 'console.log(JSON.stringify({apiVersion:"client.authentication.k8s.io/v1",kind:"ExecCredential",status:{token:"secret"}}))';

describe('review: kubeconfigs kube-access hands to client-node', () => {
  let dir = '';
  let ca: CertificateAuthority;
  let api: Server;
  let socks: NetServer;
  let apiUrl = '';
  let socksPort = 0;
  const firstBytes: number[] = [];
  const seen: Record<string, string | string[] | undefined>[] = [];

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'tjw-connect-review-'));
    ca = await createCA();
    const serving = await issueServingCert(ca, 'apiserver');
    api = createServer({ cert: serving.certPem, key: serving.keyPem }, (req, res) => {
      seen.push(req.headers);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
    apiUrl = `https://127.0.0.1:${await listen(api)}`;
    socks = socks5((b) => firstBytes.push(b));
    socksPort = await listen(socks);
  });
  after(async () => {
    api.closeAllConnections();
    api.close();
    socks.close();
    await rm(dir, { recursive: true, force: true });
  });

  async function kubeconfig(name: string, cluster: string, user: string): Promise<string> {
    const file = path.join(dir, name);
    const caData = Buffer.from(ca.certPem).toString('base64');
    await writeFile(
      file,
      `clusters: [{name: k, cluster: {server: "${apiUrl}", certificate-authority-data: ${caData}${cluster}}}]\ncontexts: [{name: c, context: {cluster: k, user: u}}]\ncurrent-context: c\nusers: [{name: u, user: {token: t${user}}}]\n`,
    );
    return file;
  }

  const call = async (file: string) => {
    const connection = await connectCluster({ mode: 'kubeconfig', path: file });
    return connection!.client.request('/version', { signal: AbortSignal.timeout(10_000), maxBytes: 1024 });
  };

  it('proxy-url socks5h:// reaches the API server through the SOCKS proxy (or is refused at start, as client-go does)', async () => {
    const file = await kubeconfig('socks5h', `, proxy-url: "socks5h://127.0.0.1:${socksPort}"`, '');
    let connection: Awaited<ReturnType<typeof connectCluster>>;
    try {
      connection = await connectCluster({ mode: 'kubeconfig', path: file });
    } catch (err) {
      // Refused at start with a clear message: client-go's answer, acceptable.
      assert.match((err as Error).message, /proxy/);
      return;
    }
    const before = firstBytes.length;
    const res = await connection!.client.request('/version', { signal: AbortSignal.timeout(10_000), maxBytes: 1024 });
    assert.equal(res.status, 200);
    assert.deepEqual(firstBytes.slice(before), [5], 'the proxy was spoken to in SOCKS5, not sent a TLS ClientHello (22)');
  });

  it('as + as-groups: the calls carry Impersonate-User and Impersonate-Group, as client-go sends them', async () => {
    const file = await kubeconfig('impersonate', '', ', as: bob, as-groups: [reviewers]');
    assert.equal((await call(file)).status, 200);
    const headers = seen.at(-1)!;
    assert.equal(headers['impersonate-user'], 'bob');
    assert.equal(headers['impersonate-group'], 'reviewers', 'the group named by as-groups is requested');
  });

  it('as-groups without as is refused at start (client-go: groups without impersonating a user), not run as the kubeconfig user', async () => {
    const file = await kubeconfig('groups-only', '', ', as-groups: [reviewers]');
    await assert.rejects(connectCluster({ mode: 'kubeconfig', path: file }), /impersonat/);
  });

  // Since the fix impersonation is sent by our own layer (not delegated): an exec user is what
  // still goes through client-node, and its plugin's token must not go out in clear either.
  it('a delegated user (an exec plugin that yields a token) sends no credentials to an http:// server, as the direct path and client-go', async () => {
    const authorizations: (string | undefined)[] = [];
    const plain = createHttpServer((req, res) => {
      authorizations.push(req.headers.authorization);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
    try {
      const file = path.join(dir, 'plain');
      await writeFile(file, `clusters: [{name: k, cluster: {server: "http://127.0.0.1:${await listen(plain)}", insecure-skip-tls-verify: true}}]\ncontexts: [{name: c, context: {cluster: k, user: u}}]\ncurrent-context: c\nusers: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: ${JSON.stringify(process.execPath)}, args: [-e, ${JSON.stringify(EXEC_TOKEN)}]}}}]\n`);
      const connection = await connectCluster({ mode: 'kubeconfig', path: file });
      assert.match(connection!.via, /client-node/);
      await connection!.client.request('/version', { signal: AbortSignal.timeout(10_000), maxBytes: 1024 });
      assert.deepEqual(authorizations, [undefined], 'no bearer token in clear');
    } finally {
      plain.close();
    }
  });
});
