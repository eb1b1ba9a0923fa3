// The scale's loop against an in-memory cluster: what it writes (merge patches of only the fields it
// changes), when it stops (--timeout), and what it says at the end.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { JobSet, TrainJob } from '../../src/api/objects.ts';
import type { ScaleArgs } from '../../src/plugin/args.ts';
import { ApiRefusal, type Cluster } from '../../src/plugin/cluster.ts';
import type { TrainJobPatch } from '../../src/plugin/progress.ts';
import { runScale } from '../../src/plugin/scale-run.ts';

const jobSet = (parallelism: number): JobSet => ({
  metadata: { name: 't', uid: 'js1' },
  spec: {
    replicatedJobs: [
      {
        name: 'node',
        template: {
          metadata: { labels: { 'trainer.kubeflow.org/trainjob-ancestor-step': 'trainer' } },
          spec: { parallelism, completions: parallelism },
        },
      },
    ],
  },
});

/**
 * One TrainJob and what Trainer and the reconciler make of it: no pods while suspended, a JobSet
 * rebuilt for numNodes while suspended, numNodes pods scheduled while it runs.
 */
function fakeCluster(numNodes: number, suspend: boolean) {
  let rv = 1;
  let built = numNodes;
  let tj: TrainJob = {
    metadata: { name: 't', namespace: 'ns', uid: 'u1', resourceVersion: String(rv) },
    spec: { runtimeRef: { name: 'torch-distributed' }, suspend, trainer: { numNodes } },
  };
  const patches: { patch: TrainJobPatch; dryRun: boolean }[] = [];
  const cluster: Cluster = {
    namespace: 'ns',
    getTrainJob: async () => structuredClone(tj),
    listTrainJobs: async () => [structuredClone(tj)],
    async patchTrainJob(_name, patch, dryRun) {
      patches.push({ patch: structuredClone(patch), dryRun: dryRun === true });
      if (patch.metadata.resourceVersion !== tj.metadata.resourceVersion)
        throw new ApiRefusal({ code: 409, reason: 'Conflict', message: 'the object has been modified' });
      if (dryRun) return { warnings: [] };
      const annotations = { ...tj.metadata.annotations };
      for (const [k, v] of Object.entries(patch.metadata.annotations))
        if (v === null) delete annotations[k];
        else annotations[k] = v;
      const spec = { ...tj.spec, ...(patch.spec?.suspend === undefined ? {} : { suspend: patch.spec.suspend }) };
      if (patch.spec?.trainer) spec.trainer = { ...spec.trainer, numNodes: patch.spec.trainer.numNodes };
      tj = { metadata: { ...tj.metadata, annotations, resourceVersion: String(++rv) }, spec };
      return { warnings: [] };
    },
    setWorkloadActive: async () => undefined,
    async observe(t) {
      const nodes = t.spec?.trainer?.numNodes as number;
      if (t.spec?.suspend) built = nodes;
      return {
        trainJob: t,
        jobSet: jobSet(built),
        pods: t.spec?.suspend
          ? []
          : Array.from({ length: built }, (_, i) => ({
              name: `p${i}`,
              phase: 'Running',
              deleting: false,
              nodeName: `n${i}`,
              replicatedJob: 'node',
            })),
      };
    },
    allowed: async () => true,
  };
  return { cluster, patches, job: () => tj };
}

async function scale(c: Cluster, args: Partial<ScaleArgs>, now: () => number = Date.now) {
  let out = '';
  let err = '';
  const code = await runScale(
    c,
    { name: 't', namespace: 'ns', nodes: 2, dryRun: false, noResume: false, timeoutMs: 600_000, ...args },
    {
      out: { write: (t) => void (out += t), isTTY: false },
      err: (t) => void (err += `${t}\n`),
      interrupted: new AbortController().signal,
      now,
      pollMs: 0,
    },
    { program: 'kubectl trainjob' },
  );
  return { code, out, err };
}

describe('runScale', () => {
  it('writes merge patches of only the fields it changes, with the resourceVersion read', async () => {
    const f = fakeCluster(1, false);
    const r = await scale(f.cluster, {});
    assert.equal(r.code, 0, r.err);
    assert.deepEqual(f.patches[0], {
      dryRun: true,
      patch: {
        metadata: { resourceVersion: '1', annotations: { 'trainjob-webhook.kubeflow.org/scale-progress': null } },
        spec: { suspend: true, trainer: { numNodes: 2 } },
      },
    });
    assert.deepEqual(f.patches[1], {
      dryRun: false,
      patch: {
        metadata: {
          resourceVersion: '1',
          annotations: {
            'trainjob-webhook.kubeflow.org/scale-progress': '{"nodes":2,"step":"paused","pausedBefore":false}',
          },
        },
        spec: { suspend: true },
      },
    });
    assert.match(r.out, /scaled to 2 nodes \(/);
    assert.equal(f.job().spec?.suspend, false);
  });

  it('--no-resume on a running job already at the count pauses it, and says so only then', async () => {
    const f = fakeCluster(2, false);
    const r = await scale(f.cluster, { noResume: true });
    assert.equal(r.code, 0, r.err);
    assert.equal(f.job().spec?.suspend, true);
    assert.match(r.out, /^✓ pausing the job \(spec\.suspend: true\)/m);
    assert.match(r.out, /trainjob\.trainer\.kubeflow\.org\/t scaled to 2 nodes, suspended \(/);
  });

  it('--timeout 0 waits without a limit', async () => {
    const f = fakeCluster(1, false);
    let t = 0;
    // An hour passes between any two readings of the clock.
    const r = await scale(f.cluster, { timeoutMs: 0 }, () => (t += 3_600_000));
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /scaled to 2 nodes \(/);
    assert.equal(f.job().spec?.trainer?.numNodes, 2);
  });

  it('a --timeout is kept', async () => {
    const f = fakeCluster(1, false);
    let t = 0;
    const r = await scale(f.cluster, { timeoutMs: 60_000 }, () => (t += 3_600_000));
    assert.equal(r.code, 1);
    assert.match(r.err, /^error: timed out after/m);
  });
});
