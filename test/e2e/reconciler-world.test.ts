// Issue 8, item 2: the reconciler's flows in the world where pods run (kube-scheduler, KWOK nodes,
// our fixed-delay stages), beside the real Trainer v2.3.0 and JobSet v0.12.0 managers and the
// project's webhook. Each flow states its expected end, and prints the product's own step times
// (change -> seen by the sidecar -> stale JobSet deleted -> re-created) apart from the stages'
// fixed delays.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it, type TestContext } from 'node:test';
import {
  controlPlaneAvailability,
  isTerminating,
  pods,
  upstreamControllersAvailability,
  upstreamDir,
  waitFor,
  skipUnless,
} from '../harness/index.ts';
import type { JobSet, TrainJob } from '../../src/api/objects.ts';
import { startSidecar, type Sidecar } from '../reconciler/support/sidecar.ts';
import {
  api,
  envValue,
  parallelism,
  RECONCILER_SA,
  inNamespace,
  startWorld,
  torchTrainJob,
  type World,
  untilAdmitted,
  withoutWebhook,
} from '../reconciler/support/world.ts';
import { formatStepTimes, stepTimes, watchNoEarlyDelete } from './support/flows.ts';

const skip = skipUnless(controlPlaneAvailability(), upstreamControllersAvailability());

const trainJob = (
  name: string,
  namespace: string,
  runtime: string,
  numNodes: number,
  spec: Record<string, unknown> = {},
): TrainJob => ({
  apiVersion: 'trainer.kubeflow.org/v1alpha1',
  kind: 'TrainJob',
  metadata: { name, namespace },
  spec: { runtimeRef: { name: runtime }, suspend: false, trainer: { numNodes }, ...spec },
});

for (const mode of ['companion', 'standalone'] as const) {
  const companion = mode === 'companion';
  describe(`reconciler flows in the world where pods run (${mode} mode)`, { skip }, () => {
    let w: World;
    let a: ReturnType<typeof api>;
    let p: ReturnType<typeof pods>;
    let sidecar: Sidecar;
    const ns = `flows-${mode}`;
    const { key, getTj, create, patch } = inNamespace(ns, () => w);

    /**
     * A numNodes change that the webhook must admit at once (suspended before or in the update),
     * pods of the stale JobSet running or not.
     */
    const scale = (name: string, numNodes: number, extra: Record<string, unknown> = {}) =>
      patch(name, { spec: { ...extra, trainer: { numNodes } } });
    const nodePods = async (name: string, jobSetUid?: string) =>
      (await p.ofJobSet(ns, name, 'node')).filter(
        (x) => !jobSetUid || x.metadata?.labels?.['jobset.sigs.k8s.io/jobset-uid'] === jobSetUid,
      );
    const waitRebuilt = (name: string, old: JobSet, what: string, pred: (js: JobSet) => boolean) =>
      a.waitJobSet(ns, name, what, (j) => j.metadata.uid !== old.metadata.uid && pred(j), 120_000);
    const report = async (
      t: TestContext,
      flow: string,
      expectedEnd: string,
      name: string,
      since: number,
      generation: number | undefined,
      recreated?: JobSet,
    ) => t.diagnostic(formatStepTimes(flow, expectedEnd, stepTimes(sidecar, key(name), since, generation, recreated)));

    /**
     * The lost-node flow's first half (companion mode): a TrainJob with 2 nodes, one of its pods on
     * a node of its own that is then deleted; resolves once the pod GC has failed or removed that
     * pod. `nodeDeleted` is called right after the delete, so before() can let the other flows run
     * during the quarantine; until then no other flow runs, so no other pod lands on that node.
     */
    const loseANode = async (nodeDeleted: () => void) => {
      await w.cp.world!.addNode({ name: 'lost' });
      await create(
        torchTrainJob('lostnode', ns, {
          suspend: false,
          trainer: { numNodes: 2, image: 'ghcr.io/acme/train:1', command: ['torchrun', 'train.py'] },
        }),
      );
      const old = await a.waitJobSet(ns, 'lostnode', 'running', (j) => j.spec?.suspend === false);
      const running = await p.waitJobSetRunning(ns, 'lostnode', 2, 'node');
      // The scheduler spreads them; if none landed on `lost`, take the node of the first.
      const victim = running.find((x) => x.spec?.nodeName === 'lost') ?? running[0];
      const lostNode = victim.spec!.nodeName!;
      await p.deleteNode(lostNode);
      nodeDeleted();
      const failedName = victim.metadata!.name!;
      await waitFor(
        'the pod on the lost node Failed or gone',
        async () => {
          const all = await nodePods('lostnode', old.metadata.uid);
          const x = all.find((q) => q.metadata?.name === failedName);
          return !x || x.status?.phase === 'Failed';
        },
        { timeoutMs: 120_000 },
      );
      return { old, lostNode };
    };
    let lost: Promise<{ ok: true; old: JobSet; lostNode: string } | { ok: false; err: unknown }> | undefined;

    before(async () => {
      w = await startWorld({ trainer: companion, webhook: true });
      a = api(w.cp);
      p = pods(w.cp);
      await w.cp.kubectl(['create', 'namespace', ns]);
      await w.cp.applyYaml(path.join(upstreamDir, 'runtimes/torch_distributed_with_cache.yaml'));
      // The runtime's dataset initializer runs as this account (Trainer's manifests make it).
      await w.cp.kubectl(['create', 'serviceaccount', 'kubeflow-trainer-cache-initializer', '-n', ns]);
      sidecar = await startSidecar(w.cp, {
        name: 'reconciler',
        mode,
        kubeconfig: w.reconcilerKubeconfig.path,
        leaseNamespace: RECONCILER_SA.namespace,
        handoffPort: w.handoffPort,
      });
      if (companion) {
        let deleted!: () => void;
        const nodeDeleted = new Promise<void>((r) => (deleted = r));
        lost = loseANode(deleted).then(
          (v) => ({ ok: true as const, ...v }),
          (err: unknown) => ({ ok: false as const, err }),
        );
        await Promise.race([nodeDeleted, lost]);
      }
    });
    after(async () => {
      if (process.exitCode && w) process.stderr.write(w.cp.logTails(30));
      await w?.stop();
    });

    it('torch-distributed-with-cache, its initializer finished: suspended, scaled 1 -> 2 and resumed, it is rebuilt and runs 2 nodes', async (t) => {
      const expected =
        'a new JobSet with 2 nodes, unsuspended; its initializer succeeds again and 2 node pods run; report Rebuilt';
      await create(trainJob('cache', ns, 'torch-distributed-with-cache', 1));
      const old = await a.waitJobSet(ns, 'cache', 'built', () => true);
      // The initializer pod succeeds (a stage), its Job completes, then the node pod runs.
      await waitFor('the dataset initializer pod Succeeded', async () =>
        (await p.ofJobSet(ns, 'cache', 'dataset-initializer')).some((x) => x.status?.phase === 'Succeeded'),
      );
      await p.waitJobSetRunning(ns, 'cache', 1, 'node');
      await patch('cache', { spec: { suspend: true } });
      await waitFor('the node pod gone', async () => (await nodePods('cache')).length === 0);
      const since = Date.now();
      await scale('cache', 2);
      const gen = (await getTj('cache')).metadata.generation;
      await patch('cache', { spec: { suspend: false } });
      const js = await waitRebuilt('cache', old, 're-created with 2 nodes', (j) => parallelism(j) === 2);
      await a.waitJobSet(
        ns,
        'cache',
        'running',
        (j) => j.metadata.uid === js.metadata.uid && j.spec?.suspend === false,
      );
      await p.waitJobSetRunning(ns, 'cache', 2, 'node', 120_000);
      assert.equal(envValue(js, 'PET_NNODES'), '2');
      await waitFor('the Rebuilt report', async () => a.report(await getTj('cache'))?.state === 'Rebuilt');
      await report(
        t,
        'with-cache: initializer finished, suspend / scale 1->2 / resume',
        expected,
        'cache',
        since,
        gen,
        js,
      );
    });

    // Companion mode only: standalone mode builds no MPI JobSet (reported Unsupported: reconciler-standalone.test.ts).
    if (companion)
      it('DeepSpeed (MPI) with its launcher, running 3 nodes: suspended and scaled to 4 in one update, resumed: launcher and 3 node pods run', async (t) => {
        const expected =
          'a new JobSet: launcher 1 + node 3 (numNodes 4), unsuspended, 4 pods running; the hostfile lists 4 hosts';
        await create(trainJob('mpi', ns, 'deepspeed-distributed', 3));
        const old = await a.waitJobSet(ns, 'mpi', 'running', (j) => j.spec?.suspend === false);
        await p.waitJobSetRunning(ns, 'mpi', 1, 'launcher');
        await p.waitJobSetRunning(ns, 'mpi', 2, 'node');
        const since = Date.now();
        await scale('mpi', 4, { suspend: true });
        const gen = (await getTj('mpi')).metadata.generation;
        const js = await waitRebuilt('mpi', old, 're-created with node parallelism 3', (j) => parallelism(j) === 3);
        assert.equal(parallelism(js, 'launcher'), 1);
        await patch('mpi', { spec: { suspend: false } });
        await p.waitJobSetRunning(ns, 'mpi', 3, 'node', 120_000);
        await p.waitJobSetRunning(ns, 'mpi', 1, 'launcher');
        const hostfile = await a.core.readNamespacedConfigMap({ namespace: ns, name: 'mpi-mpi-hostfile' });
        assert.equal((hostfile.data?.hostfile ?? '').trim().split('\n').length, 4);
        await report(t, 'MPI: suspend+scale 3->4 in one update, resume', expected, 'mpi', since, gen, js);
      });

    // Companion mode only (CI time): standalone's rebuild of a running job is proven below (suspend
    // and scale in one update; resumed while the old pods terminate), by the with-cache flow above
    // and by reconciler-standalone.test.ts; its builder's counts are unit-tested (build.test.ts).
    if (companion)
      for (const [from, to] of [
        [4, 2],
        [1, 4],
      ] as const) {
        it(`torch-distributed running ${from} nodes: suspended, scaled to ${to}, resumed: ${to} node pods run`, async (t) => {
          const name = `scale-${from}-${to}`;
          const expected = `a new JobSet with ${to} nodes (PET_NNODES=${to}), ${to} pods running; report Rebuilt`;
          await create(
            torchTrainJob(name, ns, {
              suspend: false,
              trainer: { numNodes: from, image: 'ghcr.io/acme/train:1', command: ['torchrun', 'train.py'] },
            }),
          );
          const old = await a.waitJobSet(ns, name, 'running', (j) => j.spec?.suspend === false);
          await p.waitJobSetRunning(ns, name, from, 'node');
          await patch(name, { spec: { suspend: true } });
          const since = Date.now();
          await scale(name, to);
          const gen = (await getTj(name)).metadata.generation;
          const js = await waitRebuilt(name, old, `re-created with ${to} nodes`, (j) => parallelism(j) === to);
          assert.equal(envValue(js, 'PET_NNODES'), String(to));
          await patch(name, { spec: { suspend: false } });
          await p.waitJobSetRunning(ns, name, to, 'node', 120_000);
          await waitFor('the Rebuilt report', async () => a.report(await getTj(name))?.state === 'Rebuilt');
          await report(t, `torch: suspend / scale ${from}->${to} / resume`, expected, name, since, gen, js);
        });
      }

    it('suspend and scale in one update of a running job is admitted, and the job is rebuilt with 2 nodes, suspended; resume runs 2', async (t) => {
      const expected =
        'the update admitted (a warning at most); a new JobSet with 2 nodes, suspended; on resume 2 pods run';
      await create(torchTrainJob('atomic', ns, { suspend: false }));
      const old = await a.waitJobSet(ns, 'atomic', 'running', (j) => j.spec?.suspend === false);
      await p.waitJobSetRunning(ns, 'atomic', 1, 'node');
      const since = Date.now();
      // One update, once: while its pod runs. The webhook must not refuse it (DESIGN.md, numNodes).
      await patch('atomic', { spec: { suspend: true, trainer: { numNodes: 2 } } });
      const gen = (await getTj('atomic')).metadata.generation;
      const js = await waitRebuilt('atomic', old, 're-created with 2 nodes', (j) => parallelism(j) === 2);
      assert.equal(js.spec?.suspend, true);
      await patch('atomic', { spec: { suspend: false } });
      await p.waitJobSetRunning(ns, 'atomic', 2, 'node', 120_000);
      await report(
        t,
        'suspend+scale 1->2 in one update of a running job, then resume',
        expected,
        'atomic',
        since,
        gen,
        js,
      );
    });

    it('resumed while pods of the old JobSet are still Terminating: nothing is deleted until they are gone, then it is rebuilt with 3 nodes and runs', async (t) => {
      const expected =
        'the old JobSet kept while any of its pods exists; then a new JobSet with 3 nodes, unsuspended, 3 pods running';
      await create(
        torchTrainJob('slow', ns, {
          suspend: false,
          trainer: { numNodes: 2, image: 'ghcr.io/acme/train:1', command: ['torchrun', 'train.py'] },
        }),
      );
      const old = await a.waitJobSet(ns, 'slow', 'running', (j) => j.spec?.suspend === false);
      const running = await p.waitJobSetRunning(ns, 'slow', 2, 'node');
      // Their containers take 12 s to stop once deleted.
      await p.terminationSeconds(
        ns,
        running.map((x) => x.metadata!.name!),
        12,
      );
      const watch = watchNoEarlyDelete(a.core, ns, { name: 'slow', uid: old.metadata.uid! }, () =>
        a.getJobSet(ns, 'slow'),
      );
      const since = Date.now();
      try {
        await patch('slow', { spec: { suspend: true } });
        await waitFor('the old pods Terminating', async () =>
          (await nodePods('slow', old.metadata.uid)).some(isTerminating),
        );
        await scale('slow', 3);
        const gen = (await getTj('slow')).metadata.generation;
        await patch('slow', { spec: { suspend: false } });
        const stillTerminating = (await nodePods('slow', old.metadata.uid)).filter(isTerminating).length;
        const js = await waitRebuilt('slow', old, 're-created with 3 nodes', (j) => parallelism(j) === 3);
        await p.waitJobSetRunning(ns, 'slow', 3, 'node', 120_000);
        await watch.stop();
        assert.deepEqual(watch.violations, []);
        const deleted = stepTimes(sidecar, key('slow'), since, gen).deletedMs;
        t.diagnostic(
          `old pods still Terminating at resume: ${stillTerminating}; last old pod gone +${(watch.podsGoneAt ?? Number.NaN) - since} ms, stale JobSet deleted +${deleted} ms (after the change)`,
        );
        await report(t, 'resume while the old pods Terminate (12 s grace)', expected, 'slow', since, gen, js);
      } finally {
        await watch.stop();
      }
    });

    // Companion mode only: it is Trainer that marks them finished.
    if (companion)
      describe('finished TrainJobs (Trainer v2.3.0 never reconciles them again): the sidecar never deletes their JobSet', () => {
        /** The change is attempted; whether the webhook admits it is the webhook's decision (printed). */
        const tryScale = async (t: TestContext, name: string, numNodes: number) => {
          const since = Date.now();
          const out = await w.tj.update(ns, name, (o) => {
            o.spec.trainer = { ...o.spec.trainer, numNodes };
          });
          t.diagnostic(
            out.allowed
              ? `numNodes ${numNodes} admitted${out.warnings?.length ? ` with warnings: ${out.warnings.join(' | ')}` : ''}`
              : `numNodes ${numNodes} denied: ${out.refusal.message}`,
          );
          return { since, admitted: out.allowed };
        };

        it('Complete: its training succeeded; a numNodes change leaves its JobSet in place', async (t) => {
          const expected =
            'the JobSet (Completed) keeps its uid; never a delete-jobset step; the report, if any, is Blocked';
          await create(torchTrainJob('done', ns, { suspend: false }));
          const js = await a.waitJobSet(ns, 'done', 'running', (j) => j.spec?.suspend === false);
          await p.waitJobSetRunning(ns, 'done', 1, 'node');
          await p.endJobSetTraining(ns, 'done', 'Succeeded');
          await waitFor(
            'TrainJob Complete',
            async () =>
              (await getTj('done')).status?.conditions?.some((c) => c.type === 'Complete' && c.status === 'True'),
            { timeoutMs: 90_000 },
          );
          const { since, admitted } = await tryScale(t, 'done', 2);
          if (admitted) {
            const gen = (await getTj('done')).metadata.generation;
            await sidecar.reconciled(key('done'), (l) => (l.generation ?? 0) >= (gen ?? 0));
          }
          await new Promise((r) => setTimeout(r, 4_000)); // more than a retry period of the sidecar
          assert.equal((await a.getJobSet(ns, 'done'))?.metadata.uid, js.metadata.uid);
          const times = stepTimes(sidecar, key('done'), since, undefined);
          assert.equal(times.deletedMs, undefined, times.reconciles.join('\n'));
          const r = a.report(await getTj('done'));
          assert.ok(r === undefined || r.state === 'Blocked', JSON.stringify(r));
          t.diagnostic(formatStepTimes('Complete TrainJob, numNodes 1->2', expected, times));
        });

        it('Complete with a stale JobSet (suspended and scaled in one update while no sidecar ran, then the training succeeded): the sidecar, started, never deletes it', async (t) => {
          const expected =
            'the Completed JobSet keeps its uid and 1 node; the sidecar reconciles the finished TrainJob and takes no step on the JobSet; report Blocked or none';
          await create(torchTrainJob('stale-done', ns, { suspend: false }));
          const js = await a.waitJobSet(ns, 'stale-done', 'running', (j) => j.spec?.suspend === false);
          await p.waitJobSetRunning(ns, 'stale-done', 1, 'node');
          // No sidecar: Trainer's apply of the suspended, scaled JobSet is refused (immutable), so the
          // JobSet keeps running with 1 node, and then its training succeeds.
          // With no reconciler the webhook refuses that update for now (503); it is stored without
          // the webhook, as before this version or in a cluster that never had it.
          await sidecar.proc.stop();
          await withoutWebhook(w, () =>
            untilAdmitted('suspended and scaled', () =>
              patch('stale-done', { spec: { suspend: true, trainer: { numNodes: 2 } } }),
            ),
          );
          await p.endJobSetTraining(ns, 'stale-done', 'Succeeded');
          await waitFor(
            'TrainJob Complete',
            async () =>
              (await getTj('stale-done')).status?.conditions?.some((c) => c.type === 'Complete' && c.status === 'True'),
            { timeoutMs: 90_000 },
          );
          assert.equal(parallelism(await a.getJobSet(ns, 'stale-done')), 1, 'the JobSet is stale');
          const since = Date.now();
          sidecar = await startSidecar(w.cp, {
            name: 'reconciler-again',
            mode,
            kubeconfig: w.reconcilerKubeconfig.path,
            leaseNamespace: RECONCILER_SA.namespace,
            handoffPort: w.handoffPort,
          });
          const gen = (await getTj('stale-done')).metadata.generation;
          await sidecar.reconciled(key('stale-done'), (l) => l.generation === gen, 60_000);
          await new Promise((r) => setTimeout(r, 4_000)); // more than a retry period of the sidecar
          const after = await a.getJobSet(ns, 'stale-done');
          assert.deepEqual([after?.metadata.uid, parallelism(after)], [js.metadata.uid, 1]);
          const times = stepTimes(sidecar, key('stale-done'), since, gen);
          assert.equal(times.deletedMs, undefined, times.reconciles.join('\n'));
          assert.ok(
            !sidecar
              .logLines()
              .some((l) => l.trainJob === key('stale-done') && (l.steps ?? []).some((s) => s.endsWith('-jobset'))),
            'no step on the JobSet',
          );
          const r = a.report(await getTj('stale-done'));
          assert.ok(r === undefined || r.state === 'Blocked', JSON.stringify(r));
          t.diagnostic(
            formatStepTimes('Complete TrainJob with a stale JobSet, sidecar started afterwards', expected, times),
          );
        });

        it('Failed with DeadlineExceeded: Trainer deletes its JobSet; a numNodes change makes the sidecar delete nothing, and nothing is re-created', async (t) => {
          const expected =
            'no JobSet (Trainer deleted it at the deadline); never a delete-jobset step; the report, if any, is Blocked';
          await create(torchTrainJob('late', ns, { suspend: false, activeDeadlineSeconds: 8 }));
          const js = await a.waitJobSet(ns, 'late', 'running', (j) => j.spec?.suspend === false);
          await p.waitJobSetRunning(ns, 'late', 1, 'node');
          await waitFor(
            'TrainJob Failed/DeadlineExceeded',
            async () =>
              (await getTj('late')).status?.conditions?.some(
                (c) => c.type === 'Failed' && c.reason === 'DeadlineExceeded',
              ),
            { timeoutMs: 90_000 },
          );
          await waitFor(
            'its JobSet gone (deleted by Trainer)',
            async () => (await a.getJobSet(ns, 'late')) === undefined,
            { timeoutMs: 60_000 },
          );
          const { since, admitted } = await tryScale(t, 'late', 2);
          if (admitted) {
            const gen = (await getTj('late')).metadata.generation;
            await sidecar.reconciled(key('late'), (l) => (l.generation ?? 0) >= (gen ?? 0));
          }
          await new Promise((r) => setTimeout(r, 4_000));
          assert.equal(await a.getJobSet(ns, 'late'), undefined, 'nothing re-created');
          const times = stepTimes(sidecar, key('late'), since, undefined);
          assert.equal(times.deletedMs, undefined, times.reconciles.join('\n'));
          const r = a.report(await getTj('late'));
          assert.ok(r === undefined || r.state === 'Blocked', JSON.stringify(r));
          assert.ok(js.metadata.uid);
          t.diagnostic(formatStepTimes('Failed (DeadlineExceeded) TrainJob, numNodes 1->2', expected, times));
        });
      });
    // Once, in companion mode. Its node was lost at the end of before(): the pod GC's quarantine
    // (40 s, then up to a 20 s check period) has run beside the flows above.
    if (companion)
      it('a Failed pod on a lost node: the pod GC fails it; suspended and scaled 2 -> 3, the job is rebuilt and runs 3 nodes on the nodes left', async (t) => {
        const expected =
          'the lost pod Failed (DeletionByPodGC) and gone; a new JobSet with 3 nodes; 3 pods run on the remaining nodes';
        const out = await lost;
        if (!out?.ok) throw out?.err ?? new Error('the lost-node flow was not started');
        const { old, lostNode } = out;
        const since = Date.now();
        await patch('lostnode', { spec: { suspend: true } });
        await scale('lostnode', 3);
        const gen = (await getTj('lostnode')).metadata.generation;
        const js = await waitRebuilt('lostnode', old, 're-created with 3 nodes', (j) => parallelism(j) === 3);
        await patch('lostnode', { spec: { suspend: false } });
        const running = await p.waitJobSetRunning(ns, 'lostnode', 3, 'node', 120_000);
        assert.ok(running.every((x) => x.spec?.nodeName !== lostNode));
        await report(t, `lost node ${lostNode}: suspend / scale 2->3 / resume`, expected, 'lostnode', since, gen, js);
      });
  });
}
