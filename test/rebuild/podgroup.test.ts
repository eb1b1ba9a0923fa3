// The TrainJob's PodGroup through a rebuild (src/rebuild/podgroup.ts), and where decide() deletes
// it: which PodGroup is the TrainJob's, what minMember Trainer v2.3.0 builds (the sum of every
// PodSet's count: plugins/coscheduling and plugins/volcano, Build), and when it is stale.
import { TRAINER_LINES } from '../../src/api/trainer-line.ts';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decide } from '../../src/rebuild/decide.ts';
import type { Decision, Need, Observation, Step } from '../../src/rebuild/decision.ts';
import type { Mode } from '../../src/api/names.ts';
import type { JobSet, Runtime, TrainJob } from '../../src/api/objects.ts';
import {
  expectedMinMember,
  gangSchedulersOf,
  judgePodGroup,
  stalePodGroups,
  type GangScheduler,
  type ObservedPodGroup,
  type PodGroup,
} from '../../src/rebuild/podgroup.ts';
import { encodeReport } from '../../src/rebuild/report.ts';
import { job, torch1, trainerJobSet, trainJobOwner, upstreamRuntime, withCount } from './fixtures.ts';

const gang = (policy: unknown, which: 'torch' | 'deepspeed' | 'torchtune' = 'torch'): Runtime => {
  const r = upstreamRuntime(which);
  r.spec.podGroupPolicy = policy;
  return r;
};

function podGroup(tj: TrainJob, minMember: number | undefined, over: Partial<PodGroup['metadata']> = {}): PodGroup {
  return {
    metadata: {
      name: tj.metadata.name,
      namespace: 'ns',
      uid: 'pg-uid',
      resourceVersion: '5',
      ownerReferences: [trainJobOwner(tj, true)],
      ...over,
    },
    spec: minMember === undefined ? {} : { minMember },
  };
}

describe('gangSchedulersOf: the PodGroups Trainer builds for a runtime (its podGroupPolicy)', () => {
  const rows: [string, unknown, GangScheduler[]][] = [
    ['no podGroupPolicy', undefined, []],
    ['podGroupPolicy null', null, []],
    [
      'coscheduling (scheduleTimeoutSeconds defaulted by the CRD)',
      { coscheduling: { scheduleTimeoutSeconds: 60 } },
      ['coscheduling'],
    ],
    ['coscheduling, empty', { coscheduling: {} }, ['coscheduling']],
    ['volcano', { volcano: {} }, ['volcano']],
    [
      'both (the CRD refuses it; both plugins would build)',
      { coscheduling: {}, volcano: {} },
      ['coscheduling', 'volcano'],
    ],
    ['an empty policy', {}, []],
    ['not an object', 'coscheduling', []],
  ];
  for (const [what, policy, want] of rows) it(what, () => assert.deepEqual(gangSchedulersOf(gang(policy)), want));
});

describe('expectedMinMember: the sum of the PodSet counts, the count-bearing job at its new count', () => {
  const rows: [string, JobSet, { replicatedJob: string; to: number } | undefined, number][] = [
    ['torch, 1 node as built', trainerJobSet('torch1'), undefined, 1],
    ['torch 1 -> 4', trainerJobSet('torch1'), { replicatedJob: 'node', to: 4 }, 4],
    [
      'torch 4 -> 2 (a JobSet built for 4)',
      withCount(trainerJobSet('torch1'), 'node', 4),
      { replicatedJob: 'node', to: 2 },
      2,
    ],
    ['torch -> 0 nodes (Trainer counts 0)', trainerJobSet('torch1'), { replicatedJob: 'node', to: 0 }, 0],
    ['torchtune: both initializers count, node -> 2', trainerJobSet('ttpub'), { replicatedJob: 'node', to: 2 }, 4],
    [
      'MPI with the launcher as a node, numNodes 3: launcher 1 + node 2',
      trainerJobSet('mpi'),
      { replicatedJob: 'node', to: 2 },
      3,
    ],
    ['no replicated jobs', { metadata: { name: 'x' }, spec: {} }, undefined, 0],
    [
      'parallelism unset counts 1 (a PodSet starts at parallelism or 1)',
      {
        metadata: { name: 'x' },
        spec: { replicatedJobs: [{ name: 'a' }, { name: 'node', template: { spec: { parallelism: 3 } } }] },
      },
      undefined,
      4,
    ],
  ];
  for (const [what, js, count, want] of rows) it(what, () => assert.equal(expectedMinMember(js, count), want));
});

describe("judgePodGroup: the TrainJob's own PodGroup, stale when its minMember is not what Trainer builds", () => {
  const tj = torch1(2);
  const observed = (pg: PodGroup, scheduler: GangScheduler = 'coscheduling'): ObservedPodGroup => ({
    scheduler,
    podGroup: pg,
  });
  const rows: [string, PodGroup, string][] = [
    ['minMember as Trainer builds it', podGroup(tj, 2), 'current'],
    ['minMember of the old count', podGroup(tj, 4), 'stale'],
    ['no minMember', podGroup(tj, undefined), 'stale'],
    [
      'controlled by another TrainJob (same name, other uid)',
      podGroup(tj, 4, {
        ownerReferences: [
          {
            apiVersion: 'trainer.kubeflow.org/v1alpha1',
            kind: 'TrainJob',
            name: 'torch1',
            uid: 'other',
            controller: true,
          },
        ],
      }),
      'left-alone',
    ],
    [
      'owned but not controlled',
      podGroup(tj, 4, {
        ownerReferences: [
          { apiVersion: 'trainer.kubeflow.org/v1alpha1', kind: 'TrainJob', name: 'torch1', uid: tj.metadata.uid ?? '' },
        ],
      }),
      'left-alone',
    ],
    [
      'controlled by something else with that uid',
      podGroup(tj, 4, {
        ownerReferences: [
          { apiVersion: 'v1', kind: 'ConfigMap', name: 'torch1', uid: tj.metadata.uid ?? '', controller: true },
        ],
      }),
      'left-alone',
    ],
    ['no owner', podGroup(tj, 4, { ownerReferences: undefined }), 'left-alone'],
    ['another name', podGroup(tj, 4, { name: 'other' }), 'left-alone'],
    ['already being deleted', podGroup(tj, 4, { deletionTimestamp: '2026-12-01T00:00:00Z' }), 'left-alone'],
    ['no resourceVersion (no precondition possible)', podGroup(tj, 4, { resourceVersion: undefined }), 'left-alone'],
    ['no metadata at all', { metadata: undefined } as unknown as PodGroup, 'left-alone'],
  ];
  for (const [what, pg, verdict] of rows)
    it(`${what}: ${verdict}`, () => assert.equal(judgePodGroup(tj, observed(pg), 2).verdict, verdict));

  it('a stale one carries its identity for the preconditions, and why', () => {
    assert.deepEqual(stalePodGroups(tj, [observed(podGroup(tj, 4), 'volcano')], 2), [
      { scheduler: 'volcano', name: 'torch1', uid: 'pg-uid', resourceVersion: '5', minMember: 4, want: 2 },
    ]);
  });
});

// decide() with a gang-scheduled runtime: the rows of the rebuild that touch the PodGroup.
interface World {
  mode?: Mode;
  trainJob: TrainJob;
  jobSet: JobSet;
  runtime: Runtime;
  podGroups?: ObservedPodGroup[];
}

function run(w: World): { decision: Decision; needs: Need[] } {
  const o: Observation = {
    trainer: TRAINER_LINES['v2.3.0'],
    mode: w.mode ?? 'companion',
    trainJob: w.trainJob,
    jobSet: w.jobSet,
    now: '2026-12-01T00:00:00Z',
  };
  const needs: Need[] = [];
  for (;;) {
    const d = decide(o);
    if (d.kind !== 'need') return { decision: d, needs };
    needs.push(d.what);
    if (d.what === 'runtime') o.runtime = { found: true, runtime: w.runtime };
    if (d.what === 'trainer-refusals') o.trainerRefusals = [];
    if (d.what === 'cached-jobs') o.cachedJobs = [job('torch1-node-0')];
    if (d.what === 'children') o.children = { jobs: [job('torch1-node-0')], pods: [] };
    if (d.what === 'pvcs') o.pvcs = [];
    if (d.what === 'retained') o.retained = [];
    if (d.what === 'podgroups') o.podGroups = w.podGroups ?? [];
  }
}
const kinds = (d: Decision) => (d.kind === 'act' ? d.steps.map((s) => s.kind) : []);
const deletions = (d: Decision) =>
  d.kind === 'act' ? d.steps.flatMap((s: Step) => (s.kind === 'delete-podgroup' ? [s.podGroup] : [])) : [];
const cosched = gang({ coscheduling: { scheduleTimeoutSeconds: 60 } });

describe('decide: the PodGroup is deleted with the stale JobSet, so that Trainer creates it from the new count', () => {
  // A JobSet built for 4 nodes, the TrainJob now at 2, suspended, nothing runs.
  const world = (pgMin: number | undefined, over: Partial<World> = {}): World => {
    const tj = torch1(2);
    return {
      trainJob: tj,
      jobSet: withCount(trainerJobSet('torch1'), 'node', 4),
      runtime: cosched,
      podGroups: pgMin === undefined ? [] : [{ scheduler: 'coscheduling', podGroup: podGroup(tj, pgMin) }],
      ...over,
    };
  };

  it('4 -> 2, the PodGroup still at 4: read live after the children, deleted after the report and before the JobSet', () => {
    const { decision, needs } = run(world(4));
    assert.deepEqual(needs, ['runtime', 'cached-jobs', 'children', 'pvcs', 'podgroups']);
    assert.deepEqual(kinds(decision), ['report', 'delete-podgroup', 'delete-jobset', 'event']);
    assert.deepEqual(deletions(decision), [
      { scheduler: 'coscheduling', name: 'torch1', uid: 'pg-uid', resourceVersion: '5', minMember: 4, want: 2 },
    ]);
    const event = decision.kind === 'act' ? decision.steps.find((s) => s.kind === 'event') : undefined;
    assert.match(
      event?.kind === 'event' ? event.event.message : '',
      /coscheduling PodGroup torch1 has minMember 4, Trainer builds 2/,
    );
  });

  it('the PodGroup already at 2 (Trainer re-applied it while suspended): only the JobSet is deleted', () => {
    assert.deepEqual(kinds(run(world(2)).decision), ['report', 'delete-jobset', 'event']);
  });

  it('no PodGroup (not created yet, or its CRD is not installed): only the JobSet is deleted', () => {
    assert.deepEqual(kinds(run(world(undefined)).decision), ['report', 'delete-jobset', 'event']);
  });

  it('a runtime without podGroupPolicy: no PodGroup is read', () => {
    const { decision, needs } = run(world(4, { runtime: upstreamRuntime('torch') }));
    assert.ok(!needs.includes('podgroups'));
    assert.deepEqual(kinds(decision), ['report', 'delete-jobset', 'event']);
  });

  it('volcano: the same, by minMember', () => {
    const w = world(4, { runtime: gang({ volcano: {} }) });
    w.podGroups = w.podGroups?.map((p) => ({ ...p, scheduler: 'volcano' as const }));
    assert.deepEqual(
      deletions(run(w).decision).map((d) => [d.scheduler, d.minMember, d.want]),
      [['volcano', 4, 2]],
    );
  });

  it('something still runs: the PodGroup is neither read nor deleted (the delete waits)', () => {
    const w = world(4);
    const o: Observation = {
      trainer: TRAINER_LINES['v2.3.0'],
      mode: 'companion',
      trainJob: w.trainJob,
      jobSet: w.jobSet,
      now: '2026-12-01T00:00:00Z',
    };
    o.runtime = { found: true, runtime: cosched };
    o.cachedJobs = [job('torch1-node-0', { status: { active: 1 } })];
    const d = decide(o);
    assert.equal(d.kind === 'act' && d.outcome, 'waiting');
    assert.deepEqual(deletions(d), []);
  });

  it('standalone mode builds no PodGroup, so it reads and deletes none', () => {
    const { decision, needs } = run(world(4, { mode: 'standalone' }));
    assert.ok(!needs.includes('podgroups'));
    assert.ok(!kinds(decision).includes('delete-podgroup'));
  });
});

describe('decide: the re-created JobSet found (Rebuilding -> Rebuilt), its PodGroup checked once', () => {
  const rebuilding = (tj: TrainJob) => {
    tj.metadata.annotations = {
      'trainjob-webhook.kubeflow.org/jobset-rebuild': encodeReport({
        state: 'Rebuilding',
        numNodes: 2,
        replacedJobSetUID: 'old-uid',
      }),
    };
    return tj;
  };
  const rebuilt = () => withCount(trainerJobSet('torch1'), 'node', 2);

  it('a PodGroup Trainer built from the old count meanwhile is deleted as the report turns Rebuilt', () => {
    const tj = rebuilding(torch1(2));
    const { decision, needs } = run({
      trainJob: tj,
      jobSet: rebuilt(),
      runtime: cosched,
      podGroups: [{ scheduler: 'coscheduling', podGroup: podGroup(tj, 4) }],
    });
    assert.deepEqual(needs, ['runtime', 'podgroups']);
    assert.equal(decision.kind === 'act' && decision.outcome, 'rebuilt');
    assert.deepEqual(kinds(decision), ['delete-podgroup', 'report', 'event']);
  });

  it('a current PodGroup: only the report', () => {
    const tj = rebuilding(torch1(2));
    const { decision } = run({
      trainJob: tj,
      jobSet: rebuilt(),
      runtime: cosched,
      podGroups: [{ scheduler: 'coscheduling', podGroup: podGroup(tj, 2) }],
    });
    assert.deepEqual(kinds(decision), ['report', 'event']);
  });

  it('a current JobSet with no rebuild under way: nothing is read (a reconcile that finds nothing to do costs no request)', () => {
    const tj = torch1(2);
    const { decision, needs } = run({
      trainJob: tj,
      jobSet: rebuilt(),
      runtime: cosched,
      podGroups: [{ scheduler: 'coscheduling', podGroup: podGroup(tj, 4) }],
    });
    assert.deepEqual(needs, ['runtime']);
    assert.deepEqual(kinds(decision), []);
  });
});
