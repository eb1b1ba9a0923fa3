// `kubectl trainjob` under Kueue, end to end: the plugin's single executable run as batch users
// beside the real Kueue (the cell's: v0.17.1 in the default cell, v0.19.2 in
// trainer-v2.3.0/k8s-v1.37.2, hack/test-matrix.ts cellExtraFiles), Trainer, JobSet, the webhook and
// the reconciler, on KWOK nodes, with the Kueue suite's queue (support/kueue.ts: a ClusterQueue
// whose quota holds QUOTA_NODES nodes, preempting lower priorities within it).
//
// The users have what a batch user gets in a namespace: a Role on TrainJobs, JobSets and pods, and
// read access to Workloads as Kueue's workload-viewer-role gives (carol); dave also may patch
// Workloads (workload-editor-role), which --no-resume needs, as Kueue's own pause is the Workload's
// spec.active: false. Jobs are created by the admin.
//
// The flows: a queued job (held back by quota) scaled to fit and admitted at the new size; an
// admitted running job scaled (Kueue resumes it: the plugin never writes suspend: false); a job
// scaled beyond the quota stays pending and `status` shows Kueue's reason, and scaling it back lets
// it run; a preempted job scaled down to fit runs; --no-resume refused without the Workload right,
// held through the Workload with it, and ended by a later scale.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  controlPlaneAvailability,
  kueueAvailability,
  readVersions,
  upstreamControllersAvailability,
  waitFor,
  type UserKubeconfig,
} from '../harness/index.ts';
import { pluginExecutable } from '../harness/plugin.ts';
import type { TrainJob } from '../../src/api/objects.ts';
import { PROGRESS_ANNOTATION } from '../../src/plugin/progress.ts';
import { startSidecar } from '../reconciler/support/sidecar.ts';
import { api, inNamespace, parallelism, RECONCILER_SA, startWorld, type World } from '../reconciler/support/world.ts';
import {
  allowPreemption,
  condition,
  CPU_PER_NODE,
  isTrue,
  KUEUE,
  podCount,
  PRIORITY_LABEL,
  QUEUE_LABEL,
  QUOTA_NODES,
  startQueue,
  URGENT,
  type Obj,
} from './support/kueue.ts';
import { batchUserRules, runPlugin, showRun, usersWithRoles, type PluginRun } from './support/plugin-run.ts';

const controlPlane = controlPlaneAvailability();
const controllers = upstreamControllersAvailability();
const kueue = kueueAvailability();
const skip = !controlPlane.available
  ? controlPlane.reason
  : !controllers.available
    ? controllers.reason
    : !kueue.available
      ? kueue.reason
      : false;

const ns = 'ml-queue';
/** The manager name of the plugin's writes (its user agent, src/cluster/api-request.ts). */
const PLUGIN_MANAGER = 'trainjob-webhook';

/** What a write of the plugin's would change (Kueue and the reconciler write the job on their own). */
const written = (t: TrainJob) => ({
  suspend: t.spec?.suspend,
  numNodes: t.spec?.trainer?.numNodes,
  progress: t.metadata.annotations?.[PROGRESS_ANNOTATION],
});

/** The field managers that own spec.suspend: the last writer that changed it (an Update's managedFields). */
const suspendOwners = (t: TrainJob) =>
  (((t.metadata as Obj).managedFields ?? []) as Obj[])
    .filter((m) => m.fieldsV1?.['f:spec']?.['f:suspend'] !== undefined)
    .map((m) => m.manager as string);

describe(`kubectl trainjob beside Kueue ${readVersions().kueue}: scale and status as batch users`, { skip }, () => {
  let w: World;
  let a: ReturnType<typeof api>;
  let bin = '';
  let carol: UserKubeconfig;
  let dave: UserKubeconfig;
  const { getTj, create } = inNamespace(ns, () => w);
  const plugin = (user: UserKubeconfig, args: string[]) => runPlugin(w.cp, bin, user, [...args, '-n', ns]);

  const job = (name: string, numNodes: number, labels: Record<string, string> = {}): TrainJob => ({
    apiVersion: 'trainer.kubeflow.org/v1alpha1',
    kind: 'TrainJob',
    metadata: { name, namespace: ns, labels: { [QUEUE_LABEL]: 'queue', ...labels } },
    spec: {
      runtimeRef: { name: 'torch-distributed' },
      trainer: { numNodes, resourcesPerNode: { requests: { cpu: String(CPU_PER_NODE) } } },
    },
  });
  /** The job's Workloads (owned by it, not being deleted), read as the admin. */
  const workloads = async (name: string): Promise<Obj[]> => {
    const uid = (await getTj(name)).metadata.uid;
    const list = (await a.objects.listNamespacedCustomObject({ ...KUEUE, plural: 'workloads', namespace: ns })) as {
      items: Obj[];
    };
    return list.items.filter(
      (wl) =>
        (wl.metadata.ownerReferences as Obj[] | undefined)?.some((o) => o.uid === uid) &&
        !wl.metadata.deletionTimestamp,
    );
  };
  const waitWorkload = (name: string, what: string, pred: (wl: Obj) => boolean) =>
    waitFor(
      `${name}'s Workload: ${what}`,
      async () => {
        const wls = await workloads(name);
        return wls.length === 1 && pred(wls[0]) ? wls[0] : undefined;
      },
      { timeoutMs: 90_000 },
    );
  const runningPods = async (name: string) =>
    (await a.pods(ns, name)).filter((p) => p.status?.phase === 'Running' && !p.metadata?.deletionTimestamp);
  const waitRunning = (name: string, n: number) =>
    waitFor(`${n} pods of ${name} running`, async () => (await runningPods(name)).length === n, {
      timeoutMs: 90_000,
    });
  /** A scale that ended well: the job runs at `n` nodes, admitted at that size, resumed by Kueue. */
  const assertRunsAt = async (name: string, n: number, r: PluginRun) => {
    assert.equal(r.code, 0, showRun(r));
    assert.match(r.out, new RegExp(`^trainjob\\.trainer\\.kubeflow\\.org/${name} scaled to ${n} nodes? \\(`, 'm'));
    assert.doesNotMatch(r.out, /resuming the job/, 'under Kueue the plugin never resumes the job itself');
    const tj = await getTj(name);
    assert.deepEqual([tj.spec?.suspend, tj.spec?.trainer?.numNodes], [false, n]);
    assert.equal(tj.metadata.annotations?.[PROGRESS_ANNOTATION], undefined, 'the progress record is removed');
    const owners = suspendOwners(tj);
    assert.ok(owners.length > 0 && !owners.includes(PLUGIN_MANAGER), `spec.suspend last set by: ${owners.join(', ')}`);
    const [wl] = await workloads(name);
    assert.deepEqual([isTrue(wl, 'Admitted'), podCount(wl)], [true, n], 'admitted at the new size');
    assert.equal(parallelism(await a.getJobSet(ns, name)), n);
    await waitRunning(name, n);
  };

  before(async () => {
    [w, bin] = await Promise.all([startWorld({ trainer: true, webhook: true, kueue: true }), pluginExecutable()]);
    a = api(w.cp);
    await w.cp.kubectl(['create', 'namespace', ns]);
    await startQueue(w.cp, ns);
    await allowPreemption(w.cp);
    // A batch user's Role; Workloads as Kueue's workload-viewer-role (read) or -editor-role (patch too).
    const rules = (workloadVerbs: string[]) => [
      ...batchUserRules(['get', 'list', 'watch', 'update', 'patch']),
      { apiGroups: [KUEUE.group], resources: ['workloads'], verbs: workloadVerbs },
    ];
    [carol, dave] = await usersWithRoles(w.cp, ns, [
      { user: 'carol', role: 'batch-user', rules: rules(['get', 'list', 'watch']) },
      { user: 'dave', role: 'batch-editor', rules: rules(['get', 'list', 'watch', 'update', 'patch']) },
    ]);
    await startSidecar(w.cp, {
      name: 'reconciler',
      mode: 'companion',
      kubeconfig: w.reconcilerKubeconfig.path,
      leaseNamespace: RECONCILER_SA.namespace,
      handoffPort: w.handoffPort,
    });
    // alpha takes 3 of the quota's 4 nodes; beta, 2 nodes, waits for quota.
    await create(job('alpha', 3));
    await waitWorkload('alpha', 'admitted', (wl) => isTrue(wl, 'Admitted'));
    await waitRunning('alpha', 3);
    await create(job('beta', 2));
  });
  after(async () => {
    if (process.exitCode && w) process.stderr.write(w.cp.logTails(40));
    await w?.stop();
  });

  it('a queued job held back by quota, scaled 2 -> 1: admitted at the new size and run', async () => {
    const pending = await waitWorkload(
      'beta',
      'pending: quota held',
      (wl) => condition(wl, 'QuotaReserved')?.status === 'False',
    );
    assert.equal(isTrue(pending, 'Admitted'), false);
    const r = await plugin(carol, ['scale', 'beta', '--nodes', '1']);
    assert.doesNotMatch(r.out, /pausing/, 'Kueue has it suspended already');
    assert.doesNotMatch(r.out, /stays suspended/, "Kueue's suspension of a queued job is not a pause");
    assert.match(r.out, /^✓ setting numNodes to 1 \(/m, showRun(r));
    assert.match(r.out, /^✓ waiting for Kueue to admit the job \(/m);
    await assertRunsAt('beta', 1, r);
  });

  it('an admitted running job scaled 3 -> 2: paused and scaled in one update; Kueue admits the new size and resumes it', async () => {
    const r = await plugin(carol, ['scale', 'alpha', '--nodes', '2']);
    assert.match(r.out, /^✓ pausing and scaling in one update \(spec\.suspend: true, numNodes: 2\): /m, showRun(r));
    assert.doesNotMatch(r.out, /setting numNodes/, 'numNodes goes with the suspend, not after it');
    await assertRunsAt('alpha', 2, r);
  });

  it("scaled beyond the queue's quota (2 -> 5): it stays pending and status shows Kueue's reason; scaled back to 2 it runs", async () => {
    const r = await plugin(carol, ['scale', 'alpha', '--nodes', String(QUOTA_NODES + 1), '--timeout', '25s']);
    assert.equal(r.code, 1, showRun(r));
    assert.match(
      r.err,
      /^error: timed out after \d+s: TrainJob ml-queue\/alpha is suspended with numNodes 5; 0 pods left\./m,
    );
    const [wl] = await workloads('alpha');
    const held = condition(wl, 'QuotaReserved');
    assert.deepEqual([podCount(wl), held?.status], [QUOTA_NODES + 1, 'False'], 'its Workload for 5 nodes is pending');
    const reason = `${held?.reason}: ${held?.message}`;
    assert.ok(
      r.out.includes(
        `✗ waiting for Kueue to admit the job: Kueue has not admitted Workload ${wl.metadata.name}: ${reason}`,
      ),
      showRun(r),
    );
    const s = await plugin(carol, ['status', 'alpha']);
    assert.equal(s.code, 0, showRun(s));
    assert.ok(s.out.includes(`Kueue:        queue queue; not admitted: ${reason}`), showRun(s));
    assert.equal((await runningPods('alpha')).length, 0);

    const back = await plugin(carol, ['scale', 'alpha', '--nodes', '2']);
    assert.match(back.out, /^✓ setting numNodes to 2 \(/m, showRun(back));
    await assertRunsAt('alpha', 2, back);
  });

  it('preempted by a higher-priority job: scaled down 2 -> 1 to fit beside it, it runs', async () => {
    await w.tj.delete(ns, 'beta');
    await create(job('urgent', QUOTA_NODES - 1, { [PRIORITY_LABEL]: URGENT }));
    await waitWorkload('alpha', 'evicted by preemption', (wl) => condition(wl, 'Evicted')?.reason === 'Preempted');
    await waitRunning('urgent', QUOTA_NODES - 1);
    await waitFor('alpha suspended by Kueue', async () => (await getTj('alpha')).spec?.suspend === true);
    const r = await plugin(carol, ['scale', 'alpha', '--nodes', '1']);
    assert.doesNotMatch(r.out, /stays suspended|stays paused/, "Kueue's suspension of a preempted job is not a pause");
    assert.match(r.out, /^✓ setting numNodes to 1 \(/m, showRun(r));
    await assertRunsAt('alpha', 1, r);
    assert.equal((await runningPods('urgent')).length, QUOTA_NODES - 1, 'the preemptor runs on');
    await w.tj.delete(ns, 'urgent');
  });

  it('--no-resume: refused before any write without the right to patch Workloads; with it the job stays paused through its inactive Workload; a later scale activates it and it runs', async () => {
    const before = await getTj('alpha');
    const [wlBefore] = await workloads('alpha');
    const refused = await plugin(carol, ['scale', 'alpha', '--nodes', '2', '--no-resume']);
    assert.equal(refused.code, 1, showRun(refused));
    assert.match(
      refused.err,
      /^error: --no-resume under Kueue pauses the job through its Workload's spec\.active: false, and you may not patch workloads\.kueue\.x-k8s\.io in namespace ml-queue \(Kueue's workload-editor-role has it; workload-viewer-role does not\)/m,
    );
    assert.equal(refused.out, '', 'no step taken');
    assert.deepEqual(written(await getTj('alpha')), written(before));
    assert.deepEqual(
      (await workloads('alpha')).map((wl) => [wl.metadata.uid, wl.spec.active]),
      [[wlBefore.metadata.uid, true]],
      'its Workload untouched',
    );

    const r = await plugin(dave, ['scale', 'alpha', '--nodes', '2', '--no-resume']);
    assert.equal(r.code, 0, showRun(r));
    assert.match(
      r.out,
      /^✓ deactivating Workload \S+ \(spec\.active: false\): Kueue evicts it and suspends the job \(/m,
    );
    assert.match(r.out, /alpha scaled to 2 nodes, suspended \(/);
    const paused = await getTj('alpha');
    assert.deepEqual([paused.spec?.suspend, paused.spec?.trainer?.numNodes], [true, 2]);
    assert.deepEqual(
      (await workloads('alpha')).map((wl) => [wl.spec.active, isTrue(wl, 'QuotaReserved')]),
      [[false, false]],
      'its Workload inactive, holding no quota',
    );
    assert.equal((await runningPods('alpha')).length, 0);
    const s = await plugin(carol, ['status', 'alpha']);
    assert.match(s.out, /^Next: +paused by "kubectl trainjob scale --no-resume" at 2 nodes/m, showRun(s));
    // Ending the pause is the same Workload write: carol may not.
    const notHers = await plugin(carol, ['scale', 'alpha', '--nodes', '2']);
    assert.equal(notHers.code, 1, showRun(notHers));
    assert.match(notHers.err, /resuming it sets spec\.active: true, and you may not patch workloads/);
    assert.deepEqual(written(await getTj('alpha')), written(paused));

    const resumed = await plugin(dave, ['scale', 'alpha', '--nodes', '2']);
    assert.match(resumed.out, /^✓ activating Workload \S+ \(spec\.active: true\)/m, showRun(resumed));
    await assertRunsAt('alpha', 2, resumed);
    assert.equal((await workloads('alpha'))[0].spec.active, true);
  });
});
