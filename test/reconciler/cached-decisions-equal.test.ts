// The informers keep a narrowed, frozen, interned shape of each object (src/reconciler/
// cache-shape.ts). Every decision (src/rebuild/decide.ts) taken on those shapes must be the one
// taken on the whole objects: a table of TrainJob/JobSet/Job rows (MPI, DeepSpeed, MLX, JAX,
// XGBoost, torch at a stale env, Completed/Failed statuses, a gang runtime, a cache:// initializer,
// a refused resume), each suspended and running, in both modes, on both Trainer lines with
// different Failed rules. And the watch-event gate (decision-inputs.ts) never calls "unchanged" an
// event between two rows whose decisions differ (when what no watch sees is equal).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TRAINER_LINES } from '../../src/api/trainer-line.ts';
import type { Job, JobSet, TrainJob } from '../../src/api/objects.ts';
import { deepFreeze } from '../../src/cluster/stored-object.ts';
import { decide } from '../../src/rebuild/decide.ts';
import type { Decision, Observation } from '../../src/rebuild/decision.ts';
import type { Mode } from '../../src/api/names.ts';
import { cacheShapeFor } from '../../src/reconciler/cache-shape.ts';
import { eventChangesDecision, jobsView } from '../../src/reconciler/decision-inputs.ts';
import { digest } from '../../src/reconciler/view-digest.ts';
import { caseRuntime, caseTrainJob } from '../rebuild/trainer-cases.ts';
import {
  job,
  torch1,
  trainerJobSet,
  trainJob,
  upstreamRuntime,
  trainJobOwner,
  withCount,
} from '../rebuild/fixtures.ts';

/** What no watch brings: the answers to decide()'s needs. */
type Answers = Pick<
  Observation,
  'runtime' | 'cachedJobs' | 'children' | 'pvcs' | 'initializerObjects' | 'podGroups' | 'trainerRefusals'
>;

interface Row {
  name: string;
  trainJob: TrainJob;
  jobSet: JobSet;
  answers: Answers;
  /** The row sets suspend itself (TrainJob and JobSet differ): not varied. */
  ownSuspend?: boolean;
}

/** How each need of decide() is answered from a row (what is not in the row: none). */
const ANSWER: Record<string, (o: Observation, a: Answers) => void> = {
  runtime: (o, a) => (o.runtime = a.runtime),
  'cached-jobs': (o, a) => (o.cachedJobs = a.cachedJobs ?? []),
  children: (o, a) => (o.children = a.children ?? { jobs: [], pods: [] }),
  pvcs: (o, a) => (o.pvcs = a.pvcs ?? []),
  retained: (o) => (o.retained = []),
  recreate: (o) => (o.recreate = { admitted: true }),
  'initializer-objects': (o, a) => (o.initializerObjects = a.initializerObjects ?? []),
  podgroups: (o, a) => (o.podGroups = a.podGroups ?? []),
  'trainer-refusals': (o, a) => (o.trainerRefusals = a.trainerRefusals ?? []),
};

/** decide() until it acts or skips, every need answered from the row. */
function drive(o: Observation, a: Answers): Decision {
  for (let i = 0; i < 20; i++) {
    const d = decide(o);
    if (d.kind !== 'need') return d;
    const answer = ANSWER[d.what];
    if (!answer) throw new Error(`no answer for need ${d.what}`);
    answer(o, a);
  }
  throw new Error('decide() kept asking');
}

const AT = '2026-01-01T00:00:00Z';

/** The JobSet as the API server holds it once Trainer built it for `tj`: controlled by it. */
function ownedBy(js: JobSet, tj: TrainJob): JobSet {
  js.metadata = {
    ...js.metadata,
    uid: 'jobset-uid',
    resourceVersion: '5',
    creationTimestamp: '2025-12-31T00:00:00Z',
    ownerReferences: [trainJobOwner(tj)],
  };
  return js;
}

function found(runtime: ReturnType<typeof upstreamRuntime>): Answers['runtime'] {
  return { found: true, runtime };
}

function withStatus<T extends TrainJob | JobSet>(o: T, status: unknown): T {
  (o as { status?: unknown }).status = status;
  return o;
}

/** Sets one env var of the `node` container of the replicated job named `rJob`. */
function withEnv(js: JobSet, rJob: string, name: string, value: string): JobSet {
  const r = js.spec?.replicatedJobs?.find((x) => x.name === rJob);
  const env = r?.template?.spec?.template?.spec?.containers?.find((c) => c.name === 'node')?.env;
  const e = env?.find((x) => x.name === name);
  if (!e) throw new Error(`no env ${name} on ${rJob}`);
  e.value = value;
  return js;
}

function mpiRows(): Row[] {
  return (['deepspeed', 'mlx'] as const).flatMap((runtime) =>
    [1, 2, 3].map((numNodes) => {
      const tj = trainJob('mpi', { trainer: { numNodes } }, 'deepspeed-distributed');
      return {
        name: `${runtime} runtime, numNodes ${numNodes} over a JobSet built for 2`,
        trainJob: tj,
        jobSet: ownedBy(trainerJobSet('mpi'), tj),
        answers: { runtime: found(upstreamRuntime(runtime)) },
      };
    }),
  );
}

function envRows(): Row[] {
  const jax = caseTrainJob('jax');
  const torch = torch1(2);
  return [
    {
      name: 'jax at its count',
      trainJob: jax,
      jobSet: ownedBy(trainerJobSet('jax'), jax),
      answers: { runtime: found(caseRuntime('jax')) },
    },
    {
      name: 'jax at its count, JAX_NUM_PROCESSES stale',
      trainJob: jax,
      jobSet: ownedBy(withEnv(trainerJobSet('jax'), 'node', 'JAX_NUM_PROCESSES', '1'), jax),
      answers: { runtime: found(caseRuntime('jax')) },
    },
    {
      name: 'torch at its count, PET_NNODES stale',
      trainJob: torch,
      jobSet: ownedBy(withCount(trainerJobSet('torch1'), 'node', 2, false), torch),
      answers: { runtime: found(upstreamRuntime('torch')) },
    },
    {
      name: 'xgboost at its count',
      trainJob: caseTrainJob('xgboost'),
      jobSet: ownedBy(trainerJobSet('xgboost'), caseTrainJob('xgboost')),
      answers: { runtime: found(caseRuntime('xgboost')) },
    },
  ];
}

const condition = (type: string, reason: string) => ({
  type,
  status: 'True',
  reason,
  message: 'm',
  lastTransitionTime: AT,
});

function statusRows(): Row[] {
  const torch = () => ({ runtime: found(upstreamRuntime('torch')) });
  const completed = torch1(2);
  const failed = torch1(2);
  const tjFailed = withStatus(torch1(2), {
    conditions: [condition('Failed', 'X'), { type: 'Created', status: 'True' }],
    jobsStatus: [{ name: 'node', failed: 1 }],
  });
  return [
    {
      name: 'JobSet Completed',
      trainJob: completed,
      jobSet: withStatus(ownedBy(trainerJobSet('torch1'), completed), {
        conditions: [condition('Completed', 'AllJobsCompleted')],
      }),
      answers: torch(),
    },
    {
      name: 'JobSet Failed',
      trainJob: failed,
      jobSet: withStatus(ownedBy(trainerJobSet('torch1'), failed), {
        conditions: [condition('Failed', 'FailedJobs')],
        replicatedJobsStatus: [{ name: 'node', failed: 1 }],
      }),
      answers: torch(),
    },
    {
      name: 'TrainJob Failed',
      trainJob: tjFailed,
      jobSet: ownedBy(trainerJobSet('torch1'), tjFailed),
      answers: torch(),
    },
  ];
}

function gangRow(): Row {
  const tj = torch1(2);
  const runtime = upstreamRuntime('torch');
  runtime.spec.podGroupPolicy = { coscheduling: {} };
  const owner = { apiVersion: 'trainer.kubeflow.org/v1alpha1', kind: 'TrainJob', name: 'torch1', controller: true };
  return {
    name: 'gang runtime with its PodGroup',
    trainJob: tj,
    jobSet: ownedBy(trainerJobSet('torch1'), tj),
    answers: {
      runtime: found(runtime),
      podGroups: [
        {
          scheduler: 'coscheduling',
          podGroup: {
            metadata: {
              name: 'torch1',
              uid: 'pg',
              resourceVersion: '1',
              ownerReferences: [{ ...owner, uid: tj.metadata.uid ?? '' }],
            },
            spec: { minMember: 1 },
          },
        },
      ],
    },
  };
}

function runningJobRow(): Row {
  const tj = torch1(2);
  const running: Job = job('torch1-node-0', {
    spec: { suspend: false },
    status: { active: 1, conditions: [{ type: 'Suspended', status: 'False' }] },
  });
  return {
    name: 'a Job with an active pod',
    trainJob: tj,
    jobSet: ownedBy(trainerJobSet('torch1'), tj),
    answers: { runtime: found(upstreamRuntime('torch')), cachedJobs: [running] },
  };
}

function cacheInitializerRow(): Row {
  const uri = 'cache://t/x';
  const tj = trainJob(
    'torch1',
    { trainer: { numNodes: 2 }, initializer: { dataset: { storageUri: uri } } },
    'torch-distributed-with-cache',
  );
  const js = ownedBy(withCount(trainerJobSet('torch1'), 'node', 1), tj);
  const env = [
    { name: 'STORAGE_URI', value: uri },
    { name: 'CACHE_IMAGE', value: 'c' },
    {
      name: 'TRAIN_JOB_NAME',
      valueFrom: { fieldRef: { fieldPath: "metadata.labels['jobset.sigs.k8s.io/jobset-name']" } },
    },
  ];
  js.spec?.replicatedJobs?.unshift({
    name: 'dataset-initializer',
    template: {
      metadata: { labels: { 'trainer.kubeflow.org/trainjob-ancestor-step': 'dataset-initializer' } },
      spec: { template: { spec: { containers: [{ name: 'dataset-initializer', image: 'i', env }] } } },
    },
  });
  const owner = { apiVersion: 'trainer.kubeflow.org/v1alpha1', kind: 'TrainJob', name: 'torch1', controller: true };
  return {
    name: 'cache:// dataset initializer with its ServiceAccount',
    trainJob: tj,
    jobSet: js,
    answers: {
      runtime: found(upstreamRuntime('torchCache')),
      initializerObjects: [
        {
          ref: { apiVersion: 'v1', kind: 'ServiceAccount', name: 'torch1-cache' },
          metadata: {
            name: 'torch1-cache',
            uid: 'sa',
            resourceVersion: '1',
            ownerReferences: [{ ...owner, uid: tj.metadata.uid ?? '' }],
          },
        },
      ],
    },
  };
}

function refusedResumeRow(): Row {
  const tj = withStatus(torch1(1), { conditions: [{ ...condition('Suspended', 'Resumed'), status: 'False' }] });
  if (tj.spec) tj.spec.suspend = false;
  const js = ownedBy(trainerJobSet('torch1'), tj);
  if (js.spec) js.spec.suspend = true;
  return {
    name: 'resume refused by the JobSet webhook',
    trainJob: tj,
    jobSet: js,
    ownSuspend: true,
    answers: {
      runtime: found(upstreamRuntime('torch')),
      trainerRefusals: [
        {
          at: '2026-01-01T00:00:01Z',
          created: '2026-01-01T00:00:01Z',
          message: 'jobset x: spec.replicatedJobs: Invalid value: [{...',
          event: 'e',
          version: '10',
          series: { count: 2 },
        },
      ],
    },
  };
}

const ROWS: Row[] = [
  ...mpiRows(),
  ...envRows(),
  ...statusRows(),
  gangRow(),
  runningJobRow(),
  cacheInitializerRow(),
  refusedResumeRow(),
];

const LINES = ['v2.3.0', 'main-8c0f5059'] as const;
const MODES: Mode[] = ['companion', 'standalone'];

/** One row as observed: suspended or running (unless the row fixes it), whole and as cached. */
interface Variant {
  name: string;
  row: Row;
  trainJob: TrainJob;
  jobSet: JobSet;
}

function variants(): Variant[] {
  return ROWS.flatMap((row) =>
    (row.ownSuspend ? [undefined] : [true, false]).map((suspend) => {
      const trainJob = structuredClone(row.trainJob);
      const jobSet = structuredClone(row.jobSet);
      if (suspend !== undefined && trainJob.spec && jobSet.spec) trainJob.spec.suspend = jobSet.spec.suspend = suspend;
      const state = suspend === undefined ? '' : suspend ? ', suspended' : ', running';
      return { name: `${row.name}${state}`, row, trainJob, jobSet };
    }),
  );
}

function decisions(v: Variant, mode: Mode, line: (typeof LINES)[number]): { whole: Decision; kept: Decision } {
  const shape = cacheShapeFor(mode);
  const base = {
    mode,
    trainer: TRAINER_LINES[line],
    now: '2026-01-01T00:10:00Z',
    fieldManager: 'trainjob-webhook-reconciler',
  };
  const whole = drive(
    { ...base, trainJob: structuredClone(v.trainJob), jobSet: structuredClone(v.jobSet) },
    structuredClone(v.row.answers),
  );
  const answers = structuredClone(v.row.answers);
  answers.cachedJobs = answers.cachedJobs?.map((j) => deepFreeze(shape.job(j) as Job));
  const kept = drive(
    {
      ...base,
      trainJob: deepFreeze(shape.trainJob(v.trainJob) as TrainJob),
      jobSet: deepFreeze(shape.jobSet(v.jobSet) as JobSet),
    },
    answers,
  );
  return { whole, kept };
}

/** What no watch event carries, equal between two rows: then only the watched objects can tell them apart. */
function sameUnwatched(a: Answers, b: Answers): boolean {
  const { cachedJobs: _a, ...restA } = a;
  const { cachedJobs: _b, ...restB } = b;
  return digest(restA) === digest(restB);
}

/** Would some watch event between `a` and `b` be let through by the gate? */
function gateSeesChange(mode: Mode, a: Variant, b: Variant): boolean {
  return (
    eventChangesDecision('trainjob', mode, a.trainJob, b.trainJob) ||
    eventChangesDecision('jobset', mode, a.jobSet, b.jobSet) ||
    digest(jobsView(a.row.answers.cachedJobs ?? [])) !== digest(jobsView(b.row.answers.cachedJobs ?? []))
  );
}

const VARIANTS = variants();

for (const mode of MODES)
  for (const line of LINES)
    describe(`cached shapes decide as whole objects: ${mode} mode, Trainer ${line}`, () => {
      const taken = VARIANTS.map((v) => ({ v, ...decisions(v, mode, line) }));
      for (const { v, whole, kept } of taken)
        it(v.name, () => {
          assert.deepEqual(kept, whole);
        });

      it('the watch-event gate lets through every change between rows whose decisions differ', () => {
        let pairs = 0;
        for (const a of taken)
          for (const b of taken) {
            if (a === b || !sameUnwatched(a.v.row.answers, b.v.row.answers)) continue;
            if (digest(a.whole) === digest(b.whole)) continue;
            pairs++;
            assert.ok(
              gateSeesChange(mode, a.v, b.v),
              `${a.v.name} -> ${b.v.name}: decisions differ, gate says unchanged`,
            );
          }
        // The table must hold pairs that test the gate at all.
        assert.ok(pairs > 10, `only ${pairs} pairs with differing decisions`);
      });
    });
