// The Jobs read behind the JobSet pods (numNodes) warning (src/scale/reads/jobset-read.ts over
// src/cluster/api-request.ts) against loopback servers standing in for the API server: what it asks
// for (the Jobs labelled with the JobSet name in its namespace, from the watch cache), credentials
// and TLS from a client-node KubeConfig, proxy-url, and answers that are wrong, huge, slow or cut
// off, each a `failed` read with a clear reason (answered in-band: the change is still admitted,
// with a warning), never a throw or a hang. The read is capped in bytes (JOBS_READ_MAX_BYTES) so a
// hostile or huge answer costs at most about that, through a proxy as directly, and in memory as on
// the wire. What the real API server answers is proven in test/e2e/admission.test.ts.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { after, before, describe, it } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { jobSetReader, JOBSET_READ_TIMEOUT_MS } from '../../../src/scale/reads/jobset-read.ts';
import { apiClient, type ApiClient } from '../../../src/cluster/api-request.ts';
import { directConnection } from '../../../src/cluster/connection.ts';
import { kubeConfigConnection } from '../../../src/cluster/kubeconfig-connection.ts';
import { generateSelfSigned } from '../../../src/certs/selfsigned.ts';
import { jobSetPodsWarnings } from '../../../src/scale/reads/jobset-pods.ts';
import { forwardingProxy, listen } from '../../cluster/support/loopback.ts';
import { waitFor } from '../../harness/wait.ts';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

const JOB_LIST = JSON.stringify({
  kind: 'JobList',
  apiVersion: 'batch/v1',
  metadata: { resourceVersion: '7' },
  items: [
    {
      metadata: { name: 'ml-node-0', labels: { a: 'b' } },
      spec: { parallelism: 2 },
      status: { active: 2, terminating: 1, ready: 2 },
    },
  ],
});

/**
 * A client over a client-node KubeConfig (the path of exec and auth-provider users; the direct
 * path: test/cluster/direct-connection.test.ts), `prepare` applied to the KubeConfig first.
 */
function kubeConfig(
  server: string,
  user: Record<string, unknown> = { token: 't' },
  cluster: Record<string, unknown> = { skipTLSVerify: true },
  prepare: (kc: KubeConfig) => KubeConfig = (kc) => kc,
): ApiClient {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server, ...cluster }],
    users: [{ name: 'u', ...user }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return apiClient(kubeConfigConnection(prepare(kc)));
}

describe('JobSet read (Jobs by label, with its own timeout)', () => {
  let server: Server;
  let handler: Handler = () => {};
  const seen: string[] = [];
  const hanging = new Set<ServerResponse>();
  let kc: ApiClient;

  before(async () => {
    server = createHttpServer((req, res) => {
      seen.push(req.url ?? '');
      handler(req, res);
    });
    kc = apiClient(
      directConnection({ server: `http://127.0.0.1:${await listen(server)}`, insecureSkipTlsVerify: false }),
    );
  });
  after(() => {
    for (const res of hanging) res.destroy();
    server.closeAllConnections();
    server.close();
  });

  it('lists the Jobs labelled with the JobSet name in its namespace', async () => {
    handler = (_req, res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          kind: 'JobList',
          apiVersion: 'batch/v1',
          metadata: {},
          items: [{ metadata: { name: 'ml-node-0' }, status: { active: 2, terminating: 1 } }],
        }),
      );
    const read = await jobSetReader(kc)('team-a', 'llama-ft');
    assert.equal(read.kind, 'read');
    if (read.kind === 'read')
      assert.deepEqual(
        (read.jobs as { status: object }[]).map((j) => ({ ...j.status })),
        [{ active: 2, terminating: 1 }],
      );
    const url = new URL(seen.at(-1)!, 'http://x');
    assert.equal(url.pathname, '/apis/batch/v1/namespaces/team-a/jobs');
    assert.equal(url.searchParams.get('labelSelector'), 'jobset.sigs.k8s.io/jobset-name=llama-ft');
  });

  it('an API error is a failed read naming it', async () => {
    handler = (_req, res) =>
      res.writeHead(403, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          kind: 'Status',
          apiVersion: 'v1',
          status: 'Failure',
          message: 'jobs.batch is forbidden',
          reason: 'Forbidden',
          code: 403,
        }),
      );
    const read = await jobSetReader(kc)('team-a', 'llama-ft');
    assert.deepEqual(read, { kind: 'failed', error: 'reading its Jobs failed: HTTP 403: jobs.batch is forbidden' });
  });

  it('a server that never answers is a failed read after the timeout, not a hang', async () => {
    handler = (_req, res) => void hanging.add(res);
    const read = await jobSetReader(kc, { timeoutMs: 50 })('team-a', 'slow');
    assert.equal(read.kind, 'failed');
    if (read.kind === 'failed') assert.match(read.error, /timed out after 50 ms|aborted/);
  });

  it('the default timeout leaves room inside the webhook timeoutSeconds (10 s)', () => {
    assert.ok(JOBSET_READ_TIMEOUT_MS <= 3_000, `${JOBSET_READ_TIMEOUT_MS}`);
  });
});

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
    assert.deepEqual(await jobSetReader(kc)('team-a', 'llama-ft'), {
      kind: 'read',
      jobs: [{ metadata: { name: 'ml-node-0' }, status: { active: 2, terminating: 1 } }],
    });
  });

  it('a body that is not JSON', async () => {
    handler = (_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<html>proxy error</html>');
    assert.deepEqual(await jobSetReader(kc)('ns', 'js'), {
      kind: 'failed',
      error: "reading its Jobs failed: the API server's answer is not JSON (24 bytes)",
    });
  });

  it('JSON that is not a list', async () => {
    for (const body of ['null', '[]', '{"kind":"JobList","items":{}}', '"x"']) {
      handler = (_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(body);
      assert.deepEqual(
        await jobSetReader(kc)('ns', 'js'),
        { kind: 'failed', error: "reading its Jobs failed: the API server's answer is not a list of Jobs" },
        body,
      );
    }
  });

  it('items of any shape count nothing, never throw', async () => {
    handler = (_req, res) =>
      res.writeHead(200).end('{"items":[null,1,"x",{"metadata":7,"status":[]},{"status":{"active":"3"}}]}');
    const read = await jobSetReader(kc)('ns', 'js');
    assert.equal(read.kind, 'read');
  });

  it('a 500 with a Status names its message; without one, the start of the body or the status text', async () => {
    handler = (_req, res) =>
      res
        .writeHead(500)
        .end(JSON.stringify({ kind: 'Status', message: 'etcdserver: request timed out\nsecond line', code: 500 }));
    assert.deepEqual(await jobSetReader(kc)('ns', 'js'), {
      kind: 'failed',
      error: 'reading its Jobs failed: HTTP 500: etcdserver: request timed out',
    });
    handler = (_req, res) => res.writeHead(502).end('bad gateway from the load balancer');
    assert.deepEqual(await jobSetReader(kc)('ns', 'js'), {
      kind: 'failed',
      error: 'reading its Jobs failed: HTTP 502: bad gateway from the load balancer',
    });
    handler = (_req, res) => res.writeHead(503).end();
    assert.deepEqual(await jobSetReader(kc)('ns', 'js'), {
      kind: 'failed',
      error: 'reading its Jobs failed: HTTP 503: Service Unavailable',
    });
  });

  it('a body larger than the limit is abandoned, whether declared or streamed', async () => {
    const big = Buffer.alloc(64 * 1024, 0x20);
    handler = (_req, res) => res.writeHead(200, { 'content-length': String(1 << 30) }).write(big);
    assert.deepEqual(await jobSetReader(kc, { maxBytes: 1024 })('ns', 'js'), {
      kind: 'failed',
      error: `reading its Jobs failed: the response is ${1 << 30} bytes, more than the 1024 read`,
    });
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
    assert.deepEqual(await jobSetReader(kc, { maxBytes: 256 * 1024 })('ns', 'js'), {
      kind: 'failed',
      error: `reading its Jobs failed: the response is more than the ${256 * 1024} bytes read`,
    });
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
    await waitFor('the connection closed', () => open.size === 0, { intervalMs: 5 });
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
    const prefixed = kubeConfig(`http://127.0.0.1:${(server.address() as { port: number }).port}/k8s/clusters/c-1/`, {
      token: 't',
    });
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
    const read = await jobSetReader(kubeConfig(`https://127.0.0.1:${port}`, { token: 'secret-token' }, { caData: ca }))(
      'ns',
      'js',
    );
    assert.equal(read.kind, 'read');
    assert.equal(authorizations.at(-1), 'Bearer secret-token');
  });

  it('refuses a server its CA did not sign', async () => {
    const other = (await generateSelfSigned({ ipAddresses: ['127.0.0.1'] })).cert.toString('base64');
    const read = await jobSetReader(kubeConfig(`https://127.0.0.1:${port}`, { token: 't' }, { caData: other }))(
      'ns',
      'js',
    );
    assert.equal(read.kind, 'failed');
    if (read.kind === 'failed') assert.match(read.error, /self-signed|signature|verify|certificate/i);
  });

  it('reads the token from a token file (in-cluster), as client-node does', async () => {
    const tokenFile = path.join(dir, 'token');
    await writeFile(tokenFile, 'from-file-1');
    const kc = kubeConfig(
      `https://127.0.0.1:${port}`,
      { authProvider: { name: 'tokenFile', config: { tokenFile } } },
      { caData: ca },
    );
    assert.equal((await jobSetReader(kc)('ns', 'js')).kind, 'read');
    assert.equal(authorizations.at(-1), 'Bearer from-file-1');
  });

  it('basic auth from the kubeconfig', async () => {
    assert.equal(
      (
        await jobSetReader(
          kubeConfig(`https://127.0.0.1:${port}`, { username: 'admin', password: 'pw' }, { caData: ca }),
        )('ns', 'js')
      ).kind,
      'read',
    );
    assert.equal(authorizations.at(-1), `Basic ${Buffer.from('admin:pw').toString('base64')}`);
  });
});

// A kubeconfig with proxy-url: the request layer (src/cluster/api-request.ts) speaks proxy-url
// itself, so the byte cap the direct GET enforces (jobSetReader's maxBytes, JOBS_READ_MAX_BYTES)
// holds through a plain HTTP proxy too (a loopback server forwarding absolute-form requests, as an
// HTTP proxy does for an http:// API server), and the same Jobs are kept.
describe('the Jobs read through proxy-url', () => {
  const CAP = 16 * 1024;
  const job = (i: number) => ({
    metadata: { name: `big-node-${i}`, annotations: { note: 'x'.repeat(1024) } },
    status: i % 2 ? { active: 1 } : {},
  });
  const LIST = JSON.stringify({
    apiVersion: 'batch/v1',
    kind: 'JobList',
    metadata: {},
    items: Array.from({ length: 64 }, (_, i) => job(i)),
  });
  let api: Server;
  let proxy: Server;
  let apiUrl = '';
  let proxyUrl = '';
  let proxied = 0;

  before(async () => {
    api = createHttpServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(LIST));
    apiUrl = `http://127.0.0.1:${await listen(api)}`;
    // Absolute-form requests forwarded to their target.
    proxy = forwardingProxy(() => proxied++);
    proxyUrl = `http://127.0.0.1:${await listen(proxy)}`;
  });
  after(() => {
    for (const s of [api, proxy]) {
      s.closeAllConnections();
      s.close();
    }
  });

  /** As serve loads a kubeconfig whose user client-node serves (connect.ts). */
  const viaKubeConfig = (through?: string) =>
    kubeConfig(apiUrl, { token: 't' }, { skipTLSVerify: true, ...(through ? { proxyUrl: through } : {}) });

  it('answers larger than the cap are refused, through the proxy as directly', async () => {
    assert.ok(LIST.length > CAP);
    const direct = await jobSetReader(viaKubeConfig(), { maxBytes: CAP })('ns', 'big');
    assert.equal(direct.kind, 'failed', 'read directly: over the cap');
    const viaProxy = await jobSetReader(viaKubeConfig(proxyUrl), { maxBytes: CAP })('ns', 'big');
    assert.ok(proxied > 0, 'the read went through the proxy');
    assert.equal(
      viaProxy.kind,
      'failed',
      `through the proxy: a ${LIST.length}-byte answer over the ${CAP}-byte cap was ${viaProxy.kind === 'read' ? 'read in full' : viaProxy.kind}`,
    );
  });

  it('through the proxy, the same Jobs are kept as directly: those with pods, their name and counts', async () => {
    const direct = await jobSetReader(viaKubeConfig())('ns', 'big');
    const viaProxy = await jobSetReader(viaKubeConfig(proxyUrl))('ns', 'big');
    assert.equal(direct.kind, 'read');
    assert.deepEqual(viaProxy, direct);
  });
});

// Only the Jobs that have pods are kept, their name and pod counts: the warning uses no other
// (podsOfJobs drops them), so an entry per list item would cost memory for nothing. A JobList of
// tiny pod-less items under the cap (`0,` is two bytes) would otherwise keep ~50 times its size in
// heap: 8 MiB would make 4.2 M entries, ~500 MiB of heap and ~1.8 s of blocked event loop, beyond the
// deployment's 512Mi limit. Memory is compared after forced collections; nothing is timed.
describe('the Jobs read: memory', () => {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const CAP = 1024 * 1024;

  it('an answer under the byte cap keeps about that much memory, not one entry per pod-less item', async () => {
    // As many items as fit under the cap; none has pods.
    const count = Math.floor((CAP - 16) / 2);
    const body = Buffer.from(`{"items":[${'0,'.repeat(count - 1)}0]}`);
    assert.ok(body.length <= CAP);
    // The warm-up read gets an empty list; the read under test the tiny items.
    const server = createHttpServer((req, res) => {
      const answer = req.url?.includes('tiny-items') ? body : Buffer.from('{"items":[]}');
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': answer.length }).end(answer);
    });
    const port = await listen(server);
    try {
      const read = jobSetReader(kubeConfig(`http://127.0.0.1:${port}`), { maxBytes: CAP, timeoutMs: 60_000 });
      // One read first, so the pool, client-node's agent and the modules are in the baseline.
      assert.equal((await read('ns', 'warm-up')).kind, 'read');
      gc();
      const baseline = process.memoryUsage().heapUsed;
      const result = await read('ns', 'tiny-items');
      gc();
      const retained = process.memoryUsage().heapUsed - baseline;
      assert.equal(result.kind, 'read');
      assert.deepEqual(jobSetPodsWarnings(result, 'ns/tiny-items'), [], 'no Job has pods: nothing to warn about');
      assert.ok(
        retained < 4 * CAP,
        `the read of a ${body.length}-byte answer keeps ${(retained / 2 ** 20).toFixed(1)} MiB of heap`,
      );
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});
