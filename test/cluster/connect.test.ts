// connectCluster with a kubeconfig, end to end against a loopback HTTPS server with the
// kubeconfig's CA (src/cluster/connect.ts). What kube-access.ts implements goes on the direct path;
// a user only client-node implements (an exec plugin) still works: connect.ts loads client-node's
// KubeConfig for it and every request carries the plugin's token (kubeconfig-connection.ts), while
// the connection itself is still made by api-request.ts, whose agents speak the proxies.
//
// - proxy-url socks5h:// reaches the API server through the SOCKS proxy, spoken to in SOCKS5 (an
//   HTTP CONNECT over TLS would send it a TLS ClientHello and fail every call: "Client network
//   socket disconnected before secure TLS connection was established"). client-node 2.0.1's own
//   dispatcher speaks socks4/4a/5/5h (createSocksConnector); client-go refuses these schemes at load
//   ("unsupported scheme ..., must be http, https, or socks5", tools/clientcmd/helpers.go
//   parseProxyURL). Either answer is fine; a start that then fails every call is not.
// - Impersonation is sent as client-go sends it: Impersonate-User and Impersonate-Group/-Uid/-Extra-*
//   (rest.Config Impersonate, transport/round_trippers.go NewImpersonatingRoundTripper), and groups,
//   uid or extra without a user refused at start (tools/clientcmd/validation.go validateAuthInfo:
//   "requesting uid, groups or user-extra for ... without impersonating a user"). client-node 2.0.1
//   sets only Impersonate-User (config.js applyHTTPSOptions) and drops the rest silently, so the
//   calls would run as another identity than the kubeconfig names; impersonation is therefore sent
//   by our own layer, not delegated.
// - No credentials over plain HTTP, as client-go ("only try to read the auth information if we are
//   secure", tools/clientcmd/client_config.go, rest.IsConfigTransportTLS), for a delegated user
//   too: client-node would send an exec plugin's bearer token in clear to an http:// server (with
//   insecure-skip-tls-verify: true, which client-node needs for http://).
import assert from 'node:assert/strict';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer as createHttpServer } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { Server as NetServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { connectCluster } from '../../src/cluster/connect.ts';
import { createCA, issueServingCert, type CertificateAuthority } from '../harness/pki.ts';
import { kubeconfig, listen, socks5Proxy } from './support/loopback.ts';

/** An exec credential plugin's program: it prints the token "secret". */
const EXEC_TOKEN =
  'console.log(JSON.stringify({apiVersion:"client.authentication.k8s.io/v1",kind:"ExecCredential",status:{token:"secret"}}))';

describe('connectCluster: a kubeconfig, end to end', () => {
  let dir = '';
  let ca: CertificateAuthority;
  let api: Server;
  let socks: NetServer;
  let apiUrl = '';
  let socksPort = 0;
  const firstBytes: number[] = [];
  const seen: Record<string, string | string[] | undefined>[] = [];

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'tjw-connect-'));
    ca = await createCA();
    const serving = await issueServingCert(ca, 'apiserver');
    api = createServer({ cert: serving.certPem, key: serving.keyPem }, (req, res) => {
      seen.push(req.headers);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
    apiUrl = `https://127.0.0.1:${await listen(api)}`;
    socks = socks5Proxy({ hello: (b) => firstBytes.push(b) });
    socksPort = await listen(socks);
  });
  after(async () => {
    api.closeAllConnections();
    api.close();
    socks.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** A kubeconfig for the loopback server with its CA; `cluster` and `user` are added to their mappings. */
  async function kubeconfigFile(name: string, cluster: string, user: string): Promise<string> {
    const file = path.join(dir, name);
    const caData = Buffer.from(ca.certPem).toString('base64');
    await writeFile(file, kubeconfig(`server: "${apiUrl}", certificate-authority-data: ${caData}${cluster}`, user));
    return file;
  }

  const call = async (file: string) => {
    const connection = await connectCluster({ mode: 'kubeconfig', path: file });
    return connection!.client.request('/version', { signal: AbortSignal.timeout(10_000), maxBytes: 1024 });
  };

  it("an exec plugin user: connects through client-node's KubeConfig and sends the plugin's token, the CA checked", async () => {
    const plugin = path.join(dir, 'plugin.sh');
    await writeFile(
      plugin,
      `#!/bin/sh\necho '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"from-exec"}}'\n`,
    );
    await chmod(plugin, 0o755);
    const file = await kubeconfigFile(
      'exec',
      '',
      `exec: {apiVersion: client.authentication.k8s.io/v1, command: ${plugin}, interactiveMode: Never}`,
    );
    const connection = await connectCluster({ mode: 'kubeconfig', path: file });
    assert.equal(connection?.via, 'client-node (user "u" has exec)');
    const res = await connection!.client.request('/version', { signal: AbortSignal.timeout(10_000), maxBytes: 1024 });
    assert.equal(res.status, 200);
    assert.equal(seen.at(-1)!.authorization, 'Bearer from-exec');
  });

  it("a relative exec command runs from the kubeconfig's directory (client-go's ResolveLocalPaths), not the current one", async () => {
    await mkdir(path.join(dir, 'relative', 'bin'), { recursive: true });
    const plugin = path.join(dir, 'relative', 'bin', 'token.sh');
    await writeFile(
      plugin,
      `#!/bin/sh\necho '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"relative-exec"}}'\n`,
    );
    await chmod(plugin, 0o755);
    const file = await kubeconfigFile(
      path.join('relative', 'config'),
      '',
      'exec: {apiVersion: client.authentication.k8s.io/v1, command: ./bin/token.sh, interactiveMode: Never}',
    );
    assert.equal((await call(file)).status, 200);
    assert.equal(seen.at(-1)!.authorization, 'Bearer relative-exec');
  });

  it('proxy-url socks5h:// reaches the API server through the SOCKS proxy (or is refused at start, as client-go does)', async () => {
    const file = await kubeconfigFile('socks5h', `, proxy-url: "socks5h://127.0.0.1:${socksPort}"`, 'token: t');
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
    assert.deepEqual(
      firstBytes.slice(before),
      [5],
      'the proxy was spoken to in SOCKS5, not sent a TLS ClientHello (22)',
    );
  });

  it('as + as-groups: the calls carry Impersonate-User and Impersonate-Group, as client-go sends them', async () => {
    const file = await kubeconfigFile('impersonate', '', 'token: t, as: bob, as-groups: [reviewers]');
    assert.equal((await call(file)).status, 200);
    const headers = seen.at(-1)!;
    assert.equal(headers['impersonate-user'], 'bob');
    assert.equal(headers['impersonate-group'], 'reviewers', 'the group named by as-groups is requested');
  });

  it('as-groups without as is refused at start (client-go: groups without impersonating a user), not run as the kubeconfig user', async () => {
    const file = await kubeconfigFile('groups-only', '', 'token: t, as-groups: [reviewers]');
    await assert.rejects(connectCluster({ mode: 'kubeconfig', path: file }), /impersonat/);
  });

  // An exec user is what still goes through client-node: its plugin's token must not go out in clear either.
  it('a delegated user (an exec plugin that yields a token) sends no credentials to an http:// server, as the direct path and client-go', async () => {
    const authorizations: (string | undefined)[] = [];
    const plain = createHttpServer((req, res) => {
      authorizations.push(req.headers.authorization);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
    try {
      const file = path.join(dir, 'plain');
      await writeFile(
        file,
        kubeconfig(
          `server: "http://127.0.0.1:${await listen(plain)}", insecure-skip-tls-verify: true`,
          `exec: {apiVersion: client.authentication.k8s.io/v1, command: ${JSON.stringify(process.execPath)}, args: [-e, ${JSON.stringify(EXEC_TOKEN)}]}`,
        ),
      );
      const connection = await connectCluster({ mode: 'kubeconfig', path: file });
      assert.match(connection!.via, /client-node/);
      await connection!.client.request('/version', { signal: AbortSignal.timeout(10_000), maxBytes: 1024 });
      assert.deepEqual(authorizations, [undefined], 'no bearer token in clear');
    } finally {
      plain.close();
    }
  });
});
