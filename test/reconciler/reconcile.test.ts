// reconcileKey, the orchestration around decide(), against an in-memory cluster: the reads it
// makes, the order of its writes, and what it does when a write is refused.
import { TRAINER_LINES } from '../../src/api/trainer-line.ts';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ReconcilerCluster } from '../../src/reconciler/cluster.ts';
import type { RecreateCheck } from '../../src/rebuild/decision.ts';
import type { Mode } from '../../src/api/names.ts';
import { createReconcilerMetrics } from '../../src/reconciler/metrics.ts';
import type { JobSet, PersistentVolumeClaim, Runtime, TrainJob } from '../../src/api/objects.ts';
import type { GangScheduler, PodGroup } from '../../src/rebuild/podgroup.ts';
import type { TrainerRefusal } from '../../src/rebuild/refused-apply.ts';
import { reconcileKey, NotLeaderError } from '../../src/reconciler/reconcile.ts';
import { REFUSAL_SEEN_ANNOTATION } from '../../src/api/names.ts';
import { createLogger } from '../../src/observability/logger.ts';
import { RuntimeMemo } from '../../src/reconciler/runtime-memo.ts';
import type { ClusterCache } from '../../src/reconciler/watches.ts';
import { deepFreeze } from '../../src/cluster/stored-object.ts';
import { jobForCache, jobSetForCache, trainJobForCache } from '../../src/reconciler/cache-shape.ts';
import { job, jobSetOwner, pvc, torch1, trainJob, trainerJobSet, upstreamRuntime } from '../rebuild/fixtures.ts';

class ApiError extends Error {
  code: number;
  constructor(code: number) {
    super(`HTTP ${code}`);
    this.code = code;
  }
}

function fakeCluster(
  state: {
    trainJob?: TrainJob;
    jobSet?: JobSet;
    pvcs?: PersistentVolumeClaim[];
    runtime?: 'torch' | 'torchtune';
    snapshot?: boolean;
    recreate?: RecreateCheck;
    runtimeChange?: (r: Runtime) => void;
    podGroups?: Partial<Record<GangScheduler, PodGroup>>;
    refusals?: TrainerRefusal[];
    /** The JobSets the dry-run create was sent. */
    dryRuns?: JobSet[];
  },
  fail: Partial<Record<string, number>> = {},
) {
  const calls: string[] = [];
  const maybeFail = (what: string) => {
    calls.push(what);
    if (fail[what]) throw new ApiError(fail[what]!);
  };
  const cluster: ReconcilerCluster = {
    getTrainJob: async () => (calls.push('get-trainjob'), state.trainJob),
    getJobSet: async () => (calls.push('get-jobset'), state.jobSet),
    readRuntime: async () => {
      calls.push('read-runtime');
      const runtime = upstreamRuntime(state.runtime ?? 'torch');
      state.runtimeChange?.(runtime);
      return { found: true, snapshot: state.snapshot, runtime };
    },
    listChildren: async () => (calls.push('list-children'), { jobs: [job('x-0')], pods: [] }),
    listPvcs: async () => (calls.push('list-pvcs'), state.pvcs ?? []),
    listRetainedPvcs: async () => (calls.push('list-retained'), []),
    patchPvc: async (_ns, p) => (maybeFail(`patch-pvc:${p.name}`), pvc(p.name)),
    deleteJobSet: async () => maybeFail('delete-jobset'),
    setJobSetSuspend: async (_ns, name, uid, rv, suspend) =>
      maybeFail(`${suspend ? 'suspend' : 'resume'}-jobset:${name}:${uid}:${rv}`),
    dryRunRecreate: async (js) => {
      calls.push('read-dry-run');
      state.dryRuns?.push(js);
      return state.recreate ?? { admitted: true };
    },
    getPodGroup: async (scheduler) => (calls.push(`get-podgroup:${scheduler}`), state.podGroups?.[scheduler]),
    deletePodGroup: async (scheduler, _ns, name, uid, rv) =>
      maybeFail(`delete-podgroup:${scheduler}:${name}:${uid}:${rv}`),
    applyJobSet: async (js) => (maybeFail('apply-jobset'), js),
    applyTrainJobStatus: async () => maybeFail('apply-status'),
    applyReport: async (_t, r) => maybeFail(`report:${r?.state ?? 'none'}`),
    recordRefusalFold: async (t, fold) =>
      maybeFail(`record-refusal-fold:${fold ?? 'none'}:${t.metadata.resourceVersion ?? ''}`),
    recordEvent: async (_t, e) => maybeFail(`event:${e.reason}`),
    getInitializerObjects: async () => (calls.push('read-initializer-objects'), []),
    deleteInitializerObject: async (_ns, ref) => maybeFail(`delete-initializer-object:${ref.kind}`),
    listTrainerRefusals: async () => (calls.push('list-refusals'), state.refusals ?? []),
  };
  return { cluster, calls };
}

const deps = (cluster: ReconcilerCluster, extra: object = {}, mode: Mode = 'companion') => ({
  mode,
  trainer: () => TRAINER_LINES['v2.3.0'],
  cluster,
  logger: createLogger('silent'),
  metrics: createReconcilerMetrics(),
  ...extra,
});
const writes = (calls: string[]) => calls.filter((c) => !/^(get-|read-|list-)/.test(c));

describe('reconcileKey', () => {
  it('a TrainJob that is gone: one read, nothing else', async () => {
    const { cluster, calls } = fakeCluster({});
    assert.deepEqual(await reconcileKey('ns/x', deps(cluster)), {});
    assert.deepEqual(calls, ['get-trainjob']);
  });

  it('a stale JobSet with a PVC: release, report, delete, event, in that order; then look again soon', async () => {
    const js = trainerJobSet('ttpub');
    const { cluster, calls } = fakeCluster({
      trainJob: trainJob('ttpub', { trainer: { numNodes: 2 } }),
      jobSet: js,
      runtime: 'torchtune',
      pvcs: [pvc('initializer-ttpub', { ownerReferences: [jobSetOwner(js)] })],
    });
    const result = await reconcileKey('ns/ttpub', deps(cluster));
    assert.deepEqual(writes(calls), [
      'patch-pvc:initializer-ttpub',
      'report:Rebuilding',
      'delete-jobset',
      'event:JobSetDeleted',
    ]);
    assert.equal(result.requeueAfterMs, 1_000);
  });

  it('a gang-scheduled runtime: the PodGroup is read live before the delete; a stale one is deleted (uid and resourceVersion) before the JobSet; a 404 on it is fine', async () => {
    const tj = torch1(2);
    const podGroup: PodGroup = {
      metadata: {
        name: 'torch1',
        uid: 'pg-uid',
        resourceVersion: '5',
        ownerReferences: [
          {
            apiVersion: 'trainer.kubeflow.org/v1alpha1',
            kind: 'TrainJob',
            name: 'torch1',
            uid: tj.metadata.uid ?? '',
            controller: true,
          },
        ],
      },
      spec: { minMember: 1 },
    };
    for (const fail of [{}, { 'delete-podgroup:coscheduling:torch1:pg-uid:5': 404 }]) {
      const { cluster, calls } = fakeCluster(
        {
          trainJob: tj,
          jobSet: trainerJobSet('torch1'),
          runtimeChange: (r) => (r.spec.podGroupPolicy = { coscheduling: { scheduleTimeoutSeconds: 60 } }),
          podGroups: { coscheduling: podGroup },
        },
        fail,
      );
      await reconcileKey('ns/torch1', deps(cluster));
      assert.ok(calls.includes('get-podgroup:coscheduling'), calls.join(' '));
      assert.ok(!calls.includes('get-podgroup:volcano'), 'only the scheduler the runtime names is read');
      assert.deepEqual(writes(calls), [
        'report:Rebuilding',
        'delete-podgroup:coscheduling:torch1:pg-uid:5',
        'delete-jobset',
        'event:JobSetDeleted',
      ]);
    }
    const refused = fakeCluster(
      {
        trainJob: tj,
        jobSet: trainerJobSet('torch1'),
        runtimeChange: (r) => (r.spec.podGroupPolicy = { coscheduling: {} }),
        podGroups: { coscheduling: podGroup },
      },
      { 'delete-podgroup:coscheduling:torch1:pg-uid:5': 409 },
    );
    await assert.rejects(reconcileKey('ns/torch1', deps(refused.cluster)), /409/);
    assert.ok(
      !refused.calls.includes('delete-jobset'),
      'a refused PodGroup delete stops the rebuild; retried from a fresh read',
    );
  });

  it('a JobSet that would not be admitted again beside its workspace PVC: dry-run asked, nothing written but the Blocked report', async () => {
    const js = trainerJobSet('ttpub');
    const { cluster, calls } = fakeCluster({
      trainJob: trainJob('ttpub', { trainer: { numNodes: 2 } }),
      jobSet: js,
      runtime: 'torchtune',
      pvcs: [pvc('initializer-ttpub', { ownerReferences: [jobSetOwner(js)] })],
      recreate: { admitted: false, reason: 'retentionPolicy must be retain when PVC exists' },
    });
    const result = await reconcileKey('ns/ttpub', deps(cluster));
    assert.ok(calls.includes('read-dry-run'));
    assert.deepEqual(writes(calls), ['report:Blocked', 'event:JobSetRebuildBlocked']);
    assert.equal(result.requeueAfterMs, 30_000);
  });

  it('a PVC the reconciler may not patch (403): nothing is deleted, the report says Blocked and why', async () => {
    const js = trainerJobSet('ttpub');
    const { cluster, calls } = fakeCluster(
      {
        trainJob: trainJob('ttpub', { trainer: { numNodes: 2 } }),
        jobSet: js,
        runtime: 'torchtune',
        pvcs: [pvc('initializer-ttpub', { ownerReferences: [jobSetOwner(js)] })],
      },
      { 'patch-pvc:initializer-ttpub': 403 },
    );
    const result = await reconcileKey('ns/ttpub', deps(cluster));
    assert.deepEqual(writes(calls), ['patch-pvc:initializer-ttpub', 'report:Blocked', 'event:JobSetRebuildBlocked']);
    assert.equal(result.requeueAfterMs, 30_000);
  });

  it('a delete refused by its preconditions (409) throws, so the queue retries from a fresh read', async () => {
    const { cluster } = fakeCluster({ trainJob: torch1(2), jobSet: trainerJobSet('torch1') }, { 'delete-jobset': 409 });
    await assert.rejects(reconcileKey('ns/torch1', deps(cluster)), /HTTP 409/);
  });

  it('a JobSet already gone (404 on delete) is fine', async () => {
    const { cluster } = fakeCluster({ trainJob: torch1(2), jobSet: trainerJobSet('torch1') }, { 'delete-jobset': 404 });
    await reconcileKey('ns/torch1', deps(cluster));
  });

  it('companion, TrainJob suspended with a new numNodes, its JobSet still running: report, suspend only that JobSet (uid and resourceVersion), event; look again soon', async () => {
    const js = trainerJobSet('torch1');
    const running = { ...js, metadata: { ...js.metadata, resourceVersion: '7' }, spec: { ...js.spec, suspend: false } };
    const { cluster, calls } = fakeCluster({ trainJob: torch1(2), jobSet: running });
    const result = await reconcileKey('ns/torch1', deps(cluster));
    assert.deepEqual(writes(calls), [
      'report:Waiting',
      'suspend-jobset:torch1:jobset-uid-torch1:7',
      'event:JobSetSuspended',
    ]);
    assert.ok(!calls.includes('list-children'), 'nothing else is read before the suspend');
    assert.equal(result.requeueAfterMs, 3_000);
  });

  it('a suspend refused by its tests (422) or a conflict (409) throws, so the queue retries from a fresh read; no Event', async () => {
    for (const code of [409, 422, 404]) {
      const js = trainerJobSet('torch1');
      const { cluster, calls } = fakeCluster(
        { trainJob: torch1(2), jobSet: { ...js, spec: { ...js.spec, suspend: false } } },
        { 'suspend-jobset:torch1:jobset-uid-torch1:': code },
      );
      await assert.rejects(reconcileKey('ns/torch1', deps(cluster)), new RegExp(`HTTP ${code}`));
      assert.ok(!calls.some((c) => c.startsWith('event:')));
    }
  });

  it('standalone, TrainJob suspended with a new numNodes, its JobSet still running: suspended alone too, never re-applied', async () => {
    const js = trainerJobSet('torch1');
    const { cluster, calls } = fakeCluster({
      trainJob: torch1(2),
      jobSet: { ...js, spec: { ...js.spec, suspend: false } },
    });
    await reconcileKey('ns/torch1', deps(cluster, {}, 'standalone'));
    assert.ok(calls.some((c) => c.startsWith('suspend-jobset')));
    assert.ok(!calls.some((c) => c.startsWith('apply-jobset')));
  });

  it('an Event that cannot be recorded does not fail the reconcile', async () => {
    const { cluster, calls } = fakeCluster(
      { trainJob: torch1(2), jobSet: trainerJobSet('torch1') },
      { 'event:JobSetDeleted': 403 },
    );
    await reconcileKey('ns/torch1', deps(cluster));
    assert.ok(calls.includes('delete-jobset'));
  });

  it('no longer the leader: nothing is written', async () => {
    const { cluster, calls } = fakeCluster({ trainJob: torch1(2), jobSet: trainerJobSet('torch1') });
    await assert.rejects(reconcileKey('ns/torch1', deps(cluster, { mayWrite: () => false })), NotLeaderError);
    assert.deepEqual(writes(calls), []);
  });

  it('leadership lost while a PVC patch is refused (403): the Blocked report is not written either', async () => {
    // The Lease is lost between the check before the PVC patch and the 403 coming back: the
    // Blocked report would be a second write made without a check (an SSA of the report that may
    // overwrite what the new leader wrote meanwhile).
    const js = trainerJobSet('ttpub');
    const { cluster, calls } = fakeCluster(
      {
        trainJob: trainJob('ttpub', { trainer: { numNodes: 2 } }),
        jobSet: js,
        runtime: 'torchtune',
        pvcs: [pvc('initializer-ttpub', { ownerReferences: [jobSetOwner(js)] })],
      },
      { 'patch-pvc:initializer-ttpub': 403 },
    );
    const mayWrite = () => !calls.includes('patch-pvc:initializer-ttpub');
    await assert.rejects(reconcileKey('ns/ttpub', deps(cluster, { mayWrite })), NotLeaderError);
    assert.deepEqual(writes(calls), ['patch-pvc:initializer-ttpub']);
  });

  it('the test crash point fires right after the delete', async () => {
    const { cluster, calls } = fakeCluster({ trainJob: torch1(2), jobSet: trainerJobSet('torch1') });
    let crashedAfter: string | undefined;
    await reconcileKey(
      'ns/torch1',
      deps(cluster, { crashAfter: 'delete-jobset', crash: async () => void (crashedAfter = calls.at(-1)) }),
    );
    assert.equal(crashedAfter, 'delete-jobset');
  });

  it('the release-pvcs crash point fires after the last release, before anything else', async () => {
    const js = trainerJobSet('ttpub');
    const { cluster, calls } = fakeCluster({
      trainJob: trainJob('ttpub', { trainer: { numNodes: 2 } }),
      jobSet: js,
      runtime: 'torchtune',
      pvcs: [pvc('initializer-ttpub', { ownerReferences: [jobSetOwner(js)] })],
    });
    let crashedAfter: string | undefined;
    await reconcileKey(
      'ns/ttpub',
      deps(cluster, { crashAfter: 'release-pvcs', crash: async () => void (crashedAfter ??= calls.at(-1)) }),
    );
    assert.equal(crashedAfter, 'patch-pvc:initializer-ttpub');
  });

  it('standalone, no JobSet: apply it and the status', async () => {
    const { cluster, calls } = fakeCluster({ trainJob: torch1(1) });
    await reconcileKey('ns/torch1', deps(cluster, {}, 'standalone'));
    assert.deepEqual(writes(calls), ['apply-jobset', 'apply-status']);
  });

  it("a resume refused behind a note a rebuild does not cure, Trainer's later refusals folded: the fold is written (the TrainJob's resourceVersion tested), looked at again in 30 s; a conflict on it is only logged", async () => {
    const tj = torch1(1, (t) => {
      t.spec!.suspend = false;
      t.status = {
        conditions: [
          {
            type: 'Suspended',
            status: 'False',
            reason: 'Resumed',
            message: '',
            lastTransitionTime: '2026-11-30T00:00:00Z',
          },
        ],
      };
    });
    const js = trainerJobSet('torch1');
    js.spec = { ...js.spec, suspend: true };
    js.metadata.creationTimestamp = '2026-11-29T00:00:00Z';
    const refusals: TrainerRefusal[] = [
      {
        at: '2026-11-30T00:00:00.5Z',
        created: '2026-11-30T00:00:01Z',
        message:
          'TrainJob resources reconciliation failed: Internal error occurred: failed calling webhook "vjobset.kb.io"',
        event: 'torch1.1875a',
        version: tj.metadata.resourceVersion,
        series: { count: 2, lastObserved: '2026-11-30T00:00:00.6Z' },
      },
    ];
    const now = () => new Date('2026-11-30T00:00:10Z');
    const fold = 'record-refusal-fold:torch1.1875a/2@2026-11-30T00:00:00.6Z:10';
    const { cluster, calls } = fakeCluster({ trainJob: tj, jobSet: js, refusals });
    const result = await reconcileKey('ns/torch1', deps(cluster, { now }));
    assert.deepEqual(writes(calls), [fold]);
    assert.equal(result.requeueAfterMs, 30_000);
    // A write that fails (a conflict) holds nothing back: the look 30 s later tries again.
    const conflict = fakeCluster({ trainJob: tj, jobSet: js, refusals }, { [fold]: 409 });
    const after = await reconcileKey('ns/torch1', deps(conflict.cluster, { now }));
    assert.deepEqual(writes(conflict.calls), [fold]);
    assert.equal(after.requeueAfterMs, 30_000);
  });

  it('a status field that cannot be written: the TrainJob is looked at again in 30 s, not at the resync hours away', async () => {
    const { cluster } = fakeCluster({ trainJob: torch1(1), jobSet: trainerJobSet('torch1') });
    const written: string[] = [];
    const ok = await reconcileKey(
      'ns/torch1',
      deps(cluster, { applyStatusField: async (t: TrainJob) => void written.push(t.metadata.name ?? '') }),
    );
    assert.deepEqual(written, ['torch1'], 'the field differs from the stored one: written');
    assert.equal(ok.requeueAfterMs, undefined, 'a current JobSet: nothing to look at again');
    const failed = await reconcileKey(
      'ns/torch1',
      deps(cluster, {
        applyStatusField: async () => {
          throw new ApiError(503);
        },
      }),
    );
    assert.equal(failed.requeueAfterMs, 30_000);
  });

  it('a status field already stored as it would be written: not written again', async () => {
    const fields: unknown[] = [];
    const applyStatusField = async (_t: TrainJob, field: unknown) => void fields.push(field);
    const first = fakeCluster({ trainJob: torch1(1), jobSet: trainerJobSet('torch1') });
    await reconcileKey('ns/torch1', deps(first.cluster, { applyStatusField }));
    assert.equal(fields.length, 1, 'none stored: written');
    const stored = torch1(1, (t) => {
      t.status = { ...t.status, trainjobWebhook: fields[0] };
    });
    const again = fakeCluster({ trainJob: stored, jobSet: trainerJobSet('torch1') });
    await reconcileKey('ns/torch1', deps(again.cluster, { applyStatusField }));
    assert.equal(fields.length, 1, 'the same field stored: no write');
  });

  it('a fold that cannot be removed once the resume is over: looked at again in 30 s', async () => {
    const tj = torch1(1, (t) => {
      t.spec!.suspend = false;
      t.metadata.annotations = { ...t.metadata.annotations, [REFUSAL_SEEN_ANNOTATION]: 'torch1.1875a/2' };
    });
    const js = trainerJobSet('torch1');
    js.spec = { ...js.spec, suspend: false };
    const forget = `record-refusal-fold:none:${tj.metadata.resourceVersion}`;
    const done = fakeCluster({ trainJob: tj, jobSet: js });
    const ok = await reconcileKey('ns/torch1', deps(done.cluster));
    assert.deepEqual(writes(done.calls), [forget]);
    assert.equal(ok.requeueAfterMs, undefined);
    const conflict = fakeCluster({ trainJob: tj, jobSet: js }, { [forget]: 409 });
    const failed = await reconcileKey('ns/torch1', deps(conflict.cluster));
    assert.deepEqual(writes(conflict.calls), [forget]);
    assert.equal(failed.requeueAfterMs, 30_000);
  });

  describe("with the watches' cache", () => {
    /** A cache holding `cached` as the informers store it (cache-shape.ts, frozen); the live cluster: the fake one. */
    const cacheOf = (
      cached: { trainJob?: TrainJob; jobSet?: JobSet; jobs?: ReturnType<typeof job>[] },
      synced = true,
    ): ClusterCache => ({
      synced: () => synced,
      getTrainJob: () => (cached.trainJob ? deepFreeze(trainJobForCache(structuredClone(cached.trainJob))) : undefined),
      getJobSet: () => (cached.jobSet ? deepFreeze(jobSetForCache(structuredClone(cached.jobSet))) : undefined),
      listJobs: () => (cached.jobs ?? [job('torch1-node-0')]).map((j) => deepFreeze(jobForCache(structuredClone(j))!)),
    });
    const reads = (calls: string[]) => calls.filter((c) => /^(get-|read-|list-)/.test(c));

    it('a current JobSet: the TrainJob and JobSet come from the cache; only the runtime is read', async () => {
      const { cluster, calls } = fakeCluster({ trainJob: torch1(1), jobSet: trainerJobSet('torch1') });
      await reconcileKey(
        'ns/torch1',
        deps(cluster, { cache: cacheOf({ trainJob: torch1(1), jobSet: trainerJobSet('torch1') }) }),
      );
      assert.deepEqual(reads(calls), ['read-runtime']);
    });

    it('workspace claims: the dry-run create is sent the JobSet read live, whole, not the cached shape', async () => {
      const js = trainerJobSet('ttpub');
      const dryRuns: JobSet[] = [];
      const { cluster, calls } = fakeCluster({
        trainJob: trainJob('ttpub', { trainer: { numNodes: 2 } }),
        jobSet: js,
        runtime: 'torchtune',
        pvcs: [pvc('initializer-ttpub', { ownerReferences: [jobSetOwner(js)] })],
        dryRuns,
      });
      const cache = cacheOf({ trainJob: trainJob('ttpub', { trainer: { numNodes: 2 } }), jobSet: js, jobs: [] });
      assert.notDeepEqual(cache.getJobSet('ns', 'ttpub'), js, 'the cache keeps less than the whole JobSet');
      await reconcileKey('ns/ttpub', deps(cluster, { cache }));
      assert.ok(calls.includes('get-jobset'));
      assert.deepEqual(dryRuns, [js]);
    });

    it('workspace claims: a JobSet replaced since the cache read is retried, never dry-run from the cache', async () => {
      const js = trainerJobSet('ttpub');
      const dryRuns: JobSet[] = [];
      const { cluster } = fakeCluster({
        trainJob: trainJob('ttpub', { trainer: { numNodes: 2 } }),
        jobSet: { ...js, metadata: { ...js.metadata, uid: 'another' } },
        runtime: 'torchtune',
        pvcs: [pvc('initializer-ttpub', { ownerReferences: [jobSetOwner(js)] })],
        dryRuns,
      });
      const cache = cacheOf({ trainJob: trainJob('ttpub', { trainer: { numNodes: 2 } }), jobSet: js, jobs: [] });
      await assert.rejects(reconcileKey('ns/ttpub', deps(cluster, { cache })), /deleted or replaced since it was read/);
      assert.deepEqual(dryRuns, []);
    });

    it('a rebuild: one live read right before the delete (the TrainJob, the Jobs and pods), then the delete', async () => {
      const { cluster, calls } = fakeCluster({ trainJob: torch1(2), jobSet: trainerJobSet('torch1') });
      await reconcileKey(
        'ns/torch1',
        deps(cluster, { cache: cacheOf({ trainJob: torch1(2), jobSet: trainerJobSet('torch1') }) }),
      );
      assert.deepEqual(reads(calls), ['read-runtime', 'list-children', 'get-trainjob', 'list-pvcs']);
      assert.deepEqual(writes(calls), ['report:Rebuilding', 'delete-jobset', 'event:JobSetDeleted']);
    });

    it('a Job the cache shows running: waits, with no live read', async () => {
      const { cluster, calls } = fakeCluster({ trainJob: torch1(2), jobSet: trainerJobSet('torch1') });
      const result = await reconcileKey(
        'ns/torch1',
        deps(cluster, {
          cache: cacheOf({
            trainJob: torch1(2),
            jobSet: trainerJobSet('torch1'),
            jobs: [job('torch1-node-0', { status: { active: 1 } })],
          }),
        }),
      );
      assert.deepEqual(reads(calls), ['read-runtime']);
      assert.ok(!calls.includes('delete-jobset'));
      assert.equal(result.requeueAfterMs, 3_000);
    });

    it('the cache lags: it still says numNodes 2, the stored TrainJob is back at 1: the live read wins, nothing is deleted', async () => {
      const { cluster, calls } = fakeCluster({ trainJob: torch1(1), jobSet: trainerJobSet('torch1') });
      await reconcileKey(
        'ns/torch1',
        deps(cluster, { cache: cacheOf({ trainJob: torch1(2), jobSet: trainerJobSet('torch1') }) }),
      );
      assert.ok(calls.includes('get-trainjob'));
      assert.deepEqual(writes(calls), []);
    });

    it('the cache lags: the TrainJob is gone when read live before the delete: nothing is written', async () => {
      const { cluster, calls } = fakeCluster({ jobSet: trainerJobSet('torch1') });
      assert.deepEqual(
        await reconcileKey(
          'ns/torch1',
          deps(cluster, { cache: cacheOf({ trainJob: torch1(2), jobSet: trainerJobSet('torch1') }) }),
        ),
        {},
      );
      assert.deepEqual(writes(calls), []);
    });

    it('a cache that has not synced yet is not read: everything is read live', async () => {
      const { cluster, calls } = fakeCluster({ trainJob: torch1(1), jobSet: trainerJobSet('torch1') });
      await reconcileKey('ns/torch1', deps(cluster, { cache: cacheOf({}, false) }));
      assert.deepEqual(reads(calls), ['get-trainjob', 'get-jobset', 'read-runtime']);
    });
  });

  describe('with the runtime memo', () => {
    it("a runtime read from Trainer's snapshot is read once per TrainJob; the live read before a delete reads it again", async () => {
      const runtimes = new RuntimeMemo();
      const current = fakeCluster({ trainJob: torch1(1), jobSet: trainerJobSet('torch1'), snapshot: true });
      await reconcileKey('ns/torch1', deps(current.cluster, { runtimes }));
      await reconcileKey('ns/torch1', deps(current.cluster, { runtimes }));
      assert.equal(current.calls.filter((c) => c === 'read-runtime').length, 1);
      const stale = fakeCluster({ trainJob: torch1(2), jobSet: trainerJobSet('torch1'), snapshot: true });
      await reconcileKey('ns/torch1', deps(stale.cluster, { runtimes }));
      assert.deepEqual(
        stale.calls.filter((c) => /^(get-|read-|list-)/.test(c)),
        ['get-trainjob', 'get-jobset', 'list-children', 'read-runtime', 'list-pvcs'],
      );
      assert.ok(stale.calls.includes('delete-jobset'));
    });

    it('a runtime read without a snapshot is not remembered; a TrainJob with another uid (re-created) is read again; a gone one is forgotten', async () => {
      const runtimes = new RuntimeMemo();
      const plain = fakeCluster({ trainJob: torch1(1), jobSet: trainerJobSet('torch1') });
      await reconcileKey('ns/torch1', deps(plain.cluster, { runtimes }));
      await reconcileKey('ns/torch1', deps(plain.cluster, { runtimes }));
      assert.equal(plain.calls.filter((c) => c === 'read-runtime').length, 2);
      const snap = fakeCluster({ trainJob: torch1(1), jobSet: trainerJobSet('torch1'), snapshot: true });
      await reconcileKey('ns/torch1', deps(snap.cluster, { runtimes }));
      assert.equal(runtimes.size, 1);
      const other = torch1(1, (t) => (t.metadata.uid = 'another-uid'));
      const again = fakeCluster({
        trainJob: other,
        jobSet: {
          ...trainerJobSet('torch1'),
          metadata: {
            ...trainerJobSet('torch1').metadata,
            ownerReferences: [
              {
                apiVersion: 'trainer.kubeflow.org/v1alpha1',
                kind: 'TrainJob',
                name: 'torch1',
                uid: 'another-uid',
                controller: true,
              },
            ],
          },
        },
        snapshot: true,
      });
      await reconcileKey('ns/torch1', deps(again.cluster, { runtimes }));
      assert.ok(again.calls.includes('read-runtime'));
      await reconcileKey('ns/torch1', deps(fakeCluster({}).cluster, { runtimes }));
      assert.equal(runtimes.size, 0);
    });
  });
});
