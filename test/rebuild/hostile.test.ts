// Objects read from the cluster are input too: malformed or hostile shapes give a clear "leave
// alone / not safe / cannot build" answer, never a throw that would kill a worker in a loop.
import { TRAINER_LINES } from '../../src/api/trainer-line.ts';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { isJobSetStale } from '../../src/scale/stale.ts';
import { canDeleteSafely } from '../../src/rebuild/safety.ts';
import { buildJobSet } from '../../src/rebuild/trainer-jobset/jobset.ts';
import { expectedNodeShape } from '../../src/scale/ml-policy.ts';
import type { JobSet, Runtime, TrainJob } from '../../src/api/objects.ts';
import { decide } from '../../src/rebuild/decide.ts';
import type { Decision, Observation } from '../../src/rebuild/decision.ts';
import type { Mode } from '../../src/api/names.ts';
import { type Job, type PersistentVolumeClaim, type Pod } from '../../src/api/objects.ts';
import { isObject } from '../../src/json/object.ts';
import { previousReport } from '../../src/rebuild/report.ts';
import { job, jobSetOwner, pod, pvc, torch1, trainerJobSet, upstreamRuntime } from './fixtures.ts';

const anyJson = fc.anything({ maxDepth: 4, withBigInt: true, withNullPrototype: true, withObjectString: true });
/** An object whose interesting fields hold anything at all. */
const hostile = (shape: (v: unknown) => unknown) => anyJson.map(shape);

const trainJobs = hostile((v) => ({
  metadata: { name: 'x', namespace: 'n', uid: 'u' },
  spec: { trainer: { numNodes: v, env: v }, runtimeRef: v, suspend: v, runtimePatches: v },
}));
const runtimes = hostile((v) => ({
  metadata: { name: 'r' },
  spec: { mlPolicy: v, template: { spec: { replicatedJobs: v } } },
}));
const jobSets = hostile((v) => ({
  metadata: { name: 'x', uid: 'j' },
  spec: { suspend: v, replicatedJobs: [v, { name: 'node', template: v }] },
  status: { replicatedJobsStatus: v },
}));

describe('reconciler decisions on hostile cluster objects', () => {
  it('isJobSetStale answers (stale, fresh or unknown) and never throws', () => {
    fc.assert(
      fc.property(trainJobs, runtimes, jobSets, (tj, rt, js) => {
        const r = isJobSetStale(tj as TrainJob, rt as Runtime, js as JobSet);
        assert.equal(typeof r, 'object');
      }),
      { numRuns: 300 },
    );
  });
  it('expectedNodeShape answers and never throws', () => {
    fc.assert(
      fc.property(trainJobs, runtimes, (tj, rt) => {
        assert.equal(typeof expectedNodeShape(tj as TrainJob, rt as Runtime).known, 'boolean');
      }),
      { numRuns: 300 },
    );
  });
  it('canDeleteSafely is never "safe" for garbage it cannot read as suspended and idle', () => {
    fc.assert(
      fc.property(
        jobSets,
        fc.array(anyJson, { maxLength: 3 }),
        fc.array(anyJson, { maxLength: 3 }),
        (js, jobs, pods) => {
          const r = canDeleteSafely(js as JobSet, jobs as never[], pods as never[]);
          if (pods.length > 0 && r.safe)
            assert.fail(
              `safe with pods present: ${JSON.stringify(pods, (_k, v) => (typeof v === 'bigint' ? String(v) : v))}`,
            );
        },
      ),
      { numRuns: 300 },
    );
  });
  it('buildJobSet returns a JobSet or a reason, and never throws', () => {
    fc.assert(
      fc.property(trainJobs, runtimes, (tj, rt) => {
        const r = buildJobSet(tj as TrainJob, rt as Runtime);
        assert.ok(r.ok ? typeof r.jobSet === 'object' : typeof r.reason === 'string');
      }),
      { numRuns: 300 },
    );
  });
});

// Deeper: a real object (upstream runtime, a JobSet Trainer built, a TrainJob) with ONE field, at
// any depth, replaced by anything, so the checks are exercised past the first malformed field.

/** Every path of a JSON value (objects and lists), the root excluded. */
function paths(v: unknown, at: (string | number)[] = []): (string | number)[][] {
  if (Array.isArray(v)) return v.flatMap((x, i) => [[...at, i], ...paths(x, [...at, i])]);
  if (isObject(v)) return Object.entries(v).flatMap(([k, x]) => [[...at, k], ...paths(x, [...at, k])]);
  return [];
}

/** `base` with the value at its `pick`-th path replaced by `value`. */
function corrupt<T>(base: T, pick: number, value: unknown): T {
  const copy = structuredClone(base);
  const all = paths(copy);
  const path = all[pick % all.length];
  let parent = copy as Record<string | number, unknown>;
  for (const key of path.slice(0, -1)) parent = parent[key] as Record<string | number, unknown>;
  parent[path[path.length - 1]] = value;
  return copy;
}

const torch = upstreamRuntime('torch');
/** Anything, with the values that most often trip a reader (absent, empty, the wrong container) weighted up. */
const replacement = fc.oneof(anyJson, fc.constantFrom(null, undefined, 0, -1, '', 'x', [], {}, [null], [{}]));
const corrupted = <T>(base: T) => fc.tuple(fc.nat(), replacement).map(([pick, value]) => corrupt(base, pick, value));
const maybe = <T>(good: T) => fc.oneof(fc.constant(good), corrupted(good));

/** Trainer's refusal of an immutable part, newer than anything: that rebuild's path is taken when its gates let it. */
const REFUSAL = {
  at: '2026-11-30T00:00:00Z',
  created: '2026-11-30T00:00:00Z',
  message:
    'TrainJob resources reconciliation failed: admission webhook "vjobset.kb.io" denied the request: spec.replicatedJobs: Invalid value: [{',
};

/** decide() as the orchestrator runs it, answering each `need` from the world. */
function runDecide(
  mode: Mode,
  trainJob: TrainJob,
  jobSet: JobSet | undefined,
  runtime: Runtime,
  jobs: Job[],
  pods: Pod[],
  pvcs: PersistentVolumeClaim[],
): Decision {
  const o: Observation = { trainer: TRAINER_LINES['v2.3.0'], mode, trainJob, jobSet, now: '2026-11-30T00:00:00Z' };
  for (let i = 0; i < 10; i++) {
    const d = decide(o);
    if (d.kind !== 'need') return d;
    if (d.what === 'runtime') o.runtime = { found: true, runtime };
    if (d.what === 'cached-jobs') o.cachedJobs = jobs;
    if (d.what === 'children') o.children = { jobs, pods };
    if (d.what === 'pvcs') o.pvcs = pvcs;
    if (d.what === 'retained') o.retained = pvcs;
    if (d.what === 'recreate') o.recreate = { admitted: true };
    if (d.what === 'trainer-refusals') o.trainerRefusals = [REFUSAL];
  }
  assert.fail('decide() kept asking');
}

/** As standalone mode leaves it: the conditions status.ts reads. */
const withConditions = (t: TrainJob): TrainJob => ({
  ...t,
  status: {
    conditions: [
      {
        type: 'Suspended',
        status: 'True',
        reason: 'Suspended',
        message: 'TrainJob is suspended',
        lastTransitionTime: '2026-11-29T00:00:00Z',
        observedGeneration: 1,
      },
    ],
  },
});
/** A workspace claim the torch1 JobSet owns, and one retained for the TrainJob by an earlier rebuild. */
const ownedPvc = () => pvc('initializer-torch1', { ownerReferences: [jobSetOwner(trainerJobSet('torch1'))] });
const retainedPvc = () =>
  pvc('data', { labels: { 'trainjob-webhook.kubeflow.org/retained-for': 'trainjob-uid-torch1' } });

const deletes = (d: Decision) => d.kind === 'act' && d.steps.some((s) => s.kind === 'delete-jobset');
/** A stale JobSet (numNodes 1 -> 2) that is suspended: deleted when nothing runs. */
const staleWorld = () => ({ trainJob: torch1(2), jobSet: trainerJobSet('torch1'), jobs: [job('torch1-node-0')] });

describe('reconciler decisions on real objects with one field replaced by anything', () => {
  it('isJobSetStale, buildJobSet and decide (both modes, stale or current, children and PVCs too) answer and never throw', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(1, 2).chain((n) => maybe(withConditions(torch1(n)))),
        maybe(torch),
        maybe(trainerJobSet('torch1')),
        fc.tuple(maybe(job('torch1-node-0')), maybe(pod('init', 'Succeeded')), maybe(ownedPvc()), maybe(retainedPvc())),
        fc.constantFrom<Mode>('companion', 'standalone'),
        (tj, rt, js, [j, p, owned, retained], mode) => {
          assert.equal(typeof isJobSetStale(tj, rt, js).verdict, 'string');
          const built = buildJobSet(tj, rt);
          assert.ok(built.ok ? typeof built.jobSet === 'object' : typeof built.reason === 'string');
          assert.equal(typeof runDecide(mode, tj, js, rt, [j], [p], [owned, retained]).kind, 'string');
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('a well-formed pair still builds, and still judges the known JobSet stale', () => {
    assert.ok(buildJobSet(torch1(2), torch).ok);
    assert.equal(isJobSetStale(torch1(2), torch, trainerJobSet('torch1')).verdict, 'stale');
    assert.ok(
      deletes(runDecide('companion', staleWorld().trainJob, staleWorld().jobSet, torch, staleWorld().jobs, [], [])),
    );
  });

  it('decide never deletes the JobSet while an unreadable pod, Job or PVC is listed', () => {
    // Garbage that cannot pass for a Succeeded pod or for a readable PVC (no status / metadata key).
    const garbage = anyJson.filter((v) => !isObject(v) || !('status' in v || 'metadata' in v));
    fc.assert(
      fc.property(fc.array(garbage, { minLength: 1, maxLength: 3 }), fc.nat(2), (junk, where) => {
        const w = staleWorld();
        const jobs = where === 0 ? [...w.jobs, ...junk] : w.jobs;
        const pods = where === 1 ? junk : [];
        const pvcs = where === 2 ? [pvc('other'), ...junk] : [pvc('other')];
        assert.ok(
          !deletes(
            runDecide(
              'companion',
              w.trainJob,
              w.jobSet,
              torch,
              jobs as Job[],
              pods as Pod[],
              pvcs as PersistentVolumeClaim[],
            ),
          ),
        );
      }),
      { numRuns: 300 },
    );
  });
});

describe('reasons name the malformed field', () => {
  const reasonOf = (s: ReturnType<typeof isJobSetStale>) =>
    s.verdict === 'unknown' ? s.reason : `verdict ${s.verdict}`;

  it('a replicated job that is not an object', () => {
    const js = trainerJobSet('torch1');
    (js.spec!.replicatedJobs as unknown[])[0] = 'node';
    assert.equal(
      reasonOf(isJobSetStale(torch1(2), torch, js)),
      'JobSet ns/torch1: spec.replicatedJobs[0] is not an object',
    );
  });

  it('a count that is not a non-negative integer is not read as the default', () => {
    const js = trainerJobSet('torch1');
    (js.spec!.replicatedJobs![0].template!.spec as Record<string, unknown>).parallelism = '2';
    assert.equal(
      reasonOf(isJobSetStale(torch1(2), torch, js)),
      'JobSet ns/torch1: spec.replicatedJobs[0].template.spec.parallelism is not a non-negative integer',
    );
  });

  it('a malformed TrainJob or runtime: unknown, and cannot be built', () => {
    const negative = torch1(2, (t) => (t.spec!.trainer!.numNodes = -1));
    assert.equal(
      reasonOf(isJobSetStale(negative, torch, trainerJobSet('torch1'))),
      'TrainJob ns/torch1: spec.trainer.numNodes is not a non-negative integer',
    );
    const built = buildJobSet(
      torch1(2, (t) => ((t.spec!.trainer as Record<string, unknown>).env = { A: '1' })),
      torch,
    );
    assert.equal(built.ok ? '' : built.reason, 'TrainJob ns/torch1: spec.trainer.env is not a list');
    const policy = { ...torch, spec: { ...torch.spec, mlPolicy: 'torch' as never } };
    assert.equal(
      reasonOf(isJobSetStale(torch1(2), policy, trainerJobSet('torch1'))),
      'ClusterTrainingRuntime torch-distributed: spec.mlPolicy is not an object',
    );
  });

  it('runtimePatches that make the template malformed', () => {
    const patched = torch1(
      2,
      (t) => (t.spec!.runtimePatches = [{ trainingRuntimeSpec: { template: { spec: { replicatedJobs: 5 } } } }]),
    );
    const built = buildJobSet(patched, torch);
    assert.equal(
      built.ok ? '' : built.reason,
      'the JobSet template of ClusterTrainingRuntime torch-distributed with the runtimePatches of TrainJob ns/torch1: spec.replicatedJobs is not a list',
    );
  });

  it('unreadable pods and Jobs are not safe, and say so', () => {
    const js = trainerJobSet('torch1');
    const got = canDeleteSafely(
      js,
      [job('a', { status: { active: 'two' as never } }), null as never],
      [null as never, pod('p')],
    );
    assert.deepEqual(got, {
      safe: false,
      reasons: [
        'Job a: status.active is not a non-negative integer',
        'jobs[1] is not an object',
        '2 pods of the JobSet still exist: pods[0] (not an object), p',
      ],
    });
  });

  it('a hand-edited report annotation that is not a report counts as none', () => {
    const withAnnotation = (value: string) =>
      torch1(2, (t) => (t.metadata.annotations = { 'trainjob-webhook.kubeflow.org/jobset-rebuild': value }));
    assert.equal(previousReport(withAnnotation('{"state":"Rebuilding","retainedPVCs":"data"}')), undefined);
    assert.equal(previousReport(withAnnotation('{"state":"Sleeping"}')), undefined);
    assert.deepEqual(previousReport(withAnnotation('{"state":"Waiting","numNodes":2}')), {
      state: 'Waiting',
      numNodes: 2,
    });
  });

  it('metadata that cannot be read: decide leaves the TrainJob alone', () => {
    const d = runDecide(
      'companion',
      { ...torch1(2), metadata: { ...torch1(2).metadata, annotations: [] as never } },
      trainerJobSet('torch1'),
      torch,
      [],
      [],
      [],
    );
    assert.deepEqual(d, {
      kind: 'skip',
      reason:
        'TrainJob ns/torch1: metadata.annotations is not an object: left alone, as metadata that cannot be read is never acted on (nothing is judged or written); correct that field to have the TrainJob reconciled',
    });
  });
});
