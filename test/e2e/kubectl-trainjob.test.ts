// `kubectl trainjob` end to end: the plugin's single executable (what users without Node install,
// built by hack/build-plugin.ts from this tree; no Node on its PATH) run as a child process, as a user
// with a namespace Role only (no admin rights), beside the real Trainer, JobSet, the webhook and
// the reconciler, in the KWOK world where pods run. Scale up and down to the end, a server dry run
// that changes nothing, --no-resume and the later scale that resumes, refusals before any write
// (a missing right, a MultiKueue-managed job, a finished job, a runtime whose JobSet cannot be
// rebuilt, no reconciler leading, a cluster without the CRD patch), Ctrl-C during the wait and the
// run that continues, `status`, and kubectl finding the plugin on PATH. The last two refusals
// change the world (the reconciler stopped, upstream's CRD re-applied) and put it back.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  controlPlaneAvailability,
  currentCell,
  pods,
  projectRoot,
  upstreamControllersAvailability,
  upstreamCrdsOf,
  waitFor,
  skipUnless,
} from '../harness/index.ts';
import { pluginExecutable } from '../harness/plugin.ts';
import type { UserKubeconfig } from '../harness/index.ts';
import type { TrainJob } from '../../src/api/objects.ts';
import { PROGRESS_ANNOTATION } from '../../src/plugin/progress.ts';
import type { Sidecar } from '../reconciler/support/sidecar.ts';
import {
  api,
  inNamespace,
  parallelism,
  startWorld,
  startWorldReconciler,
  type World,
} from '../reconciler/support/world.ts';
import { batchUserRules, runPlugin, showRun as show, usersWithRoles, type RunOptions } from './support/plugin-run.ts';

const skip = skipUnless(controlPlaneAvailability(), upstreamControllersAvailability());

/** The single executable, set once it is built (before). */
let BIN = '';
const ns = 'ml-team';

/** What a write of the user's would change (Trainer's status writes move the resourceVersion on their own). */
const written = (t: TrainJob) => ({ generation: t.metadata.generation, annotations: t.metadata.annotations ?? {} });

describe('kubectl trainjob: scale and status as a user with a namespace Role', { skip }, () => {
  let w: World;
  let a: ReturnType<typeof api>;
  let alice: UserKubeconfig;
  let bob: UserKubeconfig;
  let reconciler: Sidecar;
  const { getTj, create } = inNamespace(ns, () => w);
  /** The plugin as a user runs it (support/plugin-run.ts). */
  const plugin = (user: UserKubeconfig, args: string[], opts?: RunOptions) => runPlugin(w.cp, BIN, user, args, opts);
  const runningPods = async (name: string) =>
    (await a.pods(ns, name)).filter((p) => p.status?.phase === 'Running' && !p.metadata?.deletionTimestamp);

  const job = (name: string, numNodes: number, spec: Record<string, unknown> = {}): TrainJob => ({
    apiVersion: 'trainer.kubeflow.org/v1alpha1',
    kind: 'TrainJob',
    metadata: { name, namespace: ns },
    spec: { runtimeRef: { name: 'torch-distributed' }, suspend: false, trainer: { numNodes }, ...spec },
  });

  before(async () => {
    [w, BIN] = await Promise.all([startWorld({ trainer: true, webhook: true }), pluginExecutable()]);
    a = api(w.cp);
    await w.cp.kubectl(['create', 'namespace', ns]);
    // alice: what a batch user gets in her namespace; bob: read only.
    [alice, bob] = await usersWithRoles(w.cp, ns, [
      { user: 'alice', role: 'trainer', rules: batchUserRules(['get', 'list', 'watch', 'update', 'patch']) },
      { user: 'bob', role: 'viewer', rules: batchUserRules(['get', 'list', 'watch']) },
    ]);
    reconciler = await startWorldReconciler(w);
    await create(job('llama', 1));
    await waitFor('1 pod of llama running', async () => (await runningPods('llama')).length === 1);
  });
  after(async () => {
    if (process.exitCode && w) process.stderr.write(w.cp.logTails(20));
    await w?.stop();
  });

  it('--dry-run=server: the checks and one server-side dry run; nothing changes', async () => {
    const before = await getTj('llama');
    const r = await plugin(alice, ['scale', 'llama', '-n', ns, '--nodes', '2', '--dry-run=server']);
    assert.equal(r.code, 0, show(r));
    assert.match(r.out, /trainjob\.trainer\.kubeflow\.org\/llama scaled to 2 nodes \(server dry run\)/);
    assert.match(r.err, /Warning: spec\.trainer\.numNodes changes from 1 to 2/);
    assert.deepEqual(written(await getTj('llama')), written(before));
  });

  it('refuses before any write: a right the user lacks, a job another cluster runs (MultiKueue)', async () => {
    const before = await getTj('llama');
    const r = await plugin(bob, ['scale', 'llama', '--nodes', '2', '-n', ns]);
    assert.equal(r.code, 1, show(r));
    assert.match(r.err, /you may not patch trainjobs\.trainer\.kubeflow\.org in namespace ml-team/);
    await create(job('remote', 1, { managedBy: 'kueue.x-k8s.io/multikueue' }));
    const remote = await getTj('remote');
    const m = await plugin(alice, ['scale', 'remote', '--nodes', '2', '-n', ns]);
    assert.equal(m.code, 1, show(m));
    assert.match(m.err, /managed by kueue\.x-k8s\.io\/multikueue/);
    const notFound = await plugin(alice, ['scale', 'nope', '--nodes', '2', '-n', ns]);
    assert.equal(notFound.code, 1, show(notFound));
    assert.match(notFound.err, /^Error from server \(NotFound\): trainjobs\.trainer\.kubeflow\.org "nope" not found/m);
    assert.deepEqual(written(await getTj('llama')), written(before));
    assert.deepEqual(written(await getTj('remote')), written(remote));
  });

  it('refuses a finished job before any write: Complete (its training succeeded), Failed with DeadlineExceeded', async () => {
    const p = pods(w.cp);
    const condition = async (name: string, type: string, reason?: string) =>
      (await getTj(name)).status?.conditions?.some(
        (c) => c.type === type && c.status === 'True' && (!reason || c.reason === reason),
      );
    // Finished as Trainer finishes them: the training of its pod ends with exit 0; the deadline passes.
    await Promise.all([
      (async () => {
        await create(job('done', 1));
        await p.waitJobSetRunning(ns, 'done', 1, 'node');
        await p.endJobSetTraining(ns, 'done', 'Succeeded');
        await waitFor('TrainJob done Complete', () => condition('done', 'Complete'), { timeoutMs: 90_000 });
      })(),
      (async () => {
        await create(job('late', 1, { activeDeadlineSeconds: 3 }));
        await waitFor('TrainJob late Failed/DeadlineExceeded', () => condition('late', 'Failed', 'DeadlineExceeded'), {
          timeoutMs: 90_000,
        });
      })(),
    ]);
    for (const [name, why] of [
      ['done', 'it is Complete'],
      ['late', 'it failed with DeadlineExceeded'],
    ]) {
      const before = await getTj(name);
      const r = await plugin(alice, ['scale', name, '--nodes', '2', '-n', ns]);
      assert.equal(r.code, 1, show(r));
      assert.equal(
        r.err,
        `error: TrainJob ${name} is finished (${why}): Trainer never runs it again, so its node count cannot change. Create a new TrainJob with 2 nodes instead.\n`,
      );
      assert.equal(r.out, '');
      assert.deepEqual(written(await getTj(name)), written(before));
    }
  });

  it("refuses a job whose JobSet cannot be rebuilt (torchtune's workspace claims): the webhook's refusal of the dry run, with the way out", async () => {
    await create(job('claims', 1, { runtimeRef: { name: 'torchtune-llama3.2-1b' }, suspend: true }));
    const built = await a.waitJobSet(ns, 'claims', 'built for 1 node', (js) => parallelism(js) === 1);
    const before = await getTj('claims');
    const r = await plugin(alice, ['scale', 'claims', '--nodes', '2', '-n', ns]);
    assert.equal(r.code, 1, show(r));
    assert.match(
      r.err,
      /^Error from server \(Forbidden\): admission webhook "[^"]+" denied the request: .*spec\.trainer\.numNodes: Forbidden: its JobSet has workspace claims \(spec\.volumeClaimPolicies\): JobSet v\S+ refuses to re-create it .*copy the data out of the claims and create a new TrainJob with numNodes 2/m,
    );
    assert.equal(r.out, '');
    assert.deepEqual(written(await getTj('claims')), written(before));
    assert.equal((await a.getJobSet(ns, 'claims'))?.metadata.uid, built.metadata.uid);
  });

  it('scales up 1 -> 2 to the end: paused, pods gone, numNodes set, JobSet rebuilt, resumed, pods scheduled', async (t) => {
    const r = await plugin(alice, ['scale', 'llama', '-n', ns, '--nodes', '2']);
    assert.equal(r.code, 0, show(r));
    // The output as a user sees it (docs/scale-a-trainjob.md and README.md show it).
    t.diagnostic(`$ kubectl trainjob scale llama -n ${ns} --nodes 2\n${r.out}${r.err}`);
    for (const step of [
      /^✓ pausing the job \(spec\.suspend: true\): its pods have \d+s to checkpoint \(terminationGracePeriodSeconds\) \(/m,
      /^✓ setting numNodes to 2 \(/m,
      /^✓ resuming the job \(spec\.suspend: false\) \(/m,
      /^trainjob\.trainer\.kubeflow\.org\/llama scaled to 2 nodes \(/m,
    ])
      assert.match(r.out, step, show(r));
    const tj = await getTj('llama');
    assert.equal(tj.spec?.suspend, false);
    assert.equal(tj.spec?.trainer?.numNodes, 2);
    assert.equal(tj.metadata.annotations?.[PROGRESS_ANNOTATION], undefined);
    assert.equal(parallelism(await a.getJobSet(ns, 'llama')), 2);
    assert.ok((await a.pods(ns, 'llama')).filter((p) => p.spec?.nodeName).length >= 2);
  });

  it('status: one job as a block, the namespace as a table, -o json', async (t) => {
    const one = await plugin(alice, ['status', 'llama', '-n', ns]);
    assert.equal(one.code, 0, show(one));
    t.diagnostic(`$ kubectl trainjob status llama -n ${ns}\n${one.out}${one.err}`);
    assert.match(one.out, /^Nodes: +2 asked; the JobSet is built for 2$/m);
    assert.match(one.out, /^Next: +to change its node count: kubectl trainjob scale llama -n ml-team --nodes N$/m);
    const table = await plugin(alice, ['status', '-n', ns]);
    assert.equal(table.code, 0, show(table));
    assert.match(table.out, /^NAME +NODES +JOBSET +STATE +REBUILD +KUEUE$/m);
    assert.match(table.out, /^llama +2 +2 +\S+/m);
    const json = JSON.parse((await plugin(alice, ['status', 'llama', '-n', ns, '-o', 'json'])).out);
    assert.equal(json.nodes, 2);
    assert.equal(json.jobSetNodes, 2);
  });

  it('Ctrl-C while the pods stop: the job stays paused with its record; the same command continues and scales down 2 -> 1', async () => {
    const held = await a.holdFirstPod(ns, 'llama');
    let sent = false;
    const r = await plugin(alice, ['scale', 'llama', '-n', ns, '--nodes', '1'], {
      // One Ctrl-C, once the pause is written (a second one would end the process by the signal).
      onOut: (out, child) => {
        if (!sent && /pausing the job/.test(out)) sent = child.kill('SIGINT');
      },
    });
    assert.equal(r.code, 130, show(r));
    assert.match(r.err, /interrupted: TrainJob ml-team\/llama is suspended with numNodes 2; \d+ pods? left\./);
    assert.match(r.err, /run "kubectl trainjob scale llama -n ml-team --nodes 1" to continue/);
    const paused = await getTj('llama');
    assert.equal(paused.spec?.suspend, true);
    assert.deepEqual(JSON.parse(paused.metadata.annotations?.[PROGRESS_ANNOTATION] ?? '{}'), {
      nodes: 1,
      step: 'paused',
      pausedBefore: false,
    });
    await held.release();
    const again = await plugin(alice, ['scale', 'llama', '-n', ns, '--nodes', '1']);
    assert.equal(again.code, 0, show(again));
    assert.doesNotMatch(again.out, /pausing the job/);
    assert.match(again.out, /^✓ setting numNodes to 1 \(/m);
    const tj = await getTj('llama');
    assert.equal(tj.spec?.suspend, false);
    assert.equal(tj.spec?.trainer?.numNodes, 1);
    assert.equal(tj.metadata.annotations?.[PROGRESS_ANNOTATION], undefined);
    assert.equal(parallelism(await a.getJobSet(ns, 'llama')), 1);
  });

  it('--no-resume leaves it suspended (status says so); a later scale resumes it', async () => {
    const r = await plugin(alice, ['scale', 'llama', '-n', ns, '--nodes', '2', '--no-resume']);
    assert.equal(r.code, 0, show(r));
    assert.match(r.out, /llama scaled to 2 nodes, suspended/);
    const held = await getTj('llama');
    assert.equal(held.spec?.suspend, true);
    assert.equal(held.spec?.trainer?.numNodes, 2);
    const s = await plugin(alice, ['status', 'llama', '-n', ns]);
    assert.match(s.out, /^Next: +paused by "kubectl trainjob scale --no-resume" at 2 nodes/m, show(s));
    const resume = await plugin(alice, ['scale', 'llama', '-n', ns, '--nodes', '2']);
    assert.equal(resume.code, 0, show(resume));
    assert.match(resume.out, /^✓ resuming the job/m);
    const tj = await getTj('llama');
    assert.equal(tj.spec?.suspend, false);
    assert.equal(tj.metadata.annotations?.[PROGRESS_ANNOTATION], undefined);
    await waitFor('2 pods of llama running', async () => (await runningPods('llama')).length === 2);
  });

  it('kubectl finds the plugin on PATH: kubectl trainjob status', async () => {
    const r = await runPlugin(w.cp, w.cp.binaries.kubectl, alice, ['trainjob', 'status', 'llama', '-n', ns], {
      path: path.dirname(BIN),
    });
    assert.equal(r.code, 0, show(r));
    assert.match(r.out, /^Name: +ml-team\/llama$/m);
  });

  // The last two change the world for a while and put it back: the reconciler stopped, upstream's CRD.

  /**
   * A server dry run of llama's scale to 3 nodes (a count it never has: a rebuild, whichever test
   * ran before): how the tests below wait for the webhook and the API server.
   */
  const dryRun = () => plugin(alice, ['scale', 'llama', '-n', ns, '--nodes', '3', '--dry-run=server']);

  it('refuses while no reconciler leads (stopped, its Lease released): for now, run it again; admitted once one leads again', async (t) => {
    await reconciler.proc.stop();
    // Whatever happens below, a reconciler leads again for the tests after this one.
    t.after(async () => {
      if (reconciler.proc.exitStatus === undefined) return; // started again below
      reconciler = await startWorldReconciler(w, 'reconciler-again');
    });
    // The webhook follows the Lease by a watch: its release reaches it in a moment.
    await waitFor('the webhook sees no reconciler leading', async () =>
      /no reconciler leads to carry the rebuild out/.test((await dryRun()).err),
    );
    const before = await getTj('llama');
    const r = await plugin(alice, ['scale', 'llama', '-n', ns, '--nodes', '3']);
    assert.equal(r.code, 1, show(r));
    assert.match(
      r.err,
      /^Error from server \(ServiceUnavailable\): admission webhook "[^"]+" denied the request: TrainJob\.trainer\.kubeflow\.org "llama" cannot be changed now: spec\.trainer\.numNodes: Forbidden: no reconciler leads to carry the rebuild out.*; the change is refused for now and can be applied again in a few seconds$/m,
    );
    assert.match(
      r.err,
      /^This refusal is for now \(no reconciler leads, or a read failed\): nothing was changed\. Run the same command again in a few seconds; if it lasts more than a minute, tell your platform team\.$/m,
    );
    assert.equal(r.out, '');
    assert.deepEqual(written(await getTj('llama')), written(before));
    reconciler = await startWorldReconciler(w, 'reconciler-again');
    await waitFor('the scale admitted once a reconciler leads', async () => (await dryRun()).code === 0);
  });

  it("refuses on a cluster without the CRD patch (upstream's CRD re-applied, as a Trainer upgrade does): the API server's 422 and how to apply the patch, which, run, admits the scale again", async () => {
    await w.cp.installCRDs([upstreamCrdsOf(currentCell().trainer).trainjobs]);
    await waitFor("upstream's blanket rule in force", async () => / field is immutable/.test((await dryRun()).err));
    const before = await getTj('llama');
    const r = await plugin(alice, ['scale', 'llama', '-n', ns, '--nodes', '3']);
    assert.equal(r.code, 1, show(r));
    assert.match(r.err, /^The TrainJob "llama" is invalid: spec\.trainer: Invalid value: .*field is immutable$/m);
    const fix =
      /^The cluster's TrainJob CRD still has upstream's rule that makes all of spec\.trainer immutable: trainjob-webhook's CRD patch is not applied\. Ask your platform team to apply it \(kubectl (patch crd trainjobs\.trainer\.kubeflow\.org --type=json --patch-file (\S+)); Trainer's main line has its own file under manifests\/crd-patch\/: see docs\/install\.md of trainjob-webhook\)\.$/m.exec(
        r.err,
      );
    assert.ok(fix, show(r));
    assert.equal(r.out, '');
    assert.deepEqual(written(await getTj('llama')), written(before));
    // The command as the message gives it (its file relative to a checkout of this project).
    const args = fix[1].split(' ').map((a) => (a === fix[2] ? path.join(projectRoot, a) : a));
    await w.cp.kubectl(args);
    await waitFor('the scale admitted with the patch applied', async () => (await dryRun()).code === 0);
  });
});
