// runScale's checks before any write under Kueue, against a fake cluster: the server dry run that another
// writer's change (Kueue's, the reconciler's) meets with a conflict is tried again on the job as
// it is now; the Workload right --no-resume and the end of its pause need under Kueue.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { TrainJob } from '../../src/api/objects.ts';
import type { ScaleArgs } from '../../src/plugin/args.ts';
import { ApiRefusal, type Cluster, type Right } from '../../src/plugin/cluster.ts';
import { PROGRESS_ANNOTATION } from '../../src/plugin/progress.ts';
import { runScale } from '../../src/plugin/scale-run.ts';

const job = (resourceVersion: string, extra: Partial<TrainJob['metadata']> = {}): TrainJob => ({
  metadata: { name: 't', namespace: 'ns', resourceVersion, labels: { 'kueue.x-k8s.io/queue-name': 'q' }, ...extra },
  spec: { runtimeRef: { name: 'torch-distributed' }, suspend: false, trainer: { numNodes: 1 } },
});
const conflict = () =>
  new ApiRefusal({ code: 409, reason: 'Conflict', message: 'the object has been modified; please apply your changes' });

/** A cluster whose job moves on (resourceVersion) after each read until `settleAfter` reads. */
function fakeCluster(opts: { conflicts: number; denied?: (r: Right) => boolean; tj?: TrainJob }) {
  let reads = 0;
  const dryRuns: string[] = [];
  const writes: string[] = [];
  const c: Cluster = {
    namespace: 'ns',
    getTrainJob: async () => opts.tj ?? job(String(++reads)),
    listTrainJobs: async () => [],
    async patchTrainJob(_name, patch, dryRun) {
      if (!dryRun) {
        writes.push(patch.metadata.resourceVersion ?? '');
        throw new Error('no real write expected');
      }
      dryRuns.push(patch.metadata.resourceVersion ?? '');
      if (dryRuns.length <= opts.conflicts) throw conflict();
      return { warnings: ['numNodes changes'] };
    },
    setWorkloadActive: async () => {
      writes.push('workload');
    },
    observe: async (tj) => ({ trainJob: tj, pods: [], kueue: { queue: 'q', workloads: [] } }),
    allowed: async (r) => !opts.denied?.(r),
  };
  return { c, dryRuns, writes };
}

const args = (more: Partial<ScaleArgs> = {}): ScaleArgs => ({
  name: 't',
  namespace: 'ns',
  nodes: 2,
  dryRun: true,
  noResume: false,
  timeoutMs: 1000,
  ...more,
});

async function run(c: Cluster, a: ScaleArgs) {
  let out = '';
  let err = '';
  const code = await runScale(
    c,
    a,
    {
      out: { write: (t) => void (out += t), isTTY: false },
      err: (t) => void (err += `${t}\n`),
      interrupted: new AbortController().signal,
    },
    { program: 'kubectl trainjob' },
  );
  return { code, out, err };
}

describe('runScale before any write', () => {
  it('a conflict on the dry run reads the job again and tries again', async () => {
    const f = fakeCluster({ conflicts: 2 });
    const r = await run(f.c, args());
    assert.equal(r.code, 0, r.err);
    assert.deepEqual(f.dryRuns, ['1', '2', '3'], 'each try on the job as read again');
    assert.match(r.out, /scaled to 2 nodes \(server dry run\)/);
    assert.equal(r.err, 'Warning: numNodes changes\n');
  });

  it('conflicts that go on: shown as kubectl shows them after five tries', async () => {
    const f = fakeCluster({ conflicts: 99 });
    const r = await run(f.c, args());
    assert.equal(r.code, 1);
    assert.equal(f.dryRuns.length, 5);
    assert.match(r.err, /^Error from server \(Conflict\)/);
  });

  it('under Kueue, --no-resume without the right to patch Workloads: refused before any dry run', async () => {
    const f = fakeCluster({ conflicts: 0, denied: (r) => r.resource === 'workloads' && r.verb === 'patch' });
    const r = await run(f.c, args({ dryRun: false, noResume: true }));
    assert.equal(r.code, 1);
    assert.match(r.err, /^error: --no-resume under Kueue pauses the job through its Workload's spec\.active: false/);
    assert.deepEqual([f.dryRuns, f.writes], [[], []]);
  });

  it('under Kueue, a job --no-resume paused: ending that pause needs the same right, refused without it', async () => {
    const held = job('1', {
      annotations: { [PROGRESS_ANNOTATION]: '{"nodes":2,"step":"held","pausedBefore":false}' },
    });
    const f = fakeCluster({
      conflicts: 0,
      tj: held,
      denied: (r) => r.resource === 'workloads' && r.verb === 'patch',
    });
    const r = await run(f.c, args({ dryRun: false }));
    assert.equal(r.code, 1);
    assert.match(r.err, /resuming it sets spec\.active: true, and you may not patch workloads\.kueue\.x-k8s\.io/);
    assert.deepEqual([f.dryRuns, f.writes], [[], []]);
  });
});
