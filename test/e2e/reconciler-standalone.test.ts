// Issue 4, flow 4: standalone mode, where Trainer's controller is not installed. The sidecar builds
// the JobSet itself and applies it with SSA under its own field manager (the real JobSet v0.12.0
// manager and webhooks beside it), rebuilds it on a node-count change with the same guards as in
// companion mode, and owns the TrainJob's status (Suspended, and Complete/Failed and jobsStatus
// from the JobSet as Trainer writes them, via SSA on /status). The API server enforces owner
// references (OwnerReferencesPermissionEnforcement, on by default in OpenShift).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CustomObjectsApi } from '@kubernetes/client-node';
import {
  controlPlaneAvailability,
  isRunningReady,
  pods,
  upstreamControllersAvailability,
  waitFor,
  skipUnless,
} from '../harness/index.ts';
import type { Condition } from '../../src/api/objects.ts';
import { startSidecar, type Sidecar } from '../reconciler/support/sidecar.ts';
import {
  api,
  envValue,
  parallelism,
  RECONCILER_SA,
  rJob,
  inNamespace,
  startWorld,
  torchTrainJob,
  type World,
} from '../reconciler/support/world.ts';

const skip = skipUnless(controlPlaneAvailability(), upstreamControllersAvailability());

describe('reconciler, standalone mode (no Trainer controller), beside the real JobSet controller', { skip }, () => {
  let w: World;
  let a: ReturnType<typeof api>;
  let sidecar: Sidecar;
  const ns = 'standalone';
  const { key, getTj, create, patch } = inNamespace(ns, () => w);
  const condition = async (name: string, type: string): Promise<Condition | undefined> =>
    (await getTj(name)).status?.conditions?.find((c) => c.type === type);
  const reconciles = (name: string) =>
    sidecar.logLines().filter((l) => l.msg === 'reconciled' && l.trainJob === key(name));
  /** Hands the sidecar a hint for the stored TrainJob, as the webhook would, and waits for the reconcile it causes. */
  const nudge = async (name: string) => {
    const t = await getTj(name);
    const before = reconciles(name).length;
    const res = await fetch(sidecar.handoffUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ namespace: ns, name, uid: t.metadata.uid, generation: t.metadata.generation }),
    });
    assert.equal(res.status, 202);
    await waitFor(`a reconcile of ${name} after the hint`, () => reconciles(name).length > before);
    return reconciles(name).at(-1)!;
  };

  before(async () => {
    w = await startWorld({
      trainer: false,
      webhook: true,
      apiServerArgs: ['--enable-admission-plugins=OwnerReferencesPermissionEnforcement'],
    });
    a = api(w.cp);
    await w.cp.kubectl(['create', 'namespace', ns]);
    sidecar = await startSidecar(w.cp, {
      name: 'reconciler',
      mode: 'standalone',
      kubeconfig: w.reconcilerKubeconfig.path,
      leaseNamespace: RECONCILER_SA.namespace,
      handoffPort: w.handoffPort,
    });
  });
  after(async () => {
    if (process.exitCode && w) process.stderr.write(w.cp.logTails(20));
    await w?.stop();
  });

  it('a hint for a TrainJob that was never stored is dropped after a bounded wait (checked at the end)', async () => {
    const res = await fetch(sidecar.handoffUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        namespace: ns,
        name: 'never',
        uid: '00000000-0000-4000-8000-000000000000',
        generation: 1,
      }),
    });
    assert.equal(res.status, 202);
    const bad = await fetch(sidecar.handoffUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"namespace":"x"}',
    });
    assert.equal(bad.status, 400);
  });

  it('builds and applies the JobSet with SSA under its own field manager, owned by the TrainJob; Suspended=True', async () => {
    const tj = await create(torchTrainJob('s1', ns));
    const js = await a.waitJobSet(ns, 's1', 'applied with 1 node', (j) => parallelism(j) === 1);
    assert.deepEqual(js.metadata.ownerReferences, [
      {
        apiVersion: 'trainer.kubeflow.org/v1alpha1',
        kind: 'TrainJob',
        name: 's1',
        uid: tj.metadata.uid,
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
    assert.equal(js.spec?.suspend, true);
    assert.equal(rJob(js)?.replicas, 1);
    assert.equal(envValue(js, 'PET_NNODES'), '1');
    assert.equal(envValue(js, 'PET_MASTER_ADDR'), 's1-node-0-0.s1');
    const managers = ((js.metadata as { managedFields?: { manager: string; operation: string }[] }).managedFields ?? [])
      .filter((m) => m.operation === 'Apply')
      .map((m) => m.manager);
    assert.deepEqual(managers, ['trainjob-webhook-reconciler']);
    const suspended = await waitFor('Suspended=True', () =>
      condition('s1', 'Suspended').then((c) => (c?.status === 'True' ? c : undefined)),
    );
    assert.deepEqual([suspended.reason, suspended.message], ['Suspended', 'TrainJob is suspended']);
  });

  it("reconciling twice with nothing changed leaves the JobSet's resourceVersion unchanged", async () => {
    const settled = await waitFor('s1 settled', async () => {
      const first = [
        (await getTj('s1')).metadata.resourceVersion,
        (await a.getJobSet(ns, 's1'))?.metadata.resourceVersion,
      ];
      await new Promise((r) => setTimeout(r, 1_500));
      const second = [
        (await getTj('s1')).metadata.resourceVersion,
        (await a.getJobSet(ns, 's1'))?.metadata.resourceVersion,
      ];
      return first.join() === second.join() ? second : undefined;
    });
    const once = await nudge('s1');
    const twice = await nudge('s1');
    assert.deepEqual(once.steps, ['apply-jobset'], 'a suspended JobSet is re-applied (its suspend may have to follow)');
    assert.deepEqual(twice.steps, ['apply-jobset']);
    assert.deepEqual(
      [(await getTj('s1')).metadata.resourceVersion, (await a.getJobSet(ns, 's1'))?.metadata.resourceVersion],
      settled,
    );
  });

  it('scale 1 -> 2 while suspended: the stale JobSet is deleted and re-applied with parallelism 2 and PET_NNODES=2', async () => {
    const old = await a.getJobSet(ns, 's1');
    await patch('s1', { spec: { trainer: { numNodes: 2 } } });
    const js = await a.waitJobSet(
      ns,
      's1',
      're-applied with 2 nodes',
      (j) => j.metadata.uid !== old?.metadata.uid && parallelism(j) === 2,
    );
    assert.equal(rJob(js)?.template?.spec?.completions, 2);
    assert.equal(envValue(js, 'PET_NNODES'), '2');
    assert.equal(js.spec?.suspend, true);
    await waitFor('the Rebuilt report', async () => a.report(await getTj('s1'))?.state === 'Rebuilt');
  });

  it('resume: the JobSet is applied unsuspended (same JobSet), Suspended=False/Resumed; while both run it is never re-applied', async () => {
    const js = await a.getJobSet(ns, 's1');
    await patch('s1', { spec: { suspend: false } });
    const running = await a.waitJobSet(ns, 's1', 'resumed', (j) => j.spec?.suspend === false);
    assert.equal(running.metadata.uid, js?.metadata.uid);
    const resumed = await waitFor('Suspended=False', () =>
      condition('s1', 'Suspended').then((c) => (c?.status === 'False' ? c : undefined)),
    );
    assert.deepEqual([resumed.reason, resumed.message], ['Resumed', 'TrainJob is resumed']);
    await waitFor('2 running pods', async () => {
      const p = await a.pods(ns, 's1');
      return p.length === 2 && p.every(isRunningReady);
    });
    const line = await nudge('s1');
    assert.ok(!line.steps?.includes('apply-jobset'), JSON.stringify(line));
  });

  it('atomic: resume and scale in one update converges to one unsuspended JobSet with the new count', async () => {
    await create(torchTrainJob('s2', ns));
    const old = await a.waitJobSet(ns, 's2', 'applied with 1 node', (j) => parallelism(j) === 1);
    await patch('s2', { spec: { suspend: false, trainer: { numNodes: 3 } } });
    const js = await a.waitJobSet(
      ns,
      's2',
      're-applied unsuspended with 3 nodes',
      (j) => j.metadata.uid !== old.metadata.uid && parallelism(j) === 3 && j.spec?.suspend === false,
    );
    assert.equal(envValue(js, 'PET_NNODES'), '3');
    await waitFor('3 pods', async () => (await a.pods(ns, 's2')).length === 3);
  });

  it('a JobSet with a pod still present (Terminating) is never deleted; once it is gone the rebuild happens', async () => {
    await create(torchTrainJob('s3', ns, { suspend: false }));
    const old = await a.waitJobSet(
      ns,
      's3',
      'running with 1 node',
      (j) => parallelism(j) === 1 && j.spec?.suspend === false,
    );
    const { release } = await a.holdFirstPod(ns, 's3');
    await patch('s3', { spec: { suspend: true } });
    await a.waitJobSet(ns, 's3', 'suspended', (j) => j.spec?.suspend === true);
    await waitFor('numNodes 2 admitted', () =>
      patch('s3', { spec: { trainer: { numNodes: 2 } } }).then(
        () => true,
        () => false,
      ),
    );
    const gen = (await getTj('s3')).metadata.generation;
    await sidecar.reconciled(key('s3'), (l) => l.generation === gen && l.outcome === 'waiting');
    await new Promise((r) => setTimeout(r, 4_000));
    assert.equal((await a.getJobSet(ns, 's3'))?.metadata.uid, old.metadata.uid);
    await release();
    await a.waitJobSet(
      ns,
      's3',
      're-applied with 2 nodes',
      (j) => j.metadata.uid !== old.metadata.uid && parallelism(j) === 2,
    );
  });

  it("under OwnerReferencesPermissionEnforcement the JobSet is created, owned with blockOwnerDeletion (the reconciler may update the TrainJob's finalizers); without that right the same create is refused", async () => {
    const tj = await create(torchTrainJob('owned', ns));
    const js = await a.waitJobSet(ns, 'owned', 'created', () => true);
    assert.equal(js.metadata.ownerReferences?.[0]?.blockOwnerDeletion, true);
    // Control: the plugin is on. An identity that may create JobSets but not update trainjobs/finalizers is refused.
    const user = 'no-finalizers';
    await w.cp.applyYaml(
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'List',
        items: [
          {
            apiVersion: 'rbac.authorization.k8s.io/v1',
            kind: 'Role',
            metadata: { name: user, namespace: ns },
            rules: [{ apiGroups: ['jobset.x-k8s.io'], resources: ['jobsets'], verbs: ['create'] }],
          },
          {
            apiVersion: 'rbac.authorization.k8s.io/v1',
            kind: 'RoleBinding',
            metadata: { name: user, namespace: ns },
            roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: user },
            subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
          },
        ],
      }),
    );
    const objects = (await w.cp.makeUserKubeconfig(user)).kubeConfig.makeApiClient(CustomObjectsApi);
    const {
      uid: _uid,
      resourceVersion: _rv,
      creationTimestamp: _ct,
      managedFields: _mf,
      ...metadata
    } = js.metadata as Record<string, unknown>;
    const refused = await objects
      .createNamespacedCustomObject({
        group: 'jobset.x-k8s.io',
        version: 'v1alpha2',
        plural: 'jobsets',
        namespace: ns,
        dryRun: 'All',
        body: { ...js, metadata: { ...metadata, name: 'owned-copy' }, status: undefined },
      })
      .then(
        () => 'admitted',
        (err: { body?: string }) => String(err.body),
      );
    assert.match(
      refused,
      /cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on/,
    );
    assert.equal(js.metadata.ownerReferences?.[0]?.uid, tj.metadata.uid);
  });

  it("a finished JobSet makes the TrainJob Complete (the JobSet's Completed condition, as Trainer copies it) with jobsStatus", async () => {
    await create(torchTrainJob('done', ns, { suspend: false }));
    await a.waitJobSet(ns, 'done', 'created running', (j) => j.spec?.suspend === false);
    await waitFor('1 running pod', async () => (await a.pods(ns, 'done')).filter(isRunningReady).length === 1);
    await pods(w.cp).endJobSetTraining(ns, 'done', 'Succeeded');
    const complete = await waitFor('Complete=True', () =>
      condition('done', 'Complete').then((c) => (c?.status === 'True' ? c : undefined)),
    );
    const completed = (await a.getJobSet(ns, 'done'))?.status?.conditions as Condition[];
    const fromJobSet = completed.find((c) => c.type === 'Completed');
    assert.deepEqual(
      [complete.reason, complete.message, complete.lastTransitionTime],
      [fromJobSet?.reason, fromJobSet?.message, fromJobSet?.lastTransitionTime],
    );
    assert.equal(complete.reason, 'AllJobsCompleted');
    const status = await waitFor('jobsStatus: node succeeded', async () => {
      const s = (await getTj('done')).status?.jobsStatus as { name: string; succeeded: number }[] | undefined;
      return s?.find((j) => j.name === 'node')?.succeeded === 1 ? s : undefined;
    });
    assert.deepEqual(status, [{ name: 'node', ready: 0, succeeded: 1, failed: 0, active: 0, suspended: 0 }]);
  });

  it('an MPI runtime gets a clear condition, never a half-built JobSet', async () => {
    await create({
      apiVersion: 'trainer.kubeflow.org/v1alpha1',
      kind: 'TrainJob',
      metadata: { name: 'm1', namespace: ns },
      spec: { runtimeRef: { name: 'deepspeed-distributed' }, suspend: true, trainer: { numNodes: 2 } },
    });
    const c = await waitFor('the JobSetCreated=False condition', () => condition('m1', 'JobSetCreated'));
    assert.deepEqual([c.status, c.reason], ['False', 'UnsupportedRuntime']);
    assert.match(c.message, /MPI policy, which standalone mode does not build/);
    assert.equal((await condition('m1', 'Suspended'))?.status, 'True');
    assert.equal(a.report(await getTj('m1'))?.state, 'Unsupported');
    assert.equal(await a.getJobSet(ns, 'm1'), undefined);
  });

  it('(the hint for the TrainJob that never was: dropped, nothing queued for it)', async () => {
    await waitFor(
      'the hint expired',
      async () => (await sidecar.metric('trainjob_reconciler_handoff_hints_total', /result="expired"/)) === 1,
      { timeoutMs: 20_000 },
    );
    assert.equal(reconciles('never').length, 0);
  });
});
