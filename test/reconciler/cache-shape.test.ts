// What the watches keep of each object (src/reconciler/cache-shape.ts): a table of what is kept
// and dropped, and the decisions taken on the kept shape equal to those taken on the whole
// objects, for the JobSets the real Trainer v2.3.0 built (test/rebuild/fixtures), at the count
// they were built for and at another, suspended and running, in both modes, every need answered.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TRAINER_LINES } from '../../src/api/trainer-line.ts';
import type { JobSet, TrainJob } from '../../src/api/objects.ts';
import { decide } from '../../src/rebuild/decide.ts';
import type { Decision, Mode, Observation } from '../../src/rebuild/decision.ts';
import {
  jobForCache,
  jobSetForCache,
  LAST_APPLIED_ANNOTATION,
  trainJobForCache,
} from '../../src/reconciler/cache-shape.ts';
import { caseRuntime, caseTrainJob, CASES, type CaseName } from '../rebuild/trainer-cases.ts';
import { job, torch1, trainerJobSet, trainJob, upstreamRuntime, withCount } from '../rebuild/fixtures.ts';

const managedFields = [
  { manager: 'trainer', operation: 'Apply', fieldsV1: { 'f:spec': { 'f:suspend': {}, 'f:replicatedJobs': {} } } },
  { manager: 'jobset', operation: 'Update', subresource: 'status', fieldsV1: { 'f:status': {} } },
];

describe('cache shape: what is kept', () => {
  it('a TrainJob: all but managedFields and the last-applied annotation', () => {
    const tj = torch1(2);
    const whole = {
      ...tj,
      metadata: {
        ...tj.metadata,
        managedFields,
        annotations: { [LAST_APPLIED_ANNOTATION]: JSON.stringify(tj), other: 'kept' },
      },
      status: { conditions: [{ type: 'Suspended', status: 'True' }] },
    };
    assert.deepEqual(trainJobForCache(whole), {
      ...tj,
      metadata: { ...tj.metadata, annotations: { other: 'kept' } },
      status: whole.status,
    });
  });

  it("a JobSet of a TrainJob: the decisions' fields; managedFields only as the owners of spec.suspend; no pod template beyond its containers' counted fields", () => {
    const js = trainerJobSet('ttpub');
    const whole = { ...js, metadata: { ...js.metadata, managedFields } };
    const kept = jobSetForCache(whole)!;
    assert.deepEqual((kept.metadata as { managedFields?: unknown }).managedFields, [
      { manager: 'trainer', operation: 'Apply', fieldsV1: { 'f:spec': { 'f:suspend': {} } } },
    ]);
    const rj = kept.spec!.replicatedJobs![0];
    assert.deepEqual(Object.keys(rj).sort(), ['name', 'replicas', 'template']);
    assert.deepEqual(Object.keys(rj.template!.spec!).sort(), ['completions', 'parallelism', 'template']);
    assert.deepEqual(Object.keys(rj.template!.spec!.template!), ['spec']);
    for (const c of rj.template!.spec!.template!.spec!.containers ?? [])
      for (const k of Object.keys(c))
        assert.ok(['name', 'image', 'command', 'args', 'env', 'ports', 'resources'].includes(k), k);
    for (const r of kept.spec!.replicatedJobs!)
      assert.deepEqual(
        Object.keys(r.template?.spec?.template?.spec ?? {}).filter(
          (k) => !['containers', 'initContainers'].includes(k),
        ),
        [],
      );
    assert.ok(JSON.stringify(kept).length < JSON.stringify(whole).length);
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

  it('a Job: metadata identity, labels and owners, spec.suspend and parallelism, status counts and conditions', () => {
    const j = {
      ...job('torch1-node-0', {
        status: { active: 1, terminating: 0, conditions: [{ type: 'Complete', status: 'True' }] },
      }),
      spec: { suspend: true, parallelism: 2, template: { spec: { containers: [{ name: 'node', image: 'big' }] } } },
    };
    const kept = jobForCache({ ...j, metadata: { ...j.metadata, managedFields } })!;
    assert.deepEqual(kept.spec, { suspend: true, parallelism: 2 });
    assert.deepEqual(kept.status, j.status);
    assert.equal((kept.metadata as { managedFields?: unknown }).managedFields, undefined);
    assert.deepEqual(kept.metadata.labels, j.metadata.labels);
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
            const kept = drive({ ...base, trainJob: trainJobForCache(tj)!, jobSet: jobSetForCache(js)! }, c.runtime);
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
