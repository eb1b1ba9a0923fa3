// One scenario of the fault suite, shared by its two forms: the reconciler sidecar killed with
// SIGKILL at named points of rebuilds (and the kube-apiserver restarted mid-rebuild), in a world
// of test/reconciler/support/world.ts. Each round scales two TrainJobs at once:
// - `run`, a torch job whose node pods are running, suspended and scaled in one update (as Kueue
//   does), so its pods are still Terminating while the sidecar decides;
// - `claim`, a torchtune job whose workspace PVC (volumeClaimPolicies, Retain, unbound) must survive.
// Each round converges to exactly one JobSet per TrainJob with the new count (a new one, the stale
// one deleted exactly once) and a Rebuilt report, the claim keeps its uid, and over the whole run
// the stored history of pods and JobSets (cluster-history.ts) shows no JobSet deleted while any of
// its pods still ran, Terminating ones included.
// The short form (3 kills, companion) runs in test/e2e/reconciler-resilience.test.ts, in that
// suite's world; the long form is test/faults/reconciler-kills.test.ts (`npm run test:faults`).
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { pods, waitFor } from '../harness/index.ts';
import type { JobSet, TrainJob } from '../../src/api/objects.ts';
import { startSidecar, type LogLine, type Sidecar } from '../reconciler/support/sidecar.ts';
import {
  api,
  envValue,
  inNamespace,
  parallelism,
  RECONCILER_SA,
  torchTrainJob,
  torchtuneVariant,
  type World,
} from '../reconciler/support/world.ts';
import { checkDeletions, HISTORY_APISERVER_ARGS, recordHistory } from './cluster-history.ts';

export interface KillRounds {
  /** A namespace of its own, created here. */
  ns: string;
  mode: 'companion' | 'standalone';
  kills: number;
  /** kube-apiserver restarts between the kills (its flags are changed once first, see cluster-history.ts). */
  restarts: number;
  /** Seeds the random offsets; printed, so that a run can be replayed. */
  seed: number;
}

/**
 * Where a fault lands: right after one of the rebuild's steps as the sidecar logs it (the one named
 * for that round), plus a random 0-400 ms, so that it falls between steps or in the middle of a
 * request. The rounds go through the points in turn; the seed draws the offsets.
 */
interface FaultPoint {
  name: string;
  reached(lines: LogLine[], key: (name: string) => string): boolean;
}
const reconciled = (outcome: string, name: string) => (lines: LogLine[], key: (n: string) => string) =>
  lines.some((l) => l.msg === 'reconciled' && l.trainJob === key(name) && l.outcome === outcome);
const said = (msg: RegExp, name: string) => (lines: LogLine[], key: (n: string) => string) =>
  lines.some((l) => msg.test(String(l.msg)) && l.trainJob === key(name));
const KILL_POINTS: FaultPoint[] = [
  { name: 'the pods of run still terminating', reached: reconciled('waiting', 'run') },
  { name: 'the stale JobSet of run just deleted', reached: said(/^stale JobSet deleted/, 'run') },
  { name: 'the stale JobSet of run just suspended', reached: said(/^stale JobSet suspended/, 'run') },
  { name: 'the stale JobSet of claim just deleted', reached: said(/^stale JobSet deleted/, 'claim') },
  { name: 'the scaling update just admitted', reached: () => true },
  { name: 'the re-created JobSet of run seen', reached: reconciled('rebuilt', 'run') },
];
/**
 * The API server's restarts, in turn. While it is down, kube-controller-manager's garbage collector
 * fails the foreground deletes in flight and backs off per item (5 ms doubling), so a restart
 * during a delete delays the rebuild by up to a minute; the first point (before any delete) keeps
 * the short form short, the long form also restarts it while pods terminate and deletes follow.
 */
const RESTART_POINTS: FaultPoint[] = [KILL_POINTS[4], KILL_POINTS[0]];

/** mulberry32: a small seeded generator, so a failing run's kill points can be replayed. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** What the sidecar had last done for a TrainJob when it died (its last log line about it). */
function lastStep(lines: LogLine[], key: string): string {
  const mine = lines.filter((l) => l.trainJob === key);
  const last = mine.at(-1);
  if (!last) return 'nothing logged yet';
  return last.msg === 'reconciled' ? `reconciled: ${last.outcome}` : String(last.msg).split(' (')[0];
}

/** Runs the rounds in `w` (its sidecars, if any, stopped: this one starts its own). */
// eslint-disable-next-line max-lines-per-function, complexity -- the fault scenario: set-up, kill rounds, checks
export async function killRounds(t: TestContext, w: World, opts: KillRounds): Promise<void> {
  const ns = opts.ns;
  await w.cp.kubectl(['create', 'namespace', ns]);
  // A claim of the default class is bound at once, and JobSet then refuses to re-create beside
  // it (test/harness/README.md): a class binding only for a first consumer keeps it re-usable.
  await w.cp.applyYaml(
    '{"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":"wait-for-consumer"},"provisioner":"kwok.x-k8s.io/volume","volumeBindingMode":"WaitForFirstConsumer"}\n',
  );
  await w.cp.applyYaml(
    torchtuneVariant('retain-unbound', 'Retain', { volumeMode: 'Filesystem', storageClassName: 'wait-for-consumer' }),
  );
  // Restarted once with the flags the history needs to resume across the restarts to come.
  if (opts.restarts > 0) await w.cp.restartApiServer({ addArgs: HISTORY_APISERVER_ARGS });
  const history = await recordHistory(w.cp.kubeConfig, ns);
  let live: Sidecar | undefined;
  try {
    const rand = random(opts.seed);
    t.diagnostic(`FAULT_SEED=${opts.seed} (set it to replay these kill points)`);
    const p = pods(w.cp);
    const a = api(w.cp);
    const { key, getTj, patch } = inNamespace(ns, () => w);
    // Trainer's webhook answers from its caches, which re-list after the API server's restart.
    const create = (tj: TrainJob) =>
      waitFor(
        `TrainJob ${tj.metadata.name} admitted`,
        async () => (await w.tj.create(tj as Record<string, any>)).allowed,
        { timeoutMs: 60_000 },
      );
    await create(torchTrainJob('run', ns, { suspend: false }));
    await create({
      apiVersion: 'trainer.kubeflow.org/v1alpha1',
      kind: 'TrainJob',
      metadata: { name: 'claim', namespace: ns },
      spec: { runtimeRef: { name: 'torchtune-llama3.2-1b-retain-unbound' }, suspend: true, trainer: { numNodes: 1 } },
    });
    // A single replica (no Lease): a restarted container is a new Lease candidate that would wait
    // out the killed one's Lease (15 s) each time; that takeover is proven in reconciler-resilience.
    const sidecarOf = async (n: number) =>
      (live = await startSidecar(w.cp, {
        name: `sidecar-${n}`,
        mode: opts.mode,
        kubeconfig: w.reconcilerKubeconfig.path,
        leaseNamespace: RECONCILER_SA.namespace,
        extraArgs: ['--no-leader-election'],
      }));
    // (In standalone mode the sidecar builds the JobSets.)
    let sidecar = await sidecarOf(0);
    await a.waitJobSet(ns, 'claim', 'built', (j) => parallelism(j) === 1);
    const claim = await waitFor('the workspace PVC', () => a.pvc(ns, 'initializer-claim').catch(() => undefined));
    await p.waitJobSetRunning(ns, 'run', 1, 'node');
    let count = 1;
    let kills = 0;
    let restarts = 0;
    const landed: string[] = [];
    // API-server restarts spread over the run, between the kills.
    const restartAt = new Set(
      Array.from({ length: opts.restarts }, (_, r) =>
        Math.floor(((r + 1) * (opts.kills + opts.restarts)) / (opts.restarts + 1)),
      ),
    );

    for (let round = 1; round <= opts.kills + opts.restarts; round++) {
      const target = count === 1 ? 2 : 1;
      // `run` runs its current count, so the scaling update finds pods running.
      if ((await getTj('run')).spec?.suspend) await patch('run', { spec: { suspend: false } });
      await p.waitJobSetRunning(ns, 'run', count, 'node', 120_000);
      const old = { run: (await a.getJobSet(ns, 'run')) as JobSet, claim: (await a.getJobSet(ns, 'claim')) as JobSet };

      const seenBefore = sidecar.logLines().length;
      const roundStart = Date.now();
      await Promise.all([
        patch('run', { spec: { suspend: true, trainer: { numNodes: target } } }),
        patch('claim', { spec: { trainer: { numNodes: target } } }),
      ]);
      const restart = restartAt.has(round);
      const point = restart
        ? RESTART_POINTS[restarts % RESTART_POINTS.length]
        : KILL_POINTS[kills++ % KILL_POINTS.length];
      const reached = await waitFor(
        `round ${round}: ${point.name}`,
        () => point.reached(sidecar.logLines().slice(seenBefore), key),
        { timeoutMs: 20_000, intervalMs: 20 },
      ).then(
        () => true,
        () => false,
      );
      const offset = Math.floor(rand() * 400);
      await sleep(offset);
      const at = `${reached ? point.name : `${point.name} (not reached in 20 s)`} + ${offset} ms`;
      if (restart) {
        // Over the long form's four: each point once with SIGTERM, once with SIGKILL.
        const signal = Math.floor(restarts++ / RESTART_POINTS.length) % 2 === 0 ? 'SIGTERM' : 'SIGKILL';
        await w.cp.restartApiServer({ signal });
        landed.push(`API server ${signal}: ${at}`);
      } else {
        sidecar.proc.kill('SIGKILL');
        await sidecar.proc.exited;
        const lines = sidecar.logLines();
        landed.push(
          `SIGKILL: ${at} (last logged: run ${lastStep(lines, key('run'))}; claim ${lastStep(lines, key('claim'))})`,
        );
        sidecar = await sidecarOf(round);
      }
      t.diagnostic(`round ${round}, ${count} -> ${target}: ${landed.at(-1)}`);

      for (const name of ['run', 'claim'] as const) {
        const js = await a.waitJobSet(
          ns,
          name,
          `round ${round}: re-created with ${target} nodes`,
          (j) => j.metadata.uid !== old[name].metadata.uid && parallelism(j) === target,
          120_000,
        );
        assert.equal(envValue(js, 'PET_NNODES'), String(target), `${name}: PET_NNODES`);
        const all = (await a.objects.listNamespacedCustomObject({
          group: 'jobset.x-k8s.io',
          version: 'v1alpha2',
          namespace: ns,
          plural: 'jobsets',
        })) as { items: JobSet[] };
        assert.equal(
          all.items.filter((j) => j.metadata.name === name && !j.metadata.deletionTimestamp).length,
          1,
          `${name}: exactly one JobSet`,
        );
      }
      assert.equal(
        (await a.pvc(ns, 'initializer-claim')).metadata?.uid,
        claim.metadata?.uid,
        `round ${round}: the workspace PVC is the same claim`,
      );
      await waitFor(
        `round ${round}: both reported Rebuilt`,
        async () =>
          (await Promise.all(['run', 'claim'].map(async (n) => a.report(await getTj(n))?.state))).every(
            (s) => s === 'Rebuilt',
          ),
        { timeoutMs: 60_000 },
      );
      t.diagnostic(
        `round ${round}: converged ${((Date.now() - roundStart) / 1000).toFixed(1)} s after the scaling update`,
      );
      count = target;
    }

    // Settled: nothing more is rebuilt, and the record is complete.
    const final = { run: (await a.getJobSet(ns, 'run'))!, claim: (await a.getJobSet(ns, 'claim'))! };
    await sleep(3_000);
    for (const name of ['run', 'claim'] as const)
      assert.equal(
        (await a.getJobSet(ns, name))?.metadata.uid,
        final[name].metadata.uid,
        `${name}: no further rebuild`,
      );
    await sidecar.proc.stop();
    await history.stop();

    assert.deepEqual(history.gaps, [], 'the history of pods and JobSets is complete');
    const { deletions, early } = checkDeletions(history.versions);
    assert.deepEqual(early, [], 'no JobSet deleted while any of its pods ran');
    for (const name of ['run', 'claim']) {
      assert.equal(
        deletions.filter((d) => d.jobSet === name).length,
        opts.kills + opts.restarts,
        `${name}: each stale JobSet deleted exactly once`,
      );
    }
    // The record covers the pods: every stale JobSet of `run` had running pods in it.
    assert.deepEqual(
      deletions.filter((d) => d.jobSet === 'run' && d.podsSeen === 0),
      [],
      'pods of each JobSet of run recorded',
    );
    t.diagnostic(`kill points: ${landed.join('; ')}`);
    t.diagnostic(
      `deletions checked: ${deletions.length}; for run, pods recorded / still stored (terminal) at each deletion: ${deletions
        .filter((d) => d.jobSet === 'run')
        .map((d) => `${d.podsSeen}/${d.podsTerminal}`)
        .join(', ')}`,
    );
  } finally {
    // On a failure too: a sidecar or TrainJob left behind would act in the suite's next test.
    await live?.proc.stop();
    await history.stop();
    await w.cp.kubectl(['delete', 'trainjobs', '--all', '-n', ns, '--timeout=60s'], { check: false });
  }
}
