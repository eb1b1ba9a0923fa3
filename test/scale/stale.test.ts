// isJobSetStale, per ML policy, against JobSets the real Trainer v2.3.0 built.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isJobSetStale } from '../../src/scale/stale.ts';
import { expectedNodeShape, mlPolicyOf } from '../../src/scale/ml-policy.ts';
import type { JobSet, Runtime, TrainJob } from '../../src/api/objects.ts';
import { torch1, trainJob, trainerJobSet, upstreamRuntime, withCount } from '../rebuild/fixtures.ts';

const torch = upstreamRuntime('torch');
const deepspeed = upstreamRuntime('deepspeed');
const plain: Runtime = {
  ...structuredClone(torch),
  name: 'plain',
  spec: { ...structuredClone(torch.spec), mlPolicy: { numNodes: 1 } },
};
const noLauncherNode: Runtime = structuredClone(deepspeed);
noLauncherNode.spec.mlPolicy!.mpi!.runLauncherAsNode = false;
const mpiJob = (numNodes?: number): TrainJob =>
  trainJob('mpi', numNodes === undefined ? {} : { trainer: { numNodes } }, 'deepspeed-distributed');

function withoutPet(js: JobSet): JobSet {
  const copy = structuredClone(js);
  for (const c of copy.spec?.replicatedJobs?.[0].template?.spec?.template?.spec?.containers ?? [])
    c.env = c.env?.filter((e) => !e.name.startsWith('PET_'));
  return copy;
}

interface Row {
  name: string;
  trainJob: TrainJob;
  runtime: Runtime;
  jobSet: JobSet;
  verdict: 'current' | 'stale' | 'unknown';
  from?: number;
  to?: number;
  differences?: RegExp[];
  reason?: RegExp;
}

const rows: Row[] = [
  // No mlPolicy and no numNodes: Trainer keeps the trainer job's parallelism from the runtime.
  {
    name: 'no mlPolicy, no numNodes: the runtime trainer job parallelism (3) stands',
    trainJob: (() => {
      const t = torch1(1);
      delete t.spec!.trainer!.numNodes;
      return t;
    })(),
    runtime: (() => {
      const r = structuredClone(torch);
      delete r.spec.mlPolicy;
      r.spec.template!.spec!.replicatedJobs![0].template!.spec!.parallelism = 3;
      return r;
    })(),
    jobSet: withCount(trainerJobSet('torch1'), 'node', 3, false),
    verdict: 'current',
    from: 3,
    to: 3,
  },
  // torch: parallelism and completions of the trainer-labelled job, and PET_NNODES
  {
    name: 'torch, numNodes unchanged',
    trainJob: torch1(1),
    runtime: torch,
    jobSet: trainerJobSet('torch1'),
    verdict: 'current',
    from: 1,
    to: 1,
  },
  {
    name: 'torch, numNodes 1 -> 2',
    trainJob: torch1(2),
    runtime: torch,
    jobSet: trainerJobSet('torch1'),
    verdict: 'stale',
    from: 1,
    to: 2,
    differences: [
      /\[node\]\.template\.spec\.parallelism is 1, want 2/,
      /completions is 1, want 2/,
      /env\[PET_NNODES\] is "1", want "2"/,
    ],
  },
  {
    name: 'torch, numNodes 2 -> 1',
    trainJob: torch1(1),
    runtime: torch,
    jobSet: withCount(trainerJobSet('torch1'), 'node', 2),
    verdict: 'stale',
    from: 2,
    to: 1,
  },
  {
    name: 'torch, numNodes unset: the runtime mlPolicy.numNodes (1)',
    trainJob: torch1(1, (t) => delete t.spec!.trainer!.numNodes),
    runtime: torch,
    jobSet: trainerJobSet('torch1'),
    verdict: 'current',
    to: 1,
  },
  {
    name: 'torch, numNodes 0 (allowed with a warning) is a change too',
    trainJob: torch1(0),
    runtime: torch,
    jobSet: trainerJobSet('torch1'),
    verdict: 'stale',
    from: 1,
    to: 0,
  },
  {
    name: 'torch, only PET_NNODES stale (parallelism already patched, e.g. ElasticJobSet)',
    trainJob: torch1(2),
    runtime: torch,
    jobSet: withCount(trainerJobSet('torch1'), 'node', 2, false),
    verdict: 'stale',
    differences: [/PET_NNODES\] is "1", want "2"/],
  },
  {
    name: 'torch, no PET_NNODES (torchtune entrypoint): parallelism alone decides',
    trainJob: torch1(1),
    runtime: torch,
    jobSet: withoutPet(trainerJobSet('torch1')),
    verdict: 'current',
  },
  {
    name: 'torchtune runtime, numNodes 1 -> 2',
    trainJob: trainJob('ttpub', { trainer: { numNodes: 2 } }, 'torchtune-llama3.2-1b'),
    runtime: upstreamRuntime('torchtune'),
    jobSet: trainerJobSet('ttpub'),
    verdict: 'stale',
    from: 1,
    to: 2,
  },
  // plain (no policy source): parallelism only
  {
    name: 'plain, numNodes 1 -> 3',
    trainJob: torch1(3),
    runtime: plain,
    jobSet: withoutPet(trainerJobSet('torch1')),
    verdict: 'stale',
    from: 1,
    to: 3,
    differences: [/parallelism is 1, want 3/, /completions is 1, want 3/],
  },
  {
    name: 'plain, unchanged',
    trainJob: torch1(1),
    runtime: plain,
    jobSet: withoutPet(trainerJobSet('torch1')),
    verdict: 'current',
  },
  // MPI: the `node` job gets max(numNodes - 1, 1) with runLauncherAsNode
  {
    name: 'mpi (runLauncherAsNode), numNodes 1: node 1',
    trainJob: mpiJob(1),
    runtime: deepspeed,
    jobSet: trainerJobSet('mpi'),
    verdict: 'current',
    from: 1,
    to: 1,
  },
  {
    name: 'mpi (runLauncherAsNode), 1 -> 2 only moves the hostfile: no rebuild',
    trainJob: mpiJob(2),
    runtime: deepspeed,
    jobSet: trainerJobSet('mpi'),
    verdict: 'current',
    from: 1,
    to: 1,
  },
  {
    name: 'mpi (runLauncherAsNode), 2 -> 3: node 1 -> 2',
    trainJob: mpiJob(3),
    runtime: deepspeed,
    jobSet: trainerJobSet('mpi'),
    verdict: 'stale',
    from: 1,
    to: 2,
    differences: [/\[node\]\.template\.spec\.parallelism is 1, want 2/, /completions is 1, want 2/],
  },
  {
    name: 'mpi (runLauncherAsNode), 3 -> 1: node 2 -> 1',
    trainJob: mpiJob(1),
    runtime: deepspeed,
    jobSet: withCount(trainerJobSet('mpi'), 'node', 2),
    verdict: 'stale',
    from: 2,
    to: 1,
  },
  {
    name: 'mpi without runLauncherAsNode, 1 -> 2: node 1 -> 2',
    trainJob: mpiJob(2),
    runtime: noLauncherNode,
    jobSet: trainerJobSet('mpi'),
    verdict: 'stale',
    from: 1,
    to: 2,
  },
  {
    name: 'mpi, numNodes unset: the runtime node parallelism stays',
    trainJob: mpiJob(),
    runtime: deepspeed,
    jobSet: trainerJobSet('mpi'),
    verdict: 'current',
  },
  {
    name: 'mpi: the launcher carries the trainer label but is not the count',
    trainJob: mpiJob(3),
    runtime: deepspeed,
    jobSet: withCount(trainerJobSet('mpi'), 'launcher', 2),
    verdict: 'stale',
    from: 1,
    to: 2,
  },
  // left alone and reported
  {
    name: 'unknown policy (paddle)',
    trainJob: torch1(2),
    runtime: { ...torch, spec: { ...torch.spec, mlPolicy: { numNodes: 1, paddle: {} } } },
    jobSet: trainerJobSet('torch1'),
    verdict: 'unknown',
    reason: /ML policy "paddle"/,
  },
  {
    name: 'two policy sources',
    trainJob: torch1(2),
    runtime: { ...torch, spec: { ...torch.spec, mlPolicy: { torch: {}, mpi: {} } } },
    jobSet: trainerJobSet('torch1'),
    verdict: 'unknown',
    reason: /"mpi\+torch"/,
  },
  {
    name: 'a JobSet without the trainer-labelled job',
    trainJob: torch1(2),
    runtime: torch,
    jobSet: (() => {
      const js = trainerJobSet('torch1');
      delete js.spec!.replicatedJobs![0].template!.metadata!.labels;
      return js;
    })(),
    verdict: 'unknown',
    reason: /has no replicated job labelled trainer\.kubeflow\.org\/trainjob-ancestor-step=trainer/,
  },
  {
    name: 'mpi JobSet without a node job',
    trainJob: mpiJob(3),
    runtime: deepspeed,
    jobSet: {
      ...trainerJobSet('mpi'),
      spec: { replicatedJobs: trainerJobSet('mpi').spec!.replicatedJobs!.filter((r) => r.name !== 'node') },
    },
    verdict: 'unknown',
    reason: /no replicated job named "node"/,
  },
];

describe('isJobSetStale', () => {
  for (const row of rows) {
    it(`${row.name}: ${row.verdict}`, () => {
      const got = isJobSetStale(row.trainJob, row.runtime, row.jobSet);
      assert.equal(got.verdict, row.verdict, JSON.stringify(got));
      if (got.verdict === 'unknown') {
        if (row.reason) assert.match(got.reason, row.reason);
        return;
      }
      if (row.from !== undefined) assert.equal(got.counts.from, row.from);
      if (row.to !== undefined) assert.equal(got.counts.to, row.to);
      if (got.verdict === 'stale' && row.differences) {
        assert.equal(got.differences.length, row.differences.length, got.differences.join('\n'));
        row.differences.forEach((re, i) => assert.match(got.differences[i], re));
      }
    });
  }
});

describe('mlPolicyOf and expectedNodeShape', () => {
  it('reads the policy of each upstream runtime', () => {
    assert.deepEqual(mlPolicyOf(torch), { kind: 'torch' });
    assert.deepEqual(mlPolicyOf(deepspeed), { kind: 'mpi', runLauncherAsNode: true });
    assert.deepEqual(mlPolicyOf(upstreamRuntime('torchtune')), { kind: 'torch' });
    assert.deepEqual(mlPolicyOf(plain), { kind: 'plain' });
    assert.deepEqual(mlPolicyOf({ kind: 'TrainingRuntime', name: 'x', spec: {} }), { kind: 'plain' });
  });

  it('numNodes: the TrainJob, else the runtime, else 1', () => {
    const shape = (t: TrainJob, r: Runtime) => {
      const s = expectedNodeShape(t, r);
      assert.ok(s.known);
      return s.shape.count;
    };
    assert.equal(shape(torch1(4), torch), 4);
    const unset = torch1(1, (t) => delete t.spec!.trainer);
    assert.equal(shape(unset, { ...torch, spec: { ...torch.spec, mlPolicy: { numNodes: 3, torch: {} } } }), 3);
    assert.equal(shape(unset, { ...torch, spec: { ...torch.spec, mlPolicy: { torch: {} } } }), 1);
  });
});
