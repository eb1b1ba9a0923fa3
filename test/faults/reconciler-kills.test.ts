// The reconciler sidecar under faults, in companion mode beside the real Trainer and JobSet
// managers, in the world where pods run (KWOK): killed with SIGKILL at random points of rebuilds
// and started again, and the kube-apiserver restarted (same etcd) in the middle of a rebuild.
// Each rebuild scales two TrainJobs at once:
// - `run`, a torch job whose node pods are running, suspended and scaled in one update (as Kueue
//   does), so its pods are still Terminating while the sidecar decides;
// - `claim`, a torchtune job whose workspace PVC (volumeClaimPolicies, Retain) must survive.
// Each time it converges to exactly one JobSet per TrainJob with the new count (a new one, the
// stale one deleted exactly once), the claim keeps its uid, and over the whole run the stored
// history of pods and JobSets (cluster-history.ts) shows no JobSet deleted while any of its pods
// still ran, Terminating ones included.
// `npm test`: FAULT_KILLS=3 kills and 1 API-server restart; `npm run test:faults`: 20 kills and 4
// restarts (SIGTERM and SIGKILL). FAULT_SEED replays the random kill points of a run.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { controlPlaneAvailability, pods, upstreamControllersAvailability, waitFor } from '../harness/index.ts';
import type { JobSet, TrainJob } from '../../src/reconciler/objects.ts';
import { startSidecar, type LogLine, type Sidecar } from '../reconciler/support/sidecar.ts';
import { api, envValue, inNamespace, parallelism, RECONCILER_SA, startWorld, torchTrainJob, torchtuneVariant, type World } from '../reconciler/support/world.ts';
import { checkDeletions, HISTORY_APISERVER_ARGS, recordHistory, type ClusterHistory } from './cluster-history.ts';
import { longForm } from './support.ts';

const controlPlane = controlPlaneAvailability();
const controllers = upstreamControllersAvailability();
const skip = !controlPlane.available ? controlPlane.reason : !controllers.available ? controllers.reason : false;

const LONG = longForm();
const KILLS = positive('FAULT_KILLS', LONG ? 20 : 3);
const RESTARTS = positive('FAULT_APISERVER_RESTARTS', LONG ? 4 : 1);
const SEED = positive('FAULT_SEED', Math.floor(Math.random() * 2 ** 31));

/**
 * Where a fault lands: right after one of the rebuild's steps as the sidecar logs it (the one named
 * for that round), plus a random 0-400 ms, so that it falls between steps or in the middle of a
 * request. The rounds go through the points in turn; the seed draws the offsets.
 */
interface FaultPoint {
  name: string;
  reached(lines: LogLine[], key: (name: string) => string): boolean;
}
const reconciled = (outcome: string, name: string) => (lines: LogLine[], key: (n: string) => string) => lines.some((l) => l.msg === 'reconciled' && l.trainJob === key(name) && l.outcome === outcome);
const said = (msg: RegExp, name: string) => (lines: LogLine[], key: (n: string) => string) => lines.some((l) => msg.test(String(l.msg)) && l.trainJob === key(name));
const KILL_POINTS: FaultPoint[] = [
  { name: 'the pods of run still terminating', reached: reconciled('waiting', 'run') },
  { name: 'the stale JobSet of run just deleted', reached: said(/^stale JobSet deleted/, 'run') },
  { name: 'the stale JobSet of run just suspended', reached: said(/^stale JobSet suspended/, 'run') },
  { name: 'the stale JobSet of claim just deleted', reached: said(/^stale JobSet deleted/, 'claim') },
  { name: 'the scaling update just admitted', reached: () => true },
  { name: 'the re-created JobSet of run seen', reached: reconciled('rebuilt', 'run') },
];
const RESTART_POINT: FaultPoint = KILL_POINTS[0];

function positive(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n <= 0) throw new Error(`${name} must be a positive integer, got ${JSON.stringify(raw)}`);
  return n;
}

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

describe('reconciler faults: SIGKILL at random points of rebuilds, kube-apiserver restarted mid-rebuild (companion)', { skip, timeout: 1_800_000 }, () => {
  let w: World;
  let a: ReturnType<typeof api>;
  let history: ClusterHistory;
  const ns = 'faults';
  const { key, getTj, patch } = inNamespace(ns, () => w);

  before(async () => {
    w = await startWorld({ trainer: true, webhook: false });
    a = api(w.cp);
    await w.cp.kubectl(['create', 'namespace', ns]);
    // A claim of the default class is bound at once, and JobSet then refuses to re-create beside
    // it (test/harness/README.md): a class binding only for a first consumer keeps it re-usable.
    await w.cp.applyYaml('{"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":"wait-for-consumer"},"provisioner":"kwok.x-k8s.io/volume","volumeBindingMode":"WaitForFirstConsumer"}\n');
    await w.cp.applyYaml(torchtuneVariant('retain-unbound', 'Retain', { volumeMode: 'Filesystem', storageClassName: 'wait-for-consumer' }));
    // Restarted once with the flags the history needs to resume across the restarts to come.
    await w.cp.restartApiServer({ addArgs: HISTORY_APISERVER_ARGS });
    history = await recordHistory(w.cp.kubeConfig, ns);
  });
  after(async () => {
    await history?.stop();
    if (process.exitCode && w) process.stderr.write(w.cp.logTails(30));
    await w?.stop();
  });

  it(`${KILLS} SIGKILLs and ${RESTARTS} API-server restart(s) during rebuilds: one correct JobSet each time, no JobSet deleted while its pods ran, the claim kept`, async (t) => {
    const rand = random(SEED);
    t.diagnostic(`FAULT_SEED=${SEED} (set it to replay these kill points)`);
    const p = pods(w.cp);
    // Trainer's webhook answers from its caches, which re-list after the API server's restart.
    const create = (tj: TrainJob) => waitFor(`TrainJob ${tj.metadata.name} admitted`, async () => (await w.tj.create(tj as Record<string, any>)).allowed, { timeoutMs: 60_000 });
    await create(torchTrainJob('run', ns, { suspend: false }));
    await create({ apiVersion: 'trainer.kubeflow.org/v1alpha1', kind: 'TrainJob', metadata: { name: 'claim', namespace: ns }, spec: { runtimeRef: { name: 'torchtune-llama3.2-1b-retain-unbound' }, suspend: true, trainer: { numNodes: 1 } } });
    await a.waitJobSet(ns, 'claim', 'built', (j) => parallelism(j) === 1);
    const claim = await waitFor('the workspace PVC', () => a.pvc(ns, 'initializer-claim').catch(() => undefined));
    await p.waitJobSetRunning(ns, 'run', 1, 'node');

    // A single replica (no Lease): a restarted container is a new Lease candidate that would wait
    // out the killed one's Lease (15 s) each time; that takeover is proven in reconciler-resilience.
    const sidecarOf = (n: number) => startSidecar(w.cp, { name: `sidecar-${n}`, mode: 'companion', kubeconfig: w.reconcilerKubeconfig.path, leaseNamespace: RECONCILER_SA.namespace, extraArgs: ['--no-leader-election'] });
    let sidecar: Sidecar = await sidecarOf(0);
    let count = 1;
    let kills = 0;
    let restarts = 0;
    const landed: string[] = [];
    // API-server restarts spread over the run, between the kills.
    const restartAt = new Set(Array.from({ length: RESTARTS }, (_, r) => Math.floor(((r + 1) * (KILLS + RESTARTS)) / (RESTARTS + 1))));

    for (let round = 1; round <= KILLS + RESTARTS; round++) {
      const target = count === 1 ? 2 : 1;
      // `run` runs its current count, so the scaling update finds pods running.
      if ((await getTj('run')).spec?.suspend) await patch('run', { spec: { suspend: false } });
      await p.waitJobSetRunning(ns, 'run', count, 'node', 120_000);
      const old = { run: (await a.getJobSet(ns, 'run')) as JobSet, claim: (await a.getJobSet(ns, 'claim')) as JobSet };

      const seenBefore = sidecar.logLines().length;
      const roundStart = Date.now();
      await Promise.all([patch('run', { spec: { suspend: true, trainer: { numNodes: target } } }), patch('claim', { spec: { trainer: { numNodes: target } } })]);
      const restart = restartAt.has(round);
      const point = restart ? RESTART_POINT : KILL_POINTS[kills++ % KILL_POINTS.length];
      const reached = await waitFor(`round ${round}: ${point.name}`, () => point.reached(sidecar.logLines().slice(seenBefore), key), { timeoutMs: 20_000, intervalMs: 20 }).then(() => true, () => false);
      const offset = Math.floor(rand() * 400);
      await sleep(offset);
      const at = `${reached ? point.name : `${point.name} (not reached in 20 s)`} + ${offset} ms`;
      if (restart) {
        const signal = restarts++ % 2 === 0 ? 'SIGTERM' : 'SIGKILL';
        await w.cp.restartApiServer({ signal });
        landed.push(`API server ${signal}: ${at}`);
      } else {
        sidecar.proc.kill('SIGKILL');
        await sidecar.proc.exited;
        const lines = sidecar.logLines();
        landed.push(`SIGKILL: ${at} (last logged: run ${lastStep(lines, key('run'))}; claim ${lastStep(lines, key('claim'))})`);
        sidecar = await sidecarOf(round);
      }
      t.diagnostic(`round ${round}, ${count} -> ${target}: ${landed.at(-1)}`);

      for (const name of ['run', 'claim'] as const) {
        const js = await a.waitJobSet(ns, name, `round ${round}: re-created with ${target} nodes`, (j) => j.metadata.uid !== old[name].metadata.uid && parallelism(j) === target, 120_000);
        assert.equal(envValue(js, 'PET_NNODES'), String(target), `${name}: PET_NNODES`);
        const all = (await a.objects.listNamespacedCustomObject({ group: 'jobset.x-k8s.io', version: 'v1alpha2', namespace: ns, plural: 'jobsets' })) as { items: JobSet[] };
        assert.equal(all.items.filter((j) => j.metadata.name === name && !j.metadata.deletionTimestamp).length, 1, `${name}: exactly one JobSet`);
      }
      assert.equal((await a.pvc(ns, 'initializer-claim')).metadata?.uid, claim.metadata?.uid, `round ${round}: the workspace PVC is the same claim`);
      await waitFor(`round ${round}: both reported Rebuilt`, async () => (await Promise.all(['run', 'claim'].map(async (n) => a.report(await getTj(n))?.state))).every((s) => s === 'Rebuilt'), { timeoutMs: 60_000 });
      t.diagnostic(`round ${round}: converged ${((Date.now() - roundStart) / 1000).toFixed(1)} s after the scaling update`);
      count = target;
    }

    // Settled: nothing more is rebuilt, and the record is complete.
    const final = { run: (await a.getJobSet(ns, 'run'))!, claim: (await a.getJobSet(ns, 'claim'))! };
    await sleep(3_000);
    for (const name of ['run', 'claim'] as const) assert.equal((await a.getJobSet(ns, name))?.metadata.uid, final[name].metadata.uid, `${name}: no further rebuild`);
    await sidecar.proc.stop();
    await history.stop();

    assert.deepEqual(history.gaps, [], 'the history of pods and JobSets is complete');
    const { deletions, early } = checkDeletions(history.versions);
    assert.deepEqual(early, [], 'no JobSet deleted while any of its pods ran');
    for (const name of ['run', 'claim']) {
      assert.equal(deletions.filter((d) => d.jobSet === name).length, KILLS + RESTARTS, `${name}: each stale JobSet deleted exactly once`);
    }
    // The record covers the pods: every stale JobSet of `run` had running pods in it.
    assert.deepEqual(deletions.filter((d) => d.jobSet === 'run' && d.podsSeen === 0), [], 'pods of each JobSet of run recorded');
    t.diagnostic(`kill points: ${landed.join('; ')}`);
    t.diagnostic(`deletions checked: ${deletions.length}; for run, pods recorded / still stored (terminal) at each deletion: ${deletions.filter((d) => d.jobSet === 'run').map((d) => `${d.podsSeen}/${d.podsTerminal}`).join(', ')}`);
  });
});
