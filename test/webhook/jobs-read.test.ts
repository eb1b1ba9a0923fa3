// The Jobs read behind the numNodes warning (src/webhook/jobset-read.ts over src/cluster/api-request.ts)
// against loopback servers standing in for the API server: credentials and TLS from the
// KubeConfig, and answers that are wrong, huge, slow or cut off, each a `failed` read with a clear
// reason (the change is still admitted, with a warning), never a throw or a hang. What the real
// API server answers is proven in test/e2e/admission.test.ts.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { jobSetReader } from '../../src/webhook/jobset-read.ts';
import { apiClient, type ApiClient } from '../../src/cluster/api-request.ts';
import { kubeConfigConnection } from '../../src/cluster/kubeconfig-connection.ts';
import { generateSelfSigned } from '../../src/certs/selfsigned.ts';
import { listen } from '../cluster/support/loopback.ts';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

const JOB_LIST = JSON.stringify({ kind: 'JobList', apiVersion: 'batch/v1', metadata: { resourceVersion: '7' }, items: [{ metadata: { name: 'ml-node-0', labels: { a: 'b' } }, spec: { parallelism: 2 }, status: { active: 2, terminating: 1, ready: 2 } }] });


/** A client over a client-node KubeConfig (the path of exec and auth-provider users); the direct path: direct-connection.test.ts. */
function kubeConfig(server: string, user: Record<string, unknown>, cluster: Record<string, unknown> = { skipTLSVerify: true }): ApiClient {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server, ...cluster }],
    users: [{ name: 'u', ...user }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return apiClient(kubeConfigConnection(kc));
}

describe('the Jobs read: hostile and broken answers', () => {
  let server: Server;
  let handler: Handler = () => {};
  let kc: ApiClient;
  const open = new Set<ServerResponse>();

  before(async () => {
    server = createHttpServer((req, res) => {
      open.add(res);
      res.on('close', () => open.delete(res));
      handler(req, res);
    });
    kc = kubeConfig(`http://127.0.0.1:${await listen(server)}`, { token: 't' });
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });

  it('keeps only what the warning needs: each Job name and its pod counts', async () => {
    handler = (_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JOB_LIST);
    assert.deepEqual(await jobSetReader(kc)('team-a', 'llama-ft'), { kind: 'read', jobs: [{ metadata: { name: 'ml-node-0' }, status: { active: 2, terminating: 1 } }] });
  });

  it('a body that is not JSON', async () => {
    handler = (_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<html>proxy error</html>');
    assert.deepEqual(await jobSetReader(kc)('ns', 'js'), { kind: 'failed', error: "reading its Jobs failed: the API server's answer is not JSON (24 bytes)" });
  });

  it('JSON that is not a list', async () => {
    for (const body of ['null', '[]', '{"kind":"JobList","items":{}}', '"x"']) {
      handler = (_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(body);
      assert.deepEqual(await jobSetReader(kc)('ns', 'js'), { kind: 'failed', error: "reading its Jobs failed: the API server's answer is not a list of Jobs" }, body);
    }
  });

  it('items of any shape count nothing, never throw', async () => {
    handler = (_req, res) => res.writeHead(200).end('{"items":[null,1,"x",{"metadata":7,"status":[]},{"status":{"active":"3"}}]}');
    const read = await jobSetReader(kc)('ns', 'js');
    assert.equal(read.kind, 'read');
  });

  it('a 500 with a Status names its message; without one, the start of the body or the status text', async () => {
    handler = (_req, res) => res.writeHead(500).end(JSON.stringify({ kind: 'Status', message: 'etcdserver: request timed out\nsecond line', code: 500 }));
    assert.deepEqual(await jobSetReader(kc)('ns', 'js'), { kind: 'failed', error: 'reading its Jobs failed: HTTP 500: etcdserver: request timed out' });
    handler = (_req, res) => res.writeHead(502).end('bad gateway from the load balancer');
    assert.deepEqual(await jobSetReader(kc)('ns', 'js'), { kind: 'failed', error: 'reading its Jobs failed: HTTP 502: bad gateway from the load balancer' });
    handler = (_req, res) => res.writeHead(503).end();
    assert.deepEqual(await jobSetReader(kc)('ns', 'js'), { kind: 'failed', error: 'reading its Jobs failed: HTTP 503: Service Unavailable' });
  });

  it('a body larger than the limit is abandoned, whether declared or streamed', async () => {
    const big = Buffer.alloc(64 * 1024, 0x20);
    handler = (_req, res) => res.writeHead(200, { 'content-length': String(1 << 30) }).write(big);
    assert.deepEqual(await jobSetReader(kc, { maxBytes: 1024 })('ns', 'js'), { kind: 'failed', error: `reading its Jobs failed: the response is ${1 << 30} bytes, more than the 1024 read` });
    // Chunked, no length: it keeps sending until the reader hangs up.
    let sent = 0;
    handler = (_req, res) => {
      res.writeHead(200);
      const more = () => {
        while (!res.destroyed && sent < 64 << 20 && res.write(big)) sent += big.length;
        if (!res.destroyed && sent < 64 << 20) res.once('drain', more);
      };
      more();
    };
    assert.deepEqual(await jobSetReader(kc, { maxBytes: 256 * 1024 })('ns', 'js'), { kind: 'failed', error: `reading its Jobs failed: the response is more than the ${256 * 1024} bytes read` });
    assert.ok(sent < 16 << 20, `${sent} bytes sent before the reader hung up`);
    // The pool is still usable afterwards.
    handler = (_req, res) => res.writeHead(200).end(JOB_LIST);
    assert.equal((await jobSetReader(kc)('ns', 'js')).kind, 'read');
  });

  it('a server that sends headers and then trickles is cut at the timeout, and its connection closed', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"items":[');
    };
    const read = await jobSetReader(kc, { timeoutMs: 100 })('ns', 'slow');
    assert.deepEqual(read, { kind: 'failed', error: 'reading its Jobs timed out after 100 ms' });
    // Closing is asynchronous: the server sees the reader hang up shortly after.
    while (open.size > 0) await new Promise((r) => setTimeout(r, 5));
  });

  it('a connection closed mid-body', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-length': '1000' });
      res.write('{"items":[', () => res.socket?.destroy());
    };
    const read = await jobSetReader(kc)('ns', 'js');
    assert.equal(read.kind, 'failed');
    if (read.kind === 'failed') assert.match(read.error, /^reading its Jobs failed: /);
  });

  it('nothing listening', async () => {
    const closed = createHttpServer();
    const port = await listen(closed);
    closed.close();
    const read = await jobSetReader(kubeConfig(`http://127.0.0.1:${port}`, { token: 't' }))('ns', 'js');
    assert.equal(read.kind, 'failed');
    if (read.kind === 'failed') assert.match(read.error, /^reading its Jobs failed: .*ECONNREFUSED/);
  });

  it('asks for the Jobs by label from the watch cache (resourceVersion=0), the namespace escaped, under the server path', async () => {
    let seen = '';
    handler = (req, res) => {
      seen = req.url ?? '';
      res.writeHead(200).end(JOB_LIST);
    };
    const prefixed = kubeConfig(`http://127.0.0.1:${(server.address() as { port: number }).port}/k8s/clusters/c-1/`, { token: 't' });
    assert.equal((await jobSetReader(prefixed)('team a', 'llama-ft'))?.kind, 'read');
    const url = new URL(seen, 'http://x');
    assert.equal(url.pathname, '/k8s/clusters/c-1/apis/batch/v1/namespaces/team%20a/jobs');
    assert.equal(url.searchParams.get('labelSelector'), 'jobset.sigs.k8s.io/jobset-name=llama-ft');
    assert.equal(url.searchParams.get('resourceVersion'), '0');
  });
});

describe('the Jobs read: TLS and credentials from a client-node KubeConfig', () => {
  let dir: string;
  let server: Server;
  let port = 0;
  let ca = '';
  const authorizations: string[] = [];

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'tjw-jobs-read-'));
    const pair = await generateSelfSigned({ dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] });
    ca = pair.cert.toString('base64');
    server = createHttpsServer({ cert: pair.cert, key: pair.key }, (req, res) => {
      authorizations.push(req.headers.authorization ?? '');
      res.writeHead(200).end(JOB_LIST);
    });
    port = await listen(server);
  });
  after(async () => {
    server.closeAllConnections();
    server.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('verifies the server against the cluster CA and sends the bearer token', async () => {
    const read = await jobSetReader(kubeConfig(`https://127.0.0.1:${port}`, { token: 'secret-token' }, { caData: ca }))('ns', 'js');
    assert.equal(read.kind, 'read');
    assert.equal(authorizations.at(-1), 'Bearer secret-token');
  });

  it('refuses a server its CA did not sign', async () => {
    const other = (await generateSelfSigned({ ipAddresses: ['127.0.0.1'] })).cert.toString('base64');
    const read = await jobSetReader(kubeConfig(`https://127.0.0.1:${port}`, { token: 't' }, { caData: other }))('ns', 'js');
    assert.equal(read.kind, 'failed');
    if (read.kind === 'failed') assert.match(read.error, /self-signed|signature|verify|certificate/i);
  });

  it('reads the token from a token file (in-cluster), as client-node does', async () => {
    const tokenFile = path.join(dir, 'token');
    await writeFile(tokenFile, 'from-file-1');
    const kc = kubeConfig(`https://127.0.0.1:${port}`, { authProvider: { name: 'tokenFile', config: { tokenFile } } }, { caData: ca });
    assert.equal((await jobSetReader(kc)('ns', 'js')).kind, 'read');
    assert.equal(authorizations.at(-1), 'Bearer from-file-1');
  });

  it('basic auth from the kubeconfig', async () => {
    assert.equal((await jobSetReader(kubeConfig(`https://127.0.0.1:${port}`, { username: 'admin', password: 'pw' }, { caData: ca }))('ns', 'js')).kind, 'read');
    assert.equal(authorizations.at(-1), `Basic ${Buffer.from('admin:pw').toString('base64')}`);
  });
});
