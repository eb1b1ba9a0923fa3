// Which reads a numNodes change sends (src/scale/reads/scale-check.ts), against a loopback API that
// counts them: a ClusterTrainingRuntime the runtime watch holds is not read, one it does not hold
// is; a namespaced TrainingRuntime is always read (never cached, runtime-watch.ts); the JobSet is
// always read, from the watch cache, and a JobSet the cache does not have again by a quorum read.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { after, before, beforeEach, describe, it } from 'node:test';
import { apiClient, type ApiClient } from '../../../src/cluster/api-request.ts';
import { directConnection } from '../../../src/cluster/connection.ts';
import { TRAINER_LINES } from '../../../src/api/trainer-line.ts';
import { createMetrics } from '../../../src/observability/metrics.ts';
import { scaleChecker } from '../../../src/scale/reads/scale-check.ts';
import { listen } from '../../cluster/support/loopback.ts';
import type { Server } from 'node:http';
import type { Read } from '../../../src/scale/scale-admission.ts';
import { torch1, trainerJobSet } from '../../rebuild/fixtures.ts';

const spec = { mlPolicy: { numNodes: 1 }, template: { spec: { replicatedJobs: [] } } };

describe('the scale check reads the runtime only where no watch holds it', () => {
  let server: Server;
  let client: ApiClient;
  const paths: string[] = [];
  before(async () => {
    server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      paths.push(url.pathname);
      if (url.pathname.includes('runtimes/'))
        return void res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ metadata: { name: url.pathname.split('/').pop() }, spec }));
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"kind":"Status","code":404}');
    });
    client = apiClient(
      directConnection({ server: `http://127.0.0.1:${await listen(server)}`, insecureSkipTlsVerify: false }),
    );
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });
  beforeEach(() => (paths.length = 0));

  const check = (runtimeRef: Record<string, string>, watched: (name: string) => unknown) => {
    const asked: string[] = [];
    const scale = scaleChecker(client, {
      lease: undefined,
      watchedRuntime: (name) => {
        asked.push(name);
        return watched(name) as Read<unknown> | undefined;
      },
      readJobs: async () => ({ kind: 'read', jobs: { items: [] } }),
      // The stored TrainJob is the one the review was made from: the change is judged.
      readTrainJob: async () => ({ kind: 'found', value: object }),
      metrics: createMetrics(),
    });
    const object = {
      metadata: { name: 'tj', namespace: 'team', uid: 'u-1', resourceVersion: '5' },
      spec: { runtimeRef, suspend: true },
    };
    return {
      asked,
      result: scale({ namespace: 'team', name: 'tj', trainer: TRAINER_LINES['v2.3.0'], object, oldObject: object }),
    };
  };
  const runtimeReads = () => paths.filter((p) => p.includes('runtimes/'));

  it('a ClusterTrainingRuntime the watch holds: the JobSet read, the runtime not', async () => {
    const { asked, result } = check({ name: 'torch' }, () => ({
      kind: 'found',
      value: { metadata: { name: 'torch' }, spec },
    }));
    await result;
    assert.deepEqual(asked, ['torch']);
    assert.deepEqual(runtimeReads(), []);
    // This API has no JobSet: read from the watch cache, then confirmed absent by a quorum read.
    assert.deepEqual(paths, [
      '/apis/jobset.x-k8s.io/v1alpha2/namespaces/team/jobsets/tj',
      '/apis/jobset.x-k8s.io/v1alpha2/namespaces/team/jobsets/tj',
    ]);
  });

  it('a ClusterTrainingRuntime the watch does not hold (or while it is not current): read', async () => {
    const { asked, result } = check({ name: 'torch', kind: 'ClusterTrainingRuntime' }, () => undefined);
    await result;
    assert.deepEqual(asked, ['torch']);
    assert.deepEqual(runtimeReads(), ['/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes/torch']);
  });

  it('a namespaced TrainingRuntime: always read, the watch not asked', async () => {
    const { asked, result } = check({ name: 'mine', kind: 'TrainingRuntime' }, () => {
      throw new Error('not to be asked');
    });
    await result;
    assert.deepEqual(asked, []);
    assert.deepEqual(runtimeReads(), ['/apis/trainer.kubeflow.org/v1alpha1/namespaces/team/trainingruntimes/mine']);
  });
});

describe('"no JobSet yet" is a quorum read: the watch cache may not have a JobSet just created', () => {
  let server: Server;
  let client: ApiClient;
  /** The JobSet GETs as sent: each one's resourceVersion query ('' when none). */
  const jobSetReads: string[] = [];
  /** Where the JobSet exists: in the watch cache (resourceVersion=0), in etcd (no resourceVersion), both or neither. */
  let jobSetIn: { cache: boolean; etcd: boolean };
  const jobSet = trainerJobSet('torch1');
  before(async () => {
    server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname === '/apis/jobset.x-k8s.io/v1alpha2/namespaces/ns/jobsets/torch1') {
        const rv = url.searchParams.get('resourceVersion');
        jobSetReads.push(rv === null ? '' : `resourceVersion=${rv}`);
        const has = rv === null ? jobSetIn.etcd : jobSetIn.cache;
        if (has) return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(jobSet));
      }
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"kind":"Status","code":404}');
    });
    client = apiClient(
      directConnection({ server: `http://127.0.0.1:${await listen(server)}`, insecureSkipTlsVerify: false }),
    );
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });
  beforeEach(() => (jobSetReads.length = 0));

  // numNodes 1 -> 2 of torch1, whose runtime is gone: with its JobSet found, refused for good (it
  // cannot be judged); with no JobSet, admitted (it is built with the new count). Asked by the API
  // server (callerAuthenticated), so the answer names the runtime.
  const change = () =>
    scaleChecker(client, {
      lease: undefined,
      watchedRuntime: () => ({ kind: 'absent' }),
      readJobs: async () => ({ kind: 'read', jobs: [] }),
      metrics: createMetrics(),
    })({
      namespace: 'ns',
      name: 'torch1',
      trainer: TRAINER_LINES['v2.3.0'],
      object: torch1(2),
      callerAuthenticated: true,
    });

  it('a JobSet the watch cache lacks but etcd has is found: the change is judged, not admitted as "no JobSet yet"', async () => {
    jobSetIn = { cache: false, etcd: true };
    const result = await change();
    assert.deepEqual(jobSetReads, ['resourceVersion=0', '']);
    assert.equal(result.causes.length, 1, JSON.stringify(result));
    assert.match(result.causes[0].detail, /the runtime ClusterTrainingRuntime torch-distributed does not exist/);
  });

  it('absent from both: admitted as "no JobSet yet", on the quorum read\'s word', async () => {
    jobSetIn = { cache: false, etcd: false };
    const result = await change();
    assert.deepEqual(jobSetReads, ['resourceVersion=0', '']);
    assert.deepEqual(result.causes, []);
  });

  it('found in the watch cache: one read, no quorum read (the fast path)', async () => {
    jobSetIn = { cache: true, etcd: true };
    const result = await change();
    assert.deepEqual(jobSetReads, ['resourceVersion=0']);
    assert.equal(result.causes.length, 1);
  });
});

describe('quorum reads for callers not known to be the API server are capped per second', () => {
  let server: Server;
  let client: ApiClient;
  /** JobSet GETs without resourceVersion (quorum reads from etcd), by path. */
  const quorumReads: string[] = [];
  before(async () => {
    // No JobSet exists, in the watch cache or in etcd.
    server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname.includes('/jobsets/') && !url.searchParams.has('resourceVersion'))
        quorumReads.push(url.pathname);
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"kind":"Status","code":404}');
    });
    client = apiClient(
      directConnection({ server: `http://127.0.0.1:${await listen(server)}`, insecureSkipTlsVerify: false }),
    );
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });
  beforeEach(() => (quorumReads.length = 0));

  const checker = () =>
    scaleChecker(client, {
      lease: undefined,
      watchedRuntime: () => ({ kind: 'absent' }),
      readJobs: async () => ({ kind: 'read', jobs: [] }),
      metrics: createMetrics(),
      quorumReadsPerWindow: 2,
      // Each forger sends the stored TrainJob's uid and version (it can read the TrainJob): judged.
      readTrainJob: async () => ({ kind: 'found', value: torch1(1) as never }),
    });
  const names = ['a', 'b', 'c', 'd', 'e'];

  it('forged count changes of five TrainJobs with no JobSet: two quorum reads (admitted, "no JobSet yet"), three refused for now without one', async () => {
    const scale = checker();
    const results = await Promise.all(
      names.map((name) =>
        scale({ namespace: 'ns', name, trainer: TRAINER_LINES['v2.3.0'], object: torch1(2), oldObject: torch1(1) }),
      ),
    );
    assert.equal(quorumReads.length, 2, quorumReads.join('\n'));
    assert.equal(results.filter((r) => r.causes.length === 0).length, 2);
    const refused = results.filter((r) => r.causes.length > 0);
    assert.equal(refused.length, 3);
    for (const r of refused) {
      assert.equal(r.transient, true);
      assert.match(r.causes[0].detail, /^its JobSet could not be read \(the webhook's log says why\)/);
    }
  });

  it('the API server (callerAuthenticated) is not capped: five quorum reads, five admitted', async () => {
    const scale = checker();
    const results = await Promise.all(
      names.map((name) =>
        scale({
          namespace: 'ns',
          name,
          trainer: TRAINER_LINES['v2.3.0'],
          object: torch1(2),
          callerAuthenticated: true,
        }),
      ),
    );
    assert.equal(quorumReads.length, 5);
    assert.ok(results.every((r) => r.causes.length === 0));
  });
});
