// The one judgment of whether a count change can be carried out (src/scale/scale-judgment.ts),
// as a table over every stock runtime of Trainer v2.3.0 (upstream/runtimes/) and the variants a
// user's own runtime may take, in both modes.
import { TRAINER_LINES, UNKNOWN_TRAINER_LINE } from '../../src/api/trainer-line.ts';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { JobSet, Runtime } from '../../src/api/objects.ts';
import type { Mode } from '../../src/api/names.ts';
import { judgeScale } from '../../src/scale/scale-judgment.ts';
import { trainJob, upstreamRuntime } from '../rebuild/fixtures.ts';

const jobSet = (spec: JobSet['spec'] = {}, status?: JobSet['status']): JobSet => ({
  metadata: { name: 'job', namespace: 'ns', uid: 'js-uid' },
  spec: { suspend: true, replicatedJobs: [], ...spec },
  ...(status ? { status } : {}),
});

const edited = (runtime: Runtime, change: (r: Runtime) => void): Runtime => {
  const copy = structuredClone(runtime);
  change(copy);
  return copy;
};

const noAncestor = edited(upstreamRuntime('torch'), (r) => {
  for (const j of r.spec.template?.spec?.replicatedJobs ?? []) delete j.template?.metadata?.labels;
});
const unknownPolicy = edited(upstreamRuntime('torch'), (r) => (r.spec.mlPolicy = { numNodes: 1, paddle: {} }));
const twoPolicies = edited(upstreamRuntime('torch'), (r) => (r.spec.mlPolicy = { numNodes: 1, torch: {}, jax: {} }));
const plain = edited(upstreamRuntime('torch'), (r) => (r.spec.mlPolicy = { numNodes: 1 }));
const claims = [{ templates: [{ metadata: { name: 'workspace' }, spec: {} }] }];
const withClaims = edited(upstreamRuntime('torch'), (r) => {
  if (r.spec.template?.spec) r.spec.template.spec.volumeClaimPolicies = claims;
});
const coscheduled = edited(upstreamRuntime('torch'), (r) => (r.spec.podGroupPolicy = { coscheduling: {} }));
const volcano = edited(upstreamRuntime('torch'), (r) => (r.spec.podGroupPolicy = { volcano: {} }));

interface Row {
  name: string;
  runtime: Runtime;
  mode: Mode;
  jobSet?: JobSet;
  cacheUri?: boolean;
  want: 'carried-out' | RegExp;
}

const rows: Row[] = [
  {
    name: 'torch, companion',
    runtime: upstreamRuntime('torch'),
    mode: 'companion',
    jobSet: jobSet(),
    want: 'carried-out',
  },
  {
    name: 'torch, standalone',
    runtime: upstreamRuntime('torch'),
    mode: 'standalone',
    jobSet: jobSet(),
    want: 'carried-out',
  },
  {
    name: 'DeepSpeed (MPI), companion',
    runtime: upstreamRuntime('deepspeed'),
    mode: 'companion',
    jobSet: jobSet(),
    want: 'carried-out',
  },
  {
    name: 'MLX (MPI, launcher as node), companion',
    runtime: upstreamRuntime('mlx'),
    mode: 'companion',
    jobSet: jobSet(),
    want: 'carried-out',
  },
  { name: 'JAX, companion', runtime: upstreamRuntime('jax'), mode: 'companion', jobSet: jobSet(), want: 'carried-out' },
  {
    name: 'XGBoost, companion',
    runtime: upstreamRuntime('xgboost'),
    mode: 'companion',
    jobSet: jobSet(),
    want: 'carried-out',
  },
  {
    name: 'no ML policy (PlainML), companion',
    runtime: plain,
    mode: 'companion',
    jobSet: jobSet(),
    want: 'carried-out',
  },
  { name: 'no ML policy, standalone', runtime: plain, mode: 'standalone', jobSet: jobSet(), want: 'carried-out' },
  {
    name: 'DeepSpeed, standalone: MPI is not built here',
    runtime: upstreamRuntime('deepspeed'),
    mode: 'standalone',
    jobSet: jobSet(),
    want: /standalone mode .* does not build the mpi policy's JobSet/,
  },
  {
    name: 'JAX, standalone',
    runtime: upstreamRuntime('jax'),
    mode: 'standalone',
    jobSet: jobSet(),
    want: 'carried-out',
  },
  {
    name: 'an unknown ML policy is refused with its name',
    runtime: unknownPolicy,
    mode: 'companion',
    jobSet: jobSet(),
    want: /the ML policy "paddle" of ClusterTrainingRuntime torch-distributed is not one whose JobSet can be rebuilt/,
  },
  {
    name: 'two ML policies at once',
    runtime: twoPolicies,
    mode: 'companion',
    jobSet: jobSet(),
    want: /the ML policy "jax\+torch"/,
  },
  {
    name: 'a runtime without the trainer-ancestor job',
    runtime: noAncestor,
    mode: 'companion',
    jobSet: jobSet(),
    want: /has no replicated job labelled trainer\.kubeflow\.org\/trainjob-ancestor-step=trainer, so Trainer puts numNodes nowhere/,
  },
  {
    name: 'a runtime without the trainer-ancestor job, even before a JobSet exists',
    runtime: noAncestor,
    mode: 'companion',
    want: /puts numNodes nowhere/,
  },
  {
    name: 'workspace claims on the JobSet (torchtune)',
    runtime: upstreamRuntime('torchtune'),
    mode: 'companion',
    jobSet: jobSet({ volumeClaimPolicies: claims }),
    want: /has workspace claims .* refuses to re-create it beside the existing claims/,
  },
  {
    name: "workspace claims in the runtime, the JobSet's not read yet",
    runtime: withClaims,
    mode: 'standalone',
    jobSet: jobSet(),
    want: /workspace claims/,
  },
  {
    name: 'workspace claims, but no JobSet yet: built with the new count from the start',
    runtime: withClaims,
    mode: 'companion',
    want: 'carried-out',
  },
  {
    name: 'gang-scheduled (coscheduling), companion: the PodGroup is rebuilt',
    runtime: coscheduled,
    mode: 'companion',
    jobSet: jobSet(),
    want: 'carried-out',
  },
  {
    name: 'gang-scheduled (Volcano), companion',
    runtime: volcano,
    mode: 'companion',
    jobSet: jobSet(),
    want: 'carried-out',
  },
  {
    name: 'gang-scheduled, standalone: no PodGroup is built there',
    runtime: coscheduled,
    mode: 'standalone',
    jobSet: jobSet(),
    want: /gang-scheduled \(podGroupPolicy coscheduling\), and in standalone mode the reconciler builds no PodGroup/,
  },
  {
    name: 'a gang scheduler Trainer v2.3.0 has no plugin for',
    runtime: edited(upstreamRuntime('torch'), (r) => (r.spec.podGroupPolicy = { kai: {} })),
    mode: 'companion',
    jobSet: jobSet(),
    want: /gang-scheduled by kai, whose PodGroup is not rebuilt/,
  },
  {
    name: 'the data-cache runtime: its cache objects are cleared before the rebuild (initializers.ts)',
    runtime: upstreamRuntime('torchCache'),
    mode: 'companion',
    jobSet: jobSet(),
    want: 'carried-out',
  },
  {
    name: 'a cache:// dataset on the plain torch runtime',
    runtime: upstreamRuntime('torch'),
    mode: 'companion',
    jobSet: jobSet(),
    cacheUri: true,
    want: 'carried-out',
  },
  {
    name: 'a finished JobSet',
    runtime: upstreamRuntime('torch'),
    mode: 'companion',
    jobSet: jobSet({}, { conditions: [{ type: 'Completed', status: 'True' }] }),
    want: /is Completed .* never rebuilt/,
  },
];

/** The rows that expect a refusal, each with its judgment of numNodes 3 under Trainer v2.3.0. */
const judgedRefusalRows = () =>
  rows
    .filter((r) => r.want !== 'carried-out')
    .map((row) => ({
      row,
      judged: judgeScale({
        trainer: TRAINER_LINES['v2.3.0'],
        mode: row.mode,
        trainJob: trainJob('job', { trainer: { numNodes: 3 } }),
        runtime: row.runtime,
        jobSet: row.jobSet,
      }),
    }));

describe('judgeScale: can a count change be carried out', () => {
  for (const row of rows) {
    it(row.name, () => {
      const tj = trainJob('job', {
        trainer: { numNodes: 2 },
        ...(row.cacheUri ? { initializer: { dataset: { storageUri: 'cache://iceberg/table' } } } : {}),
      });
      const judged = judgeScale({
        trainer: TRAINER_LINES['v2.3.0'],
        mode: row.mode,
        trainJob: tj,
        runtime: row.runtime,
        jobSet: row.jobSet,
      });
      if (row.want === 'carried-out') assert.equal(judged.kind, 'carried-out', JSON.stringify(judged));
      else {
        assert.equal(judged.kind, 'refused');
        if (judged.kind === 'refused') {
          assert.match(judged.reason, row.want);
          assert.ok(judged.wayOut.length > 0);
        }
      }
    });
  }

  it('every refusal says its reason in general words too: no runtime, JobSet or ML policy named (for a caller not known to be the API server)', () => {
    let refusals = 0;
    for (const { row, judged } of judgedRefusalRows()) {
      if (judged.kind !== 'refused') continue;
      refusals++;
      assert.doesNotMatch(judged.general, /TrainingRuntime|JobSet (?!v0)\S+ (has|is)|ML policy "/, row.name);
      assert.match(judged.general, /^(its |the ML policy of its runtime|in standalone mode)/, row.name);
      assert.ok(judged.general.length > 0, row.name);
    }
    assert.ok(refusals > 5);
  });

  it('every refusal names a way out', () => {
    for (const { row, judged } of judgedRefusalRows()) {
      if (judged.kind === 'refused') assert.match(judged.wayOut, /numNodes|runtime/, row.name);
    }
  });

  it('a way out that sets numNodes back says how for a running job (the CRD refuses numNodes alone while it runs)', () => {
    let named = 0;
    for (const { row, judged } of judgedRefusalRows()) {
      if (judged.kind !== 'refused' || !/numNodes back/.test(judged.wayOut)) continue;
      named++;
      assert.match(
        judged.wayOut,
        /numNodes back \(if it runs, with "suspend": true in the same update, then resume it\)/,
        row.name,
      );
    }
    assert.ok(named > 0);
  });

  it('Flux with numNodes removed: refused, Trainer v2.3.0 cannot build it', () => {
    const flux = edited(upstreamRuntime('torch'), (r) => (r.spec.mlPolicy = { numNodes: 1, flux: {} }));
    const judged = judgeScale({
      trainer: TRAINER_LINES['v2.3.0'],
      mode: 'companion',
      trainJob: trainJob('job', { trainer: {} }),
      runtime: flux,
      jobSet: jobSet(),
    });
    assert.equal(judged.kind, 'refused');
    if (judged.kind === 'refused')
      assert.match(judged.reason, /Flux policy, whose plugin in Trainer v2\.3\.0 needs spec\.trainer\.numNodes/);
  });

  it('claims judged live (the reconciler): left to its dry-run create', () => {
    const judged = judgeScale({
      trainer: TRAINER_LINES['v2.3.0'],
      mode: 'companion',
      trainJob: trainJob('job', { trainer: { numNodes: 2 } }),
      runtime: upstreamRuntime('torch'),
      jobSet: jobSet({ volumeClaimPolicies: claims }),
      claimsJudgedLive: true,
    });
    assert.equal(judged.kind, 'carried-out');
  });
});

describe('judgeScale per Trainer line', () => {
  const failedJob = () => {
    const tj = trainJob('job', { trainer: { numNodes: 2 } });
    tj.status = {
      conditions: [{ type: 'Failed', status: 'True', reason: 'FailedJobs', message: 'm', lastTransitionTime: 't' }],
    };
    return tj;
  };
  const built = jobSet({
    replicatedJobs: [
      {
        name: 'node',
        template: {
          metadata: { labels: { 'trainer.kubeflow.org/trainjob-ancestor-step': 'trainer' } },
          spec: { parallelism: 1 },
        },
      },
    ],
  });
  it('a Failed job: carried out on v2.2.1 and v2.3.0 (Trainer reconciles it again), refused on main and unknown', () => {
    const kinds = (['v2.2.1', 'v2.3.0', 'main-8c0f5059'] as const).map(
      (l) =>
        judgeScale({
          trainer: TRAINER_LINES[l],
          mode: 'companion',
          trainJob: failedJob(),
          runtime: upstreamRuntime('torch'),
          jobSet: built,
        }).kind,
    );
    assert.deepEqual(kinds, ['carried-out', 'carried-out', 'refused']);
    const unknown = judgeScale({
      trainer: UNKNOWN_TRAINER_LINE,
      mode: 'companion',
      trainJob: failedJob(),
      runtime: upstreamRuntime('torch'),
      jobSet: built,
    });
    assert.equal(unknown.kind, 'refused');
    if (unknown.kind === 'refused')
      assert.match(unknown.reason, /Failed \(FailedJobs\), which is final under an unknown Trainer version/);
  });
  it('standalone: refused under v2.2.1 and unknown (no build of theirs), carried out under v2.3.0 and main', () => {
    const judged = [
      TRAINER_LINES['v2.2.1'],
      UNKNOWN_TRAINER_LINE,
      TRAINER_LINES['v2.3.0'],
      TRAINER_LINES['main-8c0f5059'],
    ].map((trainer) =>
      judgeScale({
        trainer,
        mode: 'standalone',
        trainJob: trainJob('job', { trainer: { numNodes: 2 } }),
        runtime: upstreamRuntime('torch'),
        jobSet: built,
      }),
    );
    assert.deepEqual(
      judged.map((j) => j.kind),
      ['refused', 'refused', 'carried-out', 'carried-out'],
    );
    if (judged[0].kind === 'refused') assert.match(judged[0].wayOut, /companion mode/);
  });
});
