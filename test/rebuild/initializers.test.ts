// The initializers a rebuild runs again (src/rebuild/initializers.ts): which JobSet runs Trainer's
// data cache initializer (cache.py), which of its objects a second run must not find, and what the
// rebuild does with them before the JobSet is deleted.
import { TRAINER_LINES } from '../../src/api/trainer-line.ts';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import { decide } from '../../src/rebuild/decide.ts';
import type { Decision, Need, Observation } from '../../src/rebuild/decision.ts';
import {
  cacheInitializerOf,
  planInitializerCleanup,
  type InitializerObject,
  type InitializerObjectRef,
} from '../../src/rebuild/initializers.ts';
import type { JobSet, ReplicatedJob, Runtime, TrainJob } from '../../src/api/objects.ts';
import { job, torch1, trainerJobSet } from './fixtures.ts';
import { REPORT_ANNOTATION } from '../../src/api/names.ts';
import { encodeReport } from '../../src/rebuild/report.ts';

const here = path.dirname(fileURLToPath(import.meta.url));
const cacheRuntimeDoc = parse(
  readFileSync(path.resolve(here, '../../upstream/runtimes/torch_distributed_with_cache.yaml'), 'utf8'),
);
const cacheRuntime: Runtime = {
  kind: cacheRuntimeDoc.kind,
  name: cacheRuntimeDoc.metadata.name,
  spec: cacheRuntimeDoc.spec,
};

/**
 * The torch1 JobSet with the stock runtime's dataset-initializer in front, STORAGE_URI set as
 * Trainer's builder sets it from spec.initializer.dataset.storageUri.
 */
function cacheJobSet(storageUri = 'cache://schema/table', edit: (r: ReplicatedJob) => void = () => {}): JobSet {
  const js = trainerJobSet('torch1');
  const init = structuredClone(cacheRuntimeDoc.spec.template.spec.replicatedJobs[0]) as ReplicatedJob;
  init.template!.spec!.template!.spec!.containers![0].env!.push({ name: 'STORAGE_URI', value: storageUri });
  edit(init);
  js.spec!.replicatedJobs!.unshift(init);
  return js;
}

const LWS: InitializerObjectRef = {
  apiVersion: 'leaderworkerset.x-k8s.io/v1',
  kind: 'LeaderWorkerSet',
  name: 'torch1-cache',
};
const SA: InitializerObjectRef = { apiVersion: 'v1', kind: 'ServiceAccount', name: 'torch1-cache' };

const tj = torch1(2);
const ownedBy = (t: TrainJob, uid = t.metadata.uid!) => [
  {
    apiVersion: 'trainer.kubeflow.org/v1alpha1',
    kind: 'TrainJob',
    name: 'torch1',
    uid,
    controller: true,
    blockOwnerDeletion: true,
  },
];
const found = (ref: InitializerObjectRef, meta: Partial<InitializerObject['metadata']> = {}): InitializerObject => ({
  ref,
  metadata: { name: ref.name, uid: `uid-${ref.kind}`, resourceVersion: '5', ownerReferences: ownedBy(tj), ...meta },
});

describe('cacheInitializerOf: which JobSet runs the data cache initializer', () => {
  it('the stock torch-distributed-with-cache JobSet: the LeaderWorkerSet and ServiceAccount named from TRAIN_JOB_NAME (the JobSet-name label)', () => {
    assert.deepEqual(cacheInitializerOf(cacheJobSet()), { cache: true, objects: [LWS, SA] });
  });

  it('a TRAIN_JOB_NAME value names them', () => {
    const js = cacheJobSet('cache://s/t', (r) => {
      const env = r.template!.spec!.template!.spec!.containers![0].env!;
      env.splice(
        env.findIndex((e) => e.name === 'TRAIN_JOB_NAME'),
        1,
        { name: 'TRAIN_JOB_NAME', value: 'other' },
      );
    });
    const got = cacheInitializerOf(js);
    assert.deepEqual(got.cache && 'objects' in got && got.objects.map((o) => o.name), ['other-cache', 'other-cache']);
  });

  it('another scheme (hf://, s3://), no dataset initializer, or no STORAGE_URI: not the cache', () => {
    assert.deepEqual(cacheInitializerOf(cacheJobSet('hf://tatsu-lab/alpaca')), { cache: false });
    assert.deepEqual(cacheInitializerOf(cacheJobSet('s3://bucket/data')), { cache: false });
    assert.deepEqual(cacheInitializerOf(trainerJobSet('torch1')), { cache: false });
    const none = cacheJobSet('cache://s/t', (r) => {
      r.template!.spec!.template!.spec!.containers![0].env = [];
    });
    assert.deepEqual(cacheInitializerOf(none), { cache: false });
  });

  it('a TRAIN_JOB_NAME from another field cannot name the objects: said so', () => {
    const js = cacheJobSet('cache://s/t', (r) => {
      const e = r.template!.spec!.template!.spec!.containers![0].env!.find((x) => x.name === 'TRAIN_JOB_NAME')!;
      e.valueFrom = { fieldRef: { fieldPath: 'metadata.name' } };
    });
    const got = cacheInitializerOf(js);
    assert.ok(got.cache && 'unreadable' in got && /cannot be named/.test(got.unreadable));
  });

  it('malformed JobSets are not the cache, and never throw', () => {
    for (const spec of [undefined, {}, { replicatedJobs: 'x' }, { replicatedJobs: [null, 3, { template: 'x' }] }])
      assert.deepEqual(cacheInitializerOf({ metadata: { name: 'x' }, spec } as JobSet), { cache: false });
  });
});

describe('planInitializerCleanup: what happens to the objects found', () => {
  it('none: the JobSet may go', () => {
    assert.deepEqual(planInitializerCleanup(tj, []), { kind: 'clear' });
  });

  it('controlled by this TrainJob: deleted with their uid and resourceVersion', () => {
    assert.deepEqual(planInitializerCleanup(tj, [found(LWS), found(SA)]), {
      kind: 'delete',
      objects: [
        { ref: LWS, uid: 'uid-LeaderWorkerSet', resourceVersion: '5' },
        { ref: SA, uid: 'uid-ServiceAccount', resourceVersion: '5' },
      ],
    });
  });

  it('one being deleted is not deleted again; only deleting ones left: wait', () => {
    const gone = found(LWS, { deletionTimestamp: '2026-11-30T00:00:00Z' });
    assert.deepEqual(planInitializerCleanup(tj, [gone, found(SA)]), {
      kind: 'delete',
      objects: [{ ref: SA, uid: 'uid-ServiceAccount', resourceVersion: '5' }],
    });
    assert.equal(planInitializerCleanup(tj, [gone]).kind, 'wait');
  });

  it('controlled by another TrainJob of the same name (another uid), or by nothing: never touched', () => {
    for (const meta of [{ ownerReferences: ownedBy(tj, 'another-uid') }, { ownerReferences: [] }]) {
      const plan = planInitializerCleanup(tj, [found(LWS, meta), found(SA)]);
      assert.equal(plan.kind, 'foreign');
      assert.match(
        plan.kind === 'foreign' ? plan.reason : '',
        /LeaderWorkerSet torch1-cache is not controlled by this TrainJob/,
      );
    }
  });
});

/** decide() with the cache runtime, answering its needs; `objects` are the initializer objects found. */
function run(objects: InitializerObject[], jobSet = cacheJobSet()): { decision: Decision; needs: Need[] } {
  const o: Observation = {
    trainer: TRAINER_LINES['v2.3.0'],
    mode: 'companion',
    trainJob: torch1(2),
    jobSet,
    now: '2026-11-30T00:00:00Z',
  };
  const needs: Need[] = [];
  for (;;) {
    const d = decide(o);
    if (d.kind !== 'need') return { decision: d, needs };
    needs.push(d.what);
    if (d.what === 'runtime') o.runtime = { found: true, runtime: cacheRuntime };
    if (d.what === 'trainer-refusals') o.trainerRefusals = [];
    if (d.what === 'cached-jobs') o.cachedJobs = [job('torch1-node-0')];
    if (d.what === 'children') o.children = { jobs: [job('torch1-node-0')], pods: [] };
    if (d.what === 'pvcs') o.pvcs = [];
    if (d.what === 'initializer-objects') o.initializerObjects = objects;
  }
}
const kinds = (d: Decision) => (d.kind === 'act' ? d.steps.map((s) => s.kind) : []);

describe('decide: a stale JobSet whose dataset initializer is the data cache', () => {
  it('its objects are read last, after every other gate, and deleted in the same reconcile as the JobSet, right after it: a revert cannot fall between (the old JobSet, its initializer complete, would stay current with no cache)', () => {
    const { decision, needs } = run([found(LWS), found(SA)]);
    assert.deepEqual(needs, ['runtime', 'cached-jobs', 'children', 'pvcs', 'initializer-objects']);
    assert.equal(decision.kind === 'act' && decision.outcome, 'deleted');
    assert.deepEqual(kinds(decision), [
      'report',
      'delete-jobset',
      'delete-initializer-object',
      'delete-initializer-object',
      'event',
    ]);
    const report = decision.kind === 'act' ? decision.steps.find((s) => s.kind === 'report') : undefined;
    assert.equal(
      report?.kind === 'report' && report.report?.state,
      'Rebuilding',
      'never a Waiting with the cache gone',
    );
  });

  it('once they are gone, the rebuild goes on as for any JobSet', () => {
    const { decision } = run([]);
    assert.equal(decision.kind === 'act' && decision.outcome, 'deleted');
    assert.deepEqual(kinds(decision), ['report', 'delete-jobset', 'event']);
  });

  it("a delete that failed after the JobSet's is made again while the old JobSet is still being deleted", () => {
    const js = cacheJobSet();
    js.metadata.deletionTimestamp = '2026-11-30T00:00:00Z';
    const rebuilding = torch1(2, (t) => {
      t.metadata.annotations = {
        [REPORT_ANNOTATION]: encodeReport({
          state: 'Rebuilding',
          numNodes: 2,
          parallelism: { from: 1, to: 2 },
          replacedJobSetUID: js.metadata.uid,
        }),
      };
    });
    const o: Observation = {
      trainer: TRAINER_LINES['v2.3.0'],
      mode: 'companion',
      trainJob: rebuilding,
      jobSet: js,
      now: '2026-11-30T00:00:00Z',
    };
    const first = decide(o);
    assert.deepEqual(first, { kind: 'need', what: 'initializer-objects' });
    o.initializerObjects = [found(SA)];
    assert.deepEqual(kinds(decide(o)), ['delete-initializer-object']);
    o.initializerObjects = [];
    assert.deepEqual(kinds(decide(o)), [], 'none left: wait for the JobSet to go');
    // Another JobSet being deleted (not the one this rebuild replaced): nothing read.
    const other = structuredClone(o);
    delete other.initializerObjects;
    other.jobSet = { ...js, metadata: { ...js.metadata, uid: 'someone-elses' } };
    assert.equal(decide(other).kind, 'act');
  });

  it('while they are being deleted (by someone else, or held by a finalizer): wait, nothing written', () => {
    const { decision } = run([found(LWS, { deletionTimestamp: '2026-11-30T00:00:00Z' })]);
    assert.equal(decision.kind === 'act' && decision.outcome, 'waiting');
    assert.ok(!kinds(decision).includes('delete-jobset'));
    assert.ok(!kinds(decision).includes('delete-initializer-object'));
  });

  it('one this TrainJob does not control: Blocked, nothing deleted', () => {
    const { decision } = run([found(LWS, { ownerReferences: [] })]);
    assert.equal(decision.kind === 'act' && decision.outcome, 'blocked');
    assert.deepEqual(kinds(decision), ['report', 'event']);
  });

  it('a JobSet without the cache initializer never reads them', () => {
    const { needs } = run([], trainerJobSet('torch1'));
    assert.ok(!needs.includes('initializer-objects'));
  });
});
