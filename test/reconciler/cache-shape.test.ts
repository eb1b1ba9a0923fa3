// What the watches keep of each object (src/reconciler/cache-shape.ts): a table of what is kept
// and dropped, and the decisions taken on the kept shape equal to those taken on the whole
// objects, for the JobSets the real Trainer v2.3.0 built (test/rebuild/fixtures), at the count
// they were built for and at another, suspended and running, in both modes, every need answered.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TRAINER_LINES } from '../../src/api/trainer-line.ts';
import type { JobSet, TrainJob } from '../../src/api/objects.ts';
import { decide } from '../../src/rebuild/decide.ts';
import type { Decision, Observation } from '../../src/rebuild/decision.ts';
import {
  cacheShapeFor,
  jobForCache,
  jobSetForCache,
  LAST_APPLIED_ANNOTATION,
  trainJobForCache,
} from '../../src/reconciler/cache-shape.ts';
import {
  ANCESTOR_LABEL,
  JOBSET_NAME_LABEL,
  REFUSAL_SEEN_ANNOTATION,
  REPORT_ANNOTATION,
  type Mode,
} from '../../src/api/names.ts';
import { caseRuntime, caseTrainJob, CASES, type CaseName } from '../rebuild/trainer-cases.ts';
import { job, torch1, trainerJobSet, trainJob, upstreamRuntime, withCount } from '../rebuild/fixtures.ts';

const managedFields = [
  { manager: 'trainer', operation: 'Apply', fieldsV1: { 'f:spec': { 'f:suspend': {}, 'f:replicatedJobs': {} } } },
  { manager: 'jobset', operation: 'Update', subresource: 'status', fieldsV1: { 'f:status': {} } },
];

const runningJobSet = (js: JobSet) => ({
  ...js,
  metadata: {
    ...js.metadata,
    resourceVersion: '7',
    creationTimestamp: '2026-01-01T00:00:00Z',
    labels: { 'trainer.kubeflow.org/trainjob-name': 'x' },
    managedFields,
  },
  status: {
    conditions: [
      { type: 'Suspended', status: 'True', reason: 'SuspendedJobs' },
      { type: 'Completed', status: 'False', reason: 'x' },
    ],
    replicatedJobsStatus: [{ name: 'node', ready: 0, suspended: 1 }],
    restarts: 0,
  },
});

describe('cache shape: what is kept', () => {
  it('a TrainJob, companion: its identity, the two annotations written here, the spec fields read, the read conditions', () => {
    const tj = torch1(2);
    const whole = {
      ...tj,
      metadata: {
        ...tj.metadata,
        labels: { 'kueue.x-k8s.io/queue-name': 'q' },
        managedFields,
        annotations: {
          [LAST_APPLIED_ANNOTATION]: JSON.stringify(tj),
          [REPORT_ANNOTATION]: '{"state":"Rebuilt"}',
          [REFUSAL_SEEN_ANNOTATION]: 'e/2@t',
          other: 'dropped',
        },
      },
      status: {
        conditions: [
          { type: 'Suspended', status: 'True', reason: 'Suspended', lastTransitionTime: 'T' },
          { type: 'Created', status: 'True' },
        ],
        jobsStatus: [{ name: 'node', suspended: 1 }],
      },
    };
    assert.deepEqual(trainJobForCache(whole), {
      apiVersion: tj.apiVersion,
      kind: tj.kind,
      metadata: {
        ...tj.metadata,
        annotations: { [REPORT_ANNOTATION]: '{"state":"Rebuilt"}', [REFUSAL_SEEN_ANNOTATION]: 'e/2@t' },
      },
      spec: { runtimeRef: tj.spec!.runtimeRef, suspend: true, managedBy: tj.spec!.managedBy, trainer: { numNodes: 2 } },
      status: { conditions: [whole.status.conditions[0]] },
    });
  });

  it('a TrainJob, standalone: all but managedFields and the last-applied annotation (the build reads the spec)', () => {
    const tj = torch1(2);
    const whole = {
      ...tj,
      metadata: { ...tj.metadata, managedFields, annotations: { [LAST_APPLIED_ANNOTATION]: '{}', other: 'kept' } },
      status: { conditions: [{ type: 'Created', status: 'True' }], jobsStatus: [{ name: 'node', suspended: 1 }] },
    };
    assert.deepEqual(trainJobForCache(whole, 'standalone'), {
      ...tj,
      metadata: { ...tj.metadata, annotations: { other: 'kept' } },
      status: whole.status,
    });
  });

  it('a malformed TrainJob is kept as before (all but managedFields): the decisions report the same field', () => {
    const tj = torch1(2, (t) => ((t.spec!.trainer as Record<string, unknown>).image = 7));
    const kept = trainJobForCache({ ...tj, metadata: { ...tj.metadata, managedFields } })!;
    assert.equal(kept.spec?.trainer?.image, 7);
    assert.equal((kept.metadata as { managedFields?: unknown }).managedFields, undefined);
  });

  it('a JobSet of a TrainJob: identity, controller, suspend owners, counts, the ancestor label, only the compared env vars, Completed and Failed', () => {
    const whole = runningJobSet(trainerJobSet('ttpub'));
    const kept = jobSetForCache(whole)!;
    assert.deepEqual(kept.metadata, {
      name: 'ttpub',
      namespace: 'ns',
      uid: 'jobset-uid-ttpub',
      resourceVersion: '7',
      creationTimestamp: '2026-01-01T00:00:00Z',
      ownerReferences: [
        {
          apiVersion: 'trainer.kubeflow.org/v1alpha1',
          kind: 'TrainJob',
          name: 'ttpub',
          uid: 'trainjob-uid-ttpub',
          controller: true,
        },
      ],
      managedFields: [{ manager: 'trainer', fieldsV1: { 'f:spec': { 'f:suspend': {} } } }],
    });
    assert.deepEqual(kept.status, { conditions: [{ type: 'Completed', status: 'False', reason: 'x' }] });
    assert.deepEqual(kept.spec!.replicatedJobs, [
      {
        name: 'dataset-initializer',
        replicas: 1,
        template: {
          metadata: { labels: { [ANCESTOR_LABEL]: 'dataset-initializer' } },
          spec: {
            completions: 1,
            parallelism: 1,
            template: {
              spec: {
                containers: [
                  { name: 'dataset-initializer', env: [{ name: 'STORAGE_URI', value: 'hf://tatsu-lab/alpaca' }] },
                ],
              },
            },
          },
        },
      },
      {
        name: 'model-initializer',
        replicas: 1,
        template: {
          metadata: { labels: { [ANCESTOR_LABEL]: 'model-initializer' } },
          spec: {
            completions: 1,
            parallelism: 1,
            template: {
              spec: {
                containers: [
                  {
                    name: 'model-initializer',
                    env: [{ name: 'STORAGE_URI', value: 'hf://meta-llama/Llama-3.2-1B-Instruct' }],
                  },
                ],
              },
            },
          },
        },
      },
      {
        name: 'node',
        replicas: 1,
        template: {
          metadata: { labels: { [ANCESTOR_LABEL]: 'trainer' } },
          spec: {
            completions: 1,
            parallelism: 1,
            template: { spec: { containers: [{ name: 'node', env: [{ name: 'PET_NNODES', value: '1' }] }] } },
          },
        },
      },
    ]);
    assert.deepEqual(kept.spec!.volumeClaimPolicies, whole.spec!.volumeClaimPolicies);
  });

  it('a JobSet, standalone: replicatedJobsStatus too (copied into the TrainJob status)', () => {
    const kept = jobSetForCache(runningJobSet(trainerJobSet('torch1')), 'standalone')!;
    assert.deepEqual(kept.status?.replicatedJobsStatus, [{ name: 'node', ready: 0, suspended: 1 }]);
  });

  it("a JobSet's compared env vars are kept whole: PET_NNODES, and cache.py's STORAGE_URI and TRAIN_JOB_NAME (valueFrom too)", () => {
    const js = trainerJobSet('torch1');
    const node = js.spec!.replicatedJobs!.find((r) => r.name === 'node')!.template!.spec!.template!.spec!
      .containers![0];
    const fieldRef = { name: 'TRAIN_JOB_NAME', valueFrom: { fieldRef: { fieldPath: 'x' } } };
    node.env = [...(node.env ?? []), fieldRef];
    const kept = jobSetForCache(js)!;
    const keptNode = kept.spec!.replicatedJobs!.find((r) => r.name === 'node')!.template!.spec!.template!.spec!
      .containers![0];
    assert.deepEqual(
      keptNode.env,
      node.env.filter((e) => ['PET_NNODES', 'TRAIN_JOB_NAME'].includes(e.name)),
    );
    assert.ok(keptNode.env!.some((e) => e.name === 'PET_NNODES'));
  });

  it('a malformed JobSet is kept as before (its replicated jobs whole): stale.ts reports the same field', () => {
    const js = trainerJobSet('torch1');
    js.spec!.replicatedJobs![0].template!.spec!.template!.spec!.containers![0].image = 5 as never;
    const kept = jobSetForCache(js)!;
    assert.deepEqual(kept.spec!.replicatedJobs, js.spec!.replicatedJobs);
  });

  it('a JobSet no TrainJob controls: its identity and owners alone', () => {
    const js = trainerJobSet('torch1');
    const foreign = {
      ...js,
      metadata: {
        ...js.metadata,
        ownerReferences: [{ apiVersion: 'x/v1', kind: 'Other', name: 'o', uid: 'u', controller: true }],
      },
    };
    const kept = jobSetForCache(foreign)!;
    assert.equal(kept.spec, undefined);
    assert.deepEqual(kept.metadata.ownerReferences, foreign.metadata.ownerReferences);
    assert.equal(kept.metadata.uid, js.metadata.uid);
  });

  it('a Job: its name and JobSet label, spec.suspend, the status counts and its Complete and Failed conditions (type, status)', () => {
    const j = {
      ...job('torch1-node-0', {
        metadata: { name: 'torch1-node-0', namespace: 'ns', labels: { [JOBSET_NAME_LABEL]: 'torch1', other: 'x' } },
        status: {
          active: 1,
          terminating: 0,
          ...{ ready: 0 },
          conditions: [
            { type: 'Suspended', status: 'True', reason: 'JobSuspended' },
            { type: 'Complete', status: 'True', reason: 'CompletionsReached' },
          ],
        },
      }),
      spec: { suspend: true, parallelism: 2, template: { spec: { containers: [{ name: 'node', image: 'big' }] } } },
    };
    assert.deepEqual(jobForCache({ ...j, metadata: { ...j.metadata, uid: 'u', managedFields } }), {
      metadata: { name: 'torch1-node-0', namespace: 'ns', labels: { [JOBSET_NAME_LABEL]: 'torch1' } },
      spec: { suspend: true },
      status: { active: 1, terminating: 0, conditions: [{ type: 'Complete', status: 'True' }] },
    });
  });

  it('malformed values are kept as they are (the decisions report them), never thrown on', () => {
    assert.equal(jobSetForCache('x'), undefined);
    assert.deepEqual(jobForCache({ metadata: { name: 'j' }, status: { active: 'many' } })!.status, { active: 'many' });
    const odd = jobSetForCache({
      metadata: { name: 'a', ownerReferences: [{ kind: 'TrainJob', name: 'a', uid: 'u', controller: true }] },
      spec: { replicatedJobs: [7, { name: 'n', template: 'nope' }] },
    })!;
    assert.deepEqual(odd.spec!.replicatedJobs, [7, { name: 'n', template: 'nope' }]);
  });

  it('a kept shape kept again is itself (the gate shapes cached objects again), in both modes', () => {
    for (const mode of ['companion', 'standalone'] as Mode[]) {
      const tj = trainJobForCache(
        { ...torch1(2), status: { conditions: [{ type: 'Suspended', status: 'True' }] } },
        mode,
      );
      assert.deepEqual(trainJobForCache(tj, mode), tj);
      const js = jobSetForCache(runningJobSet(trainerJobSet('ttpub')), mode);
      assert.deepEqual(jobSetForCache(js, mode), js);
    }
    const j = jobForCache(job('a', { status: { active: 0, conditions: [{ type: 'Failed', status: 'True' }] } }));
    assert.deepEqual(jobForCache(j), j);
  });

  it('repeated strings are one copy, and the kept object is a copy (the raw one is not changed)', () => {
    const raw = runningJobSet(trainerJobSet('ttpub'));
    const before = structuredClone(raw);
    const a = jobSetForCache(raw)!;
    const b = jobSetForCache(structuredClone(raw))!;
    assert.deepEqual(raw, before);
    assert.deepEqual(a, b);
    assert.deepEqual(cacheShapeFor('companion', { intern: false }).jobSet(raw), a);
  });
});

/** decide() until it acts or skips, every need answered the same way for both shapes. */
function drive(o: Observation, runtime: Observation['runtime']): Decision {
  for (let i = 0; i < 20; i++) {
    const d = decide(o);
    if (d.kind !== 'need') return d;
    if (d.what === 'runtime') o.runtime = runtime;
    if (d.what === 'cached-jobs') o.cachedJobs = [];
    if (d.what === 'children') o.children = { jobs: [], pods: [] };
    if (d.what === 'pvcs') o.pvcs = [];
    if (d.what === 'retained') o.retained = [];
    if (d.what === 'recreate') o.recreate = { admitted: true };
    if (d.what === 'initializer-objects') o.initializerObjects = [];
    if (d.what === 'podgroups') o.podGroups = [];
    if (d.what === 'trainer-refusals') o.trainerRefusals = [];
  }
  throw new Error('decide() kept asking');
}

describe('cache shape: the decisions on the kept shape are those on the whole objects', () => {
  const cases: { name: string; trainJob: TrainJob; jobSet: JobSet; runtime: Observation['runtime'] }[] = [
    {
      name: 'torch1',
      trainJob: torch1(1),
      jobSet: trainerJobSet('torch1'),
      runtime: {
        found: true,
        runtime: { kind: 'ClusterTrainingRuntime', name: 'torch-distributed', spec: upstreamRuntime('torch').spec },
      },
    },
    {
      name: 'ttpub',
      trainJob: trainJob('ttpub', { trainer: { numNodes: 1 } }, 'torchtune-llama3.2-1b'),
      jobSet: trainerJobSet('ttpub'),
      runtime: {
        found: true,
        runtime: {
          kind: 'ClusterTrainingRuntime',
          name: 'torchtune-llama3.2-1b',
          spec: upstreamRuntime('torchtune').spec,
        },
      },
    },
    ...(Object.keys(CASES) as CaseName[]).map((c) => ({
      name: c,
      trainJob: caseTrainJob(c),
      jobSet: trainerJobSet(c),
      runtime: { found: true as const, runtime: caseRuntime(c) },
    })),
  ];
  const now = '2026-01-01T00:00:00Z';
  for (const c of cases)
    for (const mode of ['companion', 'standalone'] as Mode[])
      for (const numNodes of [1, 2, 3])
        for (const suspended of [true, false]) {
          it(`${c.name}, ${mode}, numNodes ${numNodes}, ${suspended ? 'suspended' : 'running'}`, () => {
            const tj: TrainJob = structuredClone(c.trainJob);
            tj.spec = { ...tj.spec, suspend: suspended, trainer: { ...tj.spec?.trainer, numNodes } };
            const js: JobSet = structuredClone(c.jobSet);
            js.spec = { ...js.spec, suspend: suspended };
            js.metadata.ownerReferences = [
              {
                apiVersion: 'trainer.kubeflow.org/v1alpha1',
                kind: 'TrainJob',
                name: tj.metadata.name ?? '',
                uid: tj.metadata.uid ?? '',
                controller: true,
              },
            ];
            const base = { mode, trainer: TRAINER_LINES['v2.3.0'], now, fieldManager: 'trainjob-webhook-reconciler' };
            const whole = drive({ ...base, trainJob: tj, jobSet: js }, c.runtime);
            const kept = drive(
              { ...base, trainJob: trainJobForCache(tj, mode)!, jobSet: jobSetForCache(js, mode)! },
              c.runtime,
            );
            assert.deepEqual(kept, whole);
          });
        }
  it('a JobSet at another count than its TrainJob is judged stale on the kept shape too', () => {
    const tj = torch1(2);
    const js = withCount(trainerJobSet('torch1'), 'node', 1);
    const o = (t: TrainJob, j: JobSet): Observation => ({
      mode: 'companion',
      trainer: TRAINER_LINES['v2.3.0'],
      trainJob: t,
      jobSet: j,
      now: '2026-01-01T00:00:00Z',
    });
    const runtime = cases[0].runtime;
    const whole = drive(o(tj, js), runtime);
    assert.equal(whole.kind === 'act' && whole.outcome, 'deleted');
    assert.deepEqual(drive(o(trainJobForCache(tj)!, jobSetForCache(js)!), runtime), whole);
  });
});
