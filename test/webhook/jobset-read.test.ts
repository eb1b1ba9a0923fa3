// The read behind the JobSet pods warning (src/webhook/jobset-read.ts) against a loopback HTTP server
// standing in for the API server's transport: what it asks for, and that a server that never
// answers, or answers with an error, becomes a `failed` read (answered in-band), never a hang or a
// throw. What the real API server answers is proven in test/e2e/admission.test.ts.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { apiClient, type ApiClient } from '../../src/cluster/api-request.ts';
import { directConnection } from '../../src/cluster/connection.ts';
import { jobSetReader, JOBSET_READ_TIMEOUT_MS } from '../../src/webhook/jobset-read.ts';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

describe('JobSet read (Jobs by label, with its own timeout)', () => {
  let server: Server;
  let handler: Handler = () => {};
  const seen: string[] = [];
  const hanging = new Set<ServerResponse>();
  let kc: ApiClient;

  before(async () => {
    server = createServer((req, res) => {
      seen.push(req.url ?? '');
      handler(req, res);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    kc = apiClient(directConnection({ server: `http://127.0.0.1:${port}`, insecureSkipTlsVerify: false }));
  });
  after(() => {
    for (const res of hanging) res.destroy();
    server.closeAllConnections();
    server.close();
  });

  it('lists the Jobs labelled with the JobSet name in its namespace', async () => {
    handler = (_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ kind: 'JobList', apiVersion: 'batch/v1', metadata: {}, items: [{ metadata: { name: 'ml-node-0' }, status: { active: 2, terminating: 1 } }] }));
    const read = await jobSetReader(kc)('team-a', 'llama-ft');
    assert.equal(read.kind, 'read');
    if (read.kind === 'read') assert.deepEqual((read.jobs as { status: object }[]).map((j) => ({ ...j.status })), [{ active: 2, terminating: 1 }]);
    const url = new URL(seen.at(-1)!, 'http://x');
    assert.equal(url.pathname, '/apis/batch/v1/namespaces/team-a/jobs');
    assert.equal(url.searchParams.get('labelSelector'), 'jobset.sigs.k8s.io/jobset-name=llama-ft');
  });

  it('an API error is a failed read naming it', async () => {
    handler = (_req, res) => res.writeHead(403, { 'content-type': 'application/json' }).end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', message: 'jobs.batch is forbidden', reason: 'Forbidden', code: 403 }));
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
