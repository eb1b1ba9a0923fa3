// The direct connection (src/cluster/connection.ts) against loopback HTTPS servers: the CA is
// checked, the client certificate presented, tls-server-name used, insecure-skip-tls-verify
// honoured, the bearer token or basic auth sent (over TLS only, as client-go), a token file
// re-read at most once a minute (the in-cluster token rotates; empty, refused), and unusable TLS material refused
// at start in one line (connect.ts).
//
// Files re-read as they rotate keep their last good content, as client-go does:
// - a token file read empty: client-go's fileTokenSource refuses it ("read empty token from file",
//   transport/token_source.go) and its cachingTokenSource keeps the last good token, so no call
//   goes out anonymous when an agent writes the file in place (truncate, then write);
// - a client certificate and key are one pair: client-go reloads them together and keeps the last
//   pair that loads (transport/cert_rotation.go: tls.LoadX509KeyPair, the old certificate kept on
//   error), so a re-read between the writes of the certificate and of the key does not hand TLS a
//   certificate with the other key ("key values mismatch");
// - the certificate authority: client-go reads it once (transport/transport.go loadTLSFiles), so
//   it never trusts a torn one; re-reading it is ours, and a CA file caught empty or half written
//   (a rotation that is not an atomic rename, a copy in progress) leaves the last CA that held a
//   certificate in use.
import assert from 'node:assert/strict';
import { mkdtemp, rm, unlink, writeFile } from 'node:fs/promises';
import { createServer as createHttpServer, type IncomingMessage, type Server } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createSecureContext, type TLSSocket } from 'node:tls';
import { after, before, describe, it } from 'node:test';
import { apiClient } from '../../src/cluster/api-request.ts';
import { connectCluster } from '../../src/cluster/connect.ts';
import { directConnection, REREAD_MS } from '../../src/cluster/connection.ts';
import type { KubeAccess } from '../../src/cluster/kube-access.ts';
import {
  createCA,
  issueClientCert,
  issueServingCert,
  type CertificateAuthority,
  type KeyPairPem,
} from '../harness/pki.ts';
import { listen, tlsApiServer } from './support/loopback.ts';

const get = async (access: KubeAccess) =>
  apiClient(directConnection(access)).request('/version', { signal: AbortSignal.timeout(10_000), maxBytes: 1024 });

describe('direct connection: TLS and credentials', () => {
  let dir = '';
  let ca: CertificateAuthority;
  let client: KeyPairPem;
  let server: Server;
  let plain: Server;
  let url = '';
  let plainUrl = '';
  const seen: { authorization?: string; clientCn?: string }[] = [];
  const record = (req: IncomingMessage) => {
    const peer = (req.socket as TLSSocket).getPeerCertificate?.();
    const cn = peer?.subject?.CN;
    seen.push({ authorization: req.headers.authorization, clientCn: Array.isArray(cn) ? cn.join(',') : cn });
  };

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'tjw-direct-'));
    ca = await createCA();
    // Its only name is kubernetes.test: reached at 127.0.0.1, only tls-server-name verifies it.
    const serving = await issueServingCert(ca, 'apiserver', { dnsNames: ['kubernetes.test'], ips: [] });
    client = await issueClientCert(ca, 'webhook-user');
    server = createHttpsServer(
      { cert: serving.certPem, key: serving.keyPem, ca: ca.certPem, requestCert: true, rejectUnauthorized: false },
      (req, res) => {
        record(req);
        res.writeHead(200).end('{}');
      },
    );
    url = `https://127.0.0.1:${await listen(server)}`;
    plain = createHttpServer((req, res) => {
      record(req);
      res.writeHead(200).end('{}');
    });
    plainUrl = `http://127.0.0.1:${await listen(plain)}`;
  });
  after(async () => {
    for (const s of [server, plain]) {
      s.closeAllConnections();
      s.close();
    }
    await rm(dir, { recursive: true, force: true });
  });

  const trusted = () => ({
    server: url,
    ca: { data: Buffer.from(ca.certPem) },
    tlsServerName: 'kubernetes.test',
    insecureSkipTlsVerify: false,
  });

  it('verifies the server with the CA and tls-server-name, and sends the bearer token', async () => {
    assert.equal((await get({ ...trusted(), token: 'secret' })).status, 200);
    assert.deepEqual(seen.at(-1), { authorization: 'Bearer secret', clientCn: undefined });
  });

  it('without tls-server-name the same server is refused (its certificate does not name 127.0.0.1)', async () => {
    await assert.rejects(
      get({ ...trusted(), tlsServerName: undefined }),
      /IP: 127\.0\.0\.1 is not in the cert's list|altnames/i,
    );
  });

  it('a CA that did not sign the server is refused; insecure-skip-tls-verify accepts it', async () => {
    const other = await createCA('other');
    await assert.rejects(
      get({ ...trusted(), ca: { data: Buffer.from(other.certPem) } }),
      /self-signed|verify|certificate/i,
    );
    assert.equal((await get({ server: url, insecureSkipTlsVerify: true, token: 't' })).status, 200);
  });

  it('presents the client certificate, from files', async () => {
    await writeFile(path.join(dir, 'client.crt'), client.certPem);
    await writeFile(path.join(dir, 'client.key'), client.keyPem);
    assert.equal(
      (
        await get({
          ...trusted(),
          cert: { file: path.join(dir, 'client.crt') },
          key: { file: path.join(dir, 'client.key') },
        })
      ).status,
      200,
    );
    assert.deepEqual(seen.at(-1), { authorization: undefined, clientCn: 'webhook-user' });
  });

  it('basic auth', async () => {
    await get({ ...trusted(), basic: { username: 'admin', password: 'pw' } });
    assert.equal(seen.at(-1)?.authorization, `Basic ${Buffer.from('admin:pw').toString('base64')}`);
  });

  it('over plain HTTP no credentials are sent (client-go sends them over TLS only)', async () => {
    assert.equal((await get({ server: plainUrl, token: 'secret', insecureSkipTlsVerify: false })).status, 200);
    assert.deepEqual(seen.at(-1), { authorization: undefined, clientCn: undefined });
  });

  it('a token file is re-read once a minute has passed, and its last value kept when it cannot be read', async () => {
    const tokenFile = path.join(dir, 'token');
    await writeFile(tokenFile, 'first\n');
    let now = 1_000_000;
    const api = apiClient(directConnection({ ...trusted(), tokenFile }, () => now));
    const authorization = async () => {
      await api.request('/version', { signal: AbortSignal.timeout(10_000), maxBytes: 1024 });
      return seen.at(-1)?.authorization;
    };
    assert.equal(await authorization(), 'Bearer first');
    await writeFile(tokenFile, 'second\n');
    now += REREAD_MS - 1;
    assert.equal(await authorization(), 'Bearer first', 'read again within the minute');
    now += 1;
    assert.equal(await authorization(), 'Bearer second');
    await unlink(tokenFile);
    now += REREAD_MS;
    assert.equal(await authorization(), 'Bearer second', 'the last good token when the file is gone');
  });

  it('a token file empty at start: calls fail naming it (client-go: "read empty token from file"), none goes out anonymous; once written it is used', async () => {
    const tokenFile = path.join(dir, 'empty-token');
    await writeFile(tokenFile, '\n');
    const before = seen.length;
    const api = apiClient(directConnection({ ...trusted(), tokenFile }, () => 0));
    await assert.rejects(api.request('/version', { signal: AbortSignal.timeout(10_000), maxBytes: 1024 }), {
      message: `read empty token from file ${tokenFile}`,
    });
    assert.equal(seen.length, before, 'no request was sent');
    await writeFile(tokenFile, 'late\n');
    await api.request('/version', { signal: AbortSignal.timeout(10_000), maxBytes: 1024 });
    assert.equal(seen.at(-1)?.authorization, 'Bearer late', 'without a good token yet, the file is read again at once');
  });

  it("TLS material that cannot be used (no CA certificate, a key that is not the certificate's) is a one-line start-up error", async () => {
    const file = path.join(dir, 'bad-ca.kubeconfig');
    await writeFile(
      file,
      JSON.stringify({
        clusters: [
          {
            name: 'k',
            cluster: { server: url, 'certificate-authority-data': Buffer.from('not a certificate').toString('base64') },
          },
        ],
        contexts: [{ name: 'c', context: { cluster: 'k' } }],
        'current-context': 'c',
      }),
    );
    await assert.rejects(connectCluster({ mode: 'kubeconfig', path: file }), {
      message: /^--kubeconfig \S+: the TLS material is not usable: the certificate authority holds no PEM certificate$/,
    });
    const user = {
      'client-certificate-data': Buffer.from(client.certPem).toString('base64'),
      'client-key-data': Buffer.from((await issueClientCert(ca, 'other')).keyPem).toString('base64'),
    };
    await writeFile(
      file,
      JSON.stringify({
        clusters: [
          {
            name: 'k',
            cluster: { server: url, 'certificate-authority-data': Buffer.from(ca.certPem).toString('base64') },
          },
        ],
        users: [{ name: 'u', user }],
        contexts: [{ name: 'c', context: { cluster: 'k', user: 'u' } }],
        'current-context': 'c',
      }),
    );
    await assert.rejects(connectCluster({ mode: 'kubeconfig', path: file }), {
      message: /^--kubeconfig \S+: the TLS material is not usable: [^\n]*key values mismatch/,
    });
  });

  it('in-cluster access needs the service host and port from the edge', async () => {
    await assert.rejects(connectCluster({ mode: 'in-cluster' }), {
      message: /without KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT/,
    });
  });
});

describe('direct connection: files re-read as they rotate', () => {
  let dir = '';
  let ca: CertificateAuthority;
  let server: HttpsServer;
  let url = '';

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'tjw-direct-reread-'));
    ({ ca, server, url } = await tlsApiServer());
  });
  after(async () => {
    server.closeAllConnections();
    server.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('a token file read empty keeps the last good token (client-go: "read empty token", the cached token kept)', async () => {
    const tokenFile = path.join(dir, 'token');
    await writeFile(tokenFile, 'good-token\n');
    let clock = 0;
    const connection = directConnection(
      { server: 'https://127.0.0.1:6443', tokenFile, insecureSkipTlsVerify: false },
      () => clock,
    );
    assert.equal((await connection.material()).headers.authorization, 'Bearer good-token');
    await writeFile(tokenFile, ''); // caught between the truncation and the write
    clock += REREAD_MS + 1;
    assert.equal(
      (await connection.material()).headers.authorization,
      'Bearer good-token',
      'no call goes out anonymous',
    );
  });

  it('a certificate re-read before its key is written keeps the last pair that loads (client-go: tls.LoadX509KeyPair, old pair kept)', async () => {
    const [first, second] = [await issueClientCert(ca, 'first'), await issueClientCert(ca, 'second')];
    const cert = path.join(dir, 'client.crt');
    const key = path.join(dir, 'client.key');
    await writeFile(cert, first.certPem);
    await writeFile(key, first.keyPem);
    let clock = 0;
    const connection = directConnection(
      { server: 'https://127.0.0.1:6443', cert: { file: cert }, key: { file: key }, insecureSkipTlsVerify: false },
      () => clock,
    );
    const usable = async () => {
      const { tls } = await connection.material();
      createSecureContext({ cert: tls.cert, key: tls.key }); // throws "key values mismatch" for a torn pair
      return tls.cert!.toString();
    };
    assert.equal(await usable(), first.certPem);
    await writeFile(cert, second.certPem); // the rotation wrote the certificate; the key comes next
    clock += REREAD_MS + 1;
    assert.equal(await usable(), first.certPem, 'the torn pair is not used; the last good one is');
    await writeFile(key, second.keyPem);
    clock += REREAD_MS + 1;
    assert.equal(await usable(), second.certPem, 'the new pair once both files are written');
  });

  const torn: [string, (pem: string) => string][] = [
    ['empty', () => ''],
    ['half written', (pem) => pem.slice(0, Math.floor(pem.length / 2))],
  ];
  for (const [what, cut] of torn) {
    it(`a CA file read ${what}: the last CA that held a certificate stays in use, calls keep verifying the server`, async () => {
      const caFile = path.join(dir, `ca-${what.replace(' ', '-')}.crt`);
      await writeFile(caFile, ca.certPem);
      let now = 1_000_000;
      const api = apiClient(
        directConnection({ server: url, ca: { file: caFile }, insecureSkipTlsVerify: false }, () => now),
      );
      const call = () => api.request('/version', { signal: AbortSignal.timeout(10_000), maxBytes: 1024 });
      assert.equal((await call()).status, 200, 'with the CA as written');
      await writeFile(caFile, cut(ca.certPem));
      now += REREAD_MS;
      assert.equal((await call()).status, 200, `after the CA file was re-read ${what}`);
    });
  }

  it('a CA file rewritten whole is used from the next re-read (the control case)', async () => {
    const other = await createCA('other');
    const caFile = path.join(dir, 'ca-rotated.crt');
    await writeFile(caFile, ca.certPem);
    let now = 1_000_000;
    const api = apiClient(
      directConnection({ server: url, ca: { file: caFile }, insecureSkipTlsVerify: false }, () => now),
    );
    const call = () => api.request('/version', { signal: AbortSignal.timeout(10_000), maxBytes: 1024 });
    assert.equal((await call()).status, 200);
    await writeFile(caFile, other.certPem);
    now += REREAD_MS;
    await assert.rejects(call(), 'a CA that did not sign the server, once re-read');
  });
});
