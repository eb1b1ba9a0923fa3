// The reconciler sidecar at cluster scale (issue 18): N suspended TrainJobs (default 10,000) whose
// JobSets have Trainer's real shape, in the KWOK world beside the real Trainer v2.3.0 and JobSet
// v0.12.0 managers (test/reconciler/support/world.ts), companion mode, the project's RBAC. The
// sidecar, `trainjob-webhook reconcile` with the NODE_OPTIONS of the shipped reconciler container,
// is driven as a black box: its flags, its metrics endpoint,
// its log, its memory from /proc. It reports:
//
// - the sidecar's peak RSS (VmHWM) over the run, and its idle RSS: leading, queue empty, BENCH_IDLE_S
//   after the last event (targets: 256 MiB, 100 MiB); beside each, Trainer's controller-manager's
//   (the Go process the world starts, read from its /proc the same way at the same moments): the
//   peer a platform team compares the sidecar with; and the sidecar's V8 heap at idle, from its /metrics;
// - reconciles per created TrainJob (target: at most 2) and API requests per created TrainJob
//   (trainjob_reconciler_api_requests_total, Lease renewals aside), and the creation's wall time;
// - a scaling write's path to the new JobSet (a suspended TrainJob's numNodes 1 -> 2, until Trainer's
//   new JobSet exists), on an empty cluster and with N TrainJobs present, broken down: the sidecar's
//   part (the write stored -> its delete of the old JobSet returned, from its log), of which the API
//   server's answers to the same requests replayed by the benchmark; the garbage collector's
//   foreground deletion; Trainer's re-creation; and the requests one rebuild costs (target: the
//   sidecar's own part with N present within 1.5x of the empty cluster's).
//
// The JobSets' shape: Trainer's torchtune-llama3.2-1b ClusterTrainingRuntime (upstream/runtimes,
// two initializer Jobs and the node Job, full pod templates) with its workspace claim replaced by
// an emptyDir volume of the same name: with the claim, JobSet creates a PVC per JobSet even while
// suspended, and a count change beside a bound claim is refused by design (scale-judgment.ts).
//
//   flock /tmp/tjw-e2e.lock npm run bench:scale
//
// Env: BENCH_TRAINJOBS (10000), BENCH_CONCURRENCY (creates in flight, 16), BENCH_TRAINER_QPS (1000)
// and BENCH_TRAINER_BURST (2000): Trainer's client (its default 50/s, burst 100, makes the creation
// alone take many minutes), BENCH_SCALES (scaling writes per cluster size, 5), BENCH_IDLE_S (60),
// BENCH_WAIT_S (how long the creation may take, 7200), BENCH_SIDECAR_ROOT (the checkout whose
// `reconcile` runs; default this one; its `dist` after `npm run build`: the compiled build, as the
// image runs it), BENCH_RESYNC_S (that checkout's resync period, default this
// tree's: 300 before commit "reconcile: the periodic resync every ~10 hours"), BENCH_OUT=FILE.
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { cpus, loadavg, totalmem } from 'node:os';
import path from 'node:path';
import { Watch } from '@kubernetes/client-node';
import { parse, stringify } from 'yaml';
import {
  controlPlaneAvailability,
  upstreamControllersAvailability,
  upstreamDir,
  waitFor,
} from '../test/harness/index.ts';
import { startSidecar, type Sidecar } from '../test/reconciler/support/sidecar.ts';
import { api, JOBSET, RECONCILER_SA, startWorld, torchTrainJob, type World } from '../test/reconciler/support/world.ts';
import { mib, ms, ratio, table } from './lib/markdown.ts';
import { processMemory, type Memory } from './lib/proc.ts';
import { shippedReconcilerNodeOptions } from './lib/reconciler-node-options.ts';
import { byLabel, deltaOf, logTail, samplesOf, sumOf, type LogRecord } from './lib/sidecar-probe.ts';
import { median } from './lib/stats.ts';
import { RECONCILE_DEFAULTS } from '../src/reconciler/config.ts';

function intEnv(name: string, fallback: number, min = 1): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be an integer of at least ${min}, not ${raw}`);
  return n;
}

const knobs = {
  trainJobs: intEnv('BENCH_TRAINJOBS', 10_000),
  concurrency: intEnv('BENCH_CONCURRENCY', 16),
  trainerQps: intEnv('BENCH_TRAINER_QPS', 1000),
  trainerBurst: intEnv('BENCH_TRAINER_BURST', 2000),
  scales: intEnv('BENCH_SCALES', 5),
  idleSeconds: intEnv('BENCH_IDLE_S', 60, 0),
  waitSeconds: intEnv('BENCH_WAIT_S', 7200),
  sidecarRoot: process.env.BENCH_SIDECAR_ROOT || undefined,
  out: process.env.BENCH_OUT || undefined,
};

const NS = 'bench';
const RUNTIME = 'torchtune-llama3.2-1b-emptydir';
/**
 * The sidecar's resync period (src/reconciler/config.ts): every key is queued again about this often.
 * Jittered to 0.9-1.1x per process (watches.ts); counted here at the nominal period, so a run
 * shorter than 9 hours has no pass either way.
 */
const RESYNC_S = Number(process.env.BENCH_RESYNC_S) || RECONCILE_DEFAULTS.resyncMs / 1000;
/** The sidecar's API requests by verb, Lease renewals aside. */
const requestsOf = (metrics: string) => {
  const out: Record<string, number> = {};
  for (const s of samplesOf(metrics, 'trainjob_reconciler_api_requests_total'))
    if (s.labels.resource !== 'leases') out[`${s.labels.verb} ${s.labels.resource}`] = s.value;
  return out;
};
const progress = (line: string) => process.stderr.write(`  ${line}\n`);

/** The sidecar's memory and Trainer's controller-manager's, read at the same moment. */
interface Footprint {
  sidecar: Memory;
  trainer: Memory;
}
function footprint(b: Bench): Footprint {
  return { sidecar: processMemory(b.sidecar.proc.pid), trainer: processMemory(b.trainerPid) };
}

/** Trainer's torchtune runtime with its workspace claim an emptyDir (see the file's head). */
function benchRuntime(): string {
  const doc = parse(readFileSync(path.join(upstreamDir, 'runtimes/torchtune_llama3_2_1B.yaml'), 'utf8'));
  doc.metadata.name = RUNTIME;
  const claim = doc.spec.template.spec.volumeClaimPolicies[0].templates[0].metadata.name as string;
  delete doc.spec.template.spec.volumeClaimPolicies;
  for (const r of doc.spec.template.spec.replicatedJobs)
    r.template.spec.template.spec.volumes = [{ name: claim, emptyDir: {} }];
  return stringify(doc);
}

const benchTrainJob = (name: string) =>
  torchTrainJob(name, NS, {
    runtimeRef: { name: RUNTIME },
    initializer: {
      dataset: { storageUri: 'hf://tatsu-lab/alpaca' },
      model: { storageUri: 'hf://meta-llama/Llama-3.2-1B-Instruct' },
    },
  }) as Record<string, any>;

interface Bench {
  w: World;
  a: ReturnType<typeof api>;
  sidecar: Sidecar;
  log: ReturnType<typeof logTail>;
  scrape(): Promise<string>;
  startedAt: number;
  /** Trainer's controller-manager (the binary itself: the harness starts it without a shell). */
  trainerPid: number;
}

/** How many objects of a kind the namespace holds, from a LIST of one (remainingItemCount). */
async function countOf(b: Bench, kind: 'jobsets' | 'jobs' | 'trainjobs'): Promise<number> {
  const url = {
    jobsets: `/apis/${JOBSET.group}/${JOBSET.version}/namespaces/${NS}/jobsets`,
    jobs: `/apis/batch/v1/namespaces/${NS}/jobs`,
    trainjobs: `/apis/trainer.kubeflow.org/v1alpha1/namespaces/${NS}/trainjobs`,
  }[kind];
  const out = await b.w.cp.kubectl(['get', '--raw', `${url}?limit=1`]);
  const list = JSON.parse(out.stdout) as { items: unknown[]; metadata?: { remainingItemCount?: number } };
  return list.items.length + (list.metadata?.remainingItemCount ?? 0);
}

async function createAll(b: Bench, names: string[], onProgress?: (done: number) => void): Promise<void> {
  let next = 0;
  let done = 0;
  const worker = async () => {
    while (next < names.length) {
      const name = names[next++];
      const out = await b.w.tj.create(benchTrainJob(name));
      if (!out.allowed) throw new Error(`TrainJob ${name} refused: ${JSON.stringify(out.refusal)}`);
      onProgress?.(++done);
    }
  };
  await Promise.all(Array.from({ length: Math.min(knobs.concurrency, names.length) }, worker));
}

async function queueDrained(b: Bench, timeoutMs: number): Promise<void> {
  let last = NaN;
  await waitFor(
    'the sidecar queue empty and no reconcile for 5 s',
    async () => {
      const m = await b.scrape();
      const idle = sumOf(m, 'workqueue_depth') === 0 && sumOf(m, 'trainjob_reconciler_queue_depth') === 0;
      const n = sumOf(m, 'trainjob_reconciler_reconciles_total');
      const settled = idle && n === last;
      last = n;
      return settled ? true : undefined;
    },
    { timeoutMs, intervalMs: 5_000 },
  );
}

interface ScaleRun {
  /** ms from the write returned to: the sidecar's delete returned, the old JobSet gone, the new one present. */
  sidecar: number;
  gc: number;
  trainer: number;
  total: number;
  /** The API server's answers to the sidecar's requests before its delete, replayed. */
  apiReplay: number;
  requests: Record<string, number>;
}

/** The sidecar's requests up to its delete, replayed (reconcile.ts: its reads, then the report and the delete). */
async function replayApiTime(b: Bench, name: string, writeMs: number): Promise<number> {
  const sel = `jobset.sigs.k8s.io/jobset-name=${name}`;
  const t0 = performance.now();
  await Promise.all([
    b.w.tj.get(NS, name),
    b.a.batch.listNamespacedJob({ namespace: NS, labelSelector: sel }),
    b.a.core.listNamespacedPod({ namespace: NS, labelSelector: sel }),
  ]);
  await b.a.core.listNamespacedPersistentVolumeClaim({ namespace: NS });
  const t1 = performance.now();
  // Two writes (the report's apply, the delete), each costed as the benchmark's own TrainJob write.
  return t1 - t0 + 2 * writeMs;
}

/**
 * A watch of one JobSet by name: when each uid was added and deleted (performance.now, as seen here).
 * A watch that ends (the API server's timeout, a dropped connection: client-node says so only through
 * its done callback) is taken again at once, so a re-creation minutes later is still seen; the objects
 * a new watch lists come as ADDED then, so a time after a restart is an upper bound (`restarts`).
 */
async function watchJobSet(b: Bench, name: string) {
  const added = new Map<string, number>();
  const deleted = new Map<string, number>();
  let stopped = false;
  let restarts = 0;
  let ctl: AbortController | undefined;
  const open = async (): Promise<void> => {
    ctl = await new Watch(b.w.cp.kubeConfig).watch(
      `/apis/${JOBSET.group}/${JOBSET.version}/namespaces/${NS}/jobsets`,
      { fieldSelector: `metadata.name=${name}` },
      (phase: string, obj: { metadata?: { uid?: string } }) => {
        const uid = obj.metadata?.uid ?? '';
        const at = performance.now();
        if (phase === 'ADDED' && !added.has(uid)) added.set(uid, at);
        if (phase === 'DELETED' && !deleted.has(uid)) deleted.set(uid, at);
      },
      () => {
        if (stopped) return;
        restarts++;
        setTimeout(() => void open().catch(() => setTimeout(() => void open(), 1000)), 100);
      },
    );
  };
  await open();
  return {
    /** Once the old uid is deleted and another added: both times. */
    replaced: async (oldUid: string) => {
      const at = await waitFor(
        `JobSet ${name} re-created`,
        () => {
          const fresh = [...added].find(([uid]) => uid !== oldUid);
          const gone = deleted.get(oldUid) ?? (fresh ? fresh[1] : undefined);
          return fresh && gone !== undefined ? { gone, created: fresh[1] } : undefined;
        },
        // Trainer's one TrainJob worker may still be working off the creation's events (10,000: minutes).
        { timeoutMs: 1_800_000, intervalMs: 10 },
      );
      return { ...at, restarts };
    },
    stop: () => {
      stopped = true;
      ctl?.abort();
    },
  };
}

/** One scaling write of a suspended probe TrainJob, 1 -> 2 nodes, timed to the new JobSet. */
async function scaleOnce(b: Bench, name: string): Promise<ScaleRun> {
  const old = await b.a.waitJobSet(NS, name, 'built', () => true, 600_000);
  b.log.next();
  const before = requestsOf(await b.scrape());
  const g0 = performance.now();
  await b.w.tj.get(NS, name);
  const getMs = performance.now() - g0;
  const watch = await watchJobSet(b, name);
  const t0 = performance.now();
  const out = await b.w.tj.update(NS, name, (o) => void (o.spec.trainer.numNodes = 2));
  const stored = performance.now();
  const storedWall = Date.now();
  if (!out.allowed) throw new Error(`the count change of ${name} was refused: ${JSON.stringify(out.refusal)}`);
  const { gone, created, restarts } = await watch.replaced(old.metadata.uid ?? '').finally(watch.stop);
  if (restarts > 0)
    progress(`${name}: the JobSet watch ended and was taken again ${restarts} time(s); its times are upper bounds`);
  const deleted = await waitFor(`${name}: the sidecar's delete in its log`, () => {
    const hit = b.log
      .next()
      .find((l: LogRecord) => l.msg?.startsWith('stale JobSet deleted') && l.trainJob === `${NS}/${name}`);
    return hit?.time ? Date.parse(hit.time) : undefined;
  });
  await waitFor(`${name}: Rebuilt`, async () =>
    b.a.report((await b.w.tj.get(NS, name)) as never)?.state === 'Rebuilt' ? true : undefined,
  );
  const requests = deltaOf(before, requestsOf(await b.scrape()));
  const sidecar = deleted - storedWall;
  const apiReplay = await replayApiTime(b, name, Math.max(0, stored - t0 - getMs));
  return {
    sidecar,
    gc: gone - (stored + sidecar),
    trainer: created - gone,
    total: created - stored,
    apiReplay,
    requests,
  };
}

async function scaleProbes(b: Bench, label: string): Promise<ScaleRun[]> {
  const names = Array.from({ length: knobs.scales }, (_, i) => `probe-${label}-${i}`);
  await createAll(b, names);
  const runs: ScaleRun[] = [];
  for (const name of names) {
    runs.push(await scaleOnce(b, name));
    progress(`scale ${name}: sidecar ${runs.at(-1)!.sidecar.toFixed(0)} ms, total ${runs.at(-1)!.total.toFixed(0)} ms`);
  }
  return runs;
}

interface Population {
  seconds: number;
  createSeconds: number;
  reconciles: number;
  requests: Record<string, number>;
  watchEvents: Record<string, number>;
  /** The events that changed what a decision reads, by the watch they came from (trainjob, jobset, job). */
  changedBySource: Record<string, number>;
  resyncPasses: number;
  /** The keys those passes queued again: the TrainJobs that existed at each pass. */
  resyncKeys: number;
  jobSets: number;
  jobs: number;
}

async function populate(b: Bench): Promise<Population> {
  const m0 = await b.scrape();
  const t0 = Date.now();
  const names = Array.from({ length: knobs.trainJobs }, (_, i) => `tj-${String(i).padStart(5, '0')}`);
  let created = 0;
  let createdAt = NaN;
  const createdTimes: number[] = [];
  const ticker = setInterval(() => {
    const { sidecar: rss, trainer } = footprint(b);
    void Promise.all([countOf(b, 'jobsets'), b.scrape()]).then(
      ([jobSets, m]) =>
        progress(
          `${((Date.now() - t0) / 1000).toFixed(0)} s: ${created}/${knobs.trainJobs} TrainJobs created, ${jobSets} JobSets; sidecar RSS ${mib(rss.rss)} MiB (peak ${mib(rss.peak)}), Trainer's ${mib(trainer.rss)} (peak ${mib(trainer.peak)}), ${sumOf(m, 'trainjob_reconciler_reconciles_total')} reconciles, queue ${sumOf(m, 'workqueue_depth')}`,
        ),
      () => undefined,
    );
  }, 10_000);
  try {
    await createAll(b, names, (n) => {
      created = n;
      createdTimes.push(Date.now());
      if (n === names.length) createdAt = Date.now();
    });
    const want = knobs.trainJobs + knobs.scales;
    await waitFor(
      `${want} JobSets built by Trainer`,
      async () => ((await countOf(b, 'jobsets')) >= want ? true : undefined),
      {
        timeoutMs: knobs.waitSeconds * 1000,
        intervalMs: 5_000,
      },
    );
    await queueDrained(b, knobs.waitSeconds * 1000);
  } finally {
    clearInterval(ticker);
  }
  const m1 = await b.scrape();
  const t1 = Date.now();
  // The resync's passes in the window (its timer starts with the sidecar: startedAt, within a second or two).
  const passTimes: number[] = [];
  for (let k = Math.ceil((t0 - b.startedAt) / 1000 / RESYNC_S); b.startedAt + k * RESYNC_S * 1000 <= t1; k++)
    passTimes.push(b.startedAt + k * RESYNC_S * 1000);
  const passes = passTimes.length;
  const resyncKeys = passTimes.reduce((sum, at) => sum + knobs.scales + createdTimes.filter((c) => c <= at).length, 0);
  return {
    seconds: (t1 - t0) / 1000,
    createSeconds: (createdAt - t0) / 1000,
    reconciles: sumOf(m1, 'trainjob_reconciler_reconciles_total') - sumOf(m0, 'trainjob_reconciler_reconciles_total'),
    requests: deltaOf(requestsOf(m0), requestsOf(m1)),
    watchEvents: deltaOf(
      byLabel(m0, 'trainjob_reconciler_watch_events_total', 'result'),
      byLabel(m1, 'trainjob_reconciler_watch_events_total', 'result'),
    ),
    changedBySource: deltaOf(
      byLabel(m0, 'trainjob_reconciler_watch_events_total', 'source', (l) => l.result === 'changed'),
      byLabel(m1, 'trainjob_reconciler_watch_events_total', 'source', (l) => l.result === 'changed'),
    ),
    resyncPasses: passes,
    resyncKeys,
    jobSets: await countOf(b, 'jobsets'),
    jobs: await countOf(b, 'jobs'),
  };
}

async function startBench(): Promise<Bench> {
  const w = await startWorld({
    trainer: true,
    webhook: false,
    trainerClientConnection: { qps: knobs.trainerQps, burst: knobs.trainerBurst },
    // etcd's default 2 GiB quota; a few hundred thousand writes of JobSet-sized objects go well past it.
    etcdArgs: ['--quota-backend-bytes=8589934592'],
  });
  await w.cp.kubectl(['create', 'namespace', NS]);
  await w.cp.applyYaml(benchRuntime());
  const startedAt = Date.now();
  const sidecar = await startSidecar(w.cp, {
    name: 'reconciler',
    mode: 'companion',
    kubeconfig: w.reconcilerKubeconfig.path,
    leaseNamespace: RECONCILER_SA.namespace,
    handoffPort: w.handoffPort,
    root: knobs.sidecarRoot,
    // As the shipped reconciler container runs (manifests/components/separate-reconciler).
    env: { NODE_OPTIONS: shippedReconcilerNodeOptions() },
  });
  const scrape = async () => (await fetch(`http://127.0.0.1:${sidecar.opsPort}/metrics`)).text();
  await waitFor(
    'the sidecar leading',
    async () => (sumOf(await scrape(), 'trainjob_reconciler_leader') === 1 ? true : undefined),
    {
      timeoutMs: 60_000,
    },
  );
  const trainerPid = w.upstream.trainer?.process.pid;
  if (trainerPid === undefined) throw new Error('the world started no Trainer controller-manager');
  return { w, a: api(w.cp), sidecar, log: logTail(sidecar.proc.logFile), scrape, startedAt, trainerPid };
}

const memoryRow = (what: string, f: Footprint, pick: (m: Memory) => number, target: string) => [
  what,
  mib(pick(f.sidecar)),
  mib(pick(f.trainer)),
  ratio(pick(f.sidecar), pick(f.trainer)),
  target,
];

/** The sidecar's memory beside Trainer's controller-manager's, at the same moments. */
function memoryTable(empty: Footprint, idle: Footprint, end: Footprint, leading: number): string {
  return table(
    [
      'memory, MiB',
      'sidecar (`trainjob-webhook reconcile`)',
      "Trainer's controller-manager",
      'sidecar / Trainer',
      'target (sidecar)',
    ],
    [
      memoryRow("RSS on the empty cluster (after the sidecar's scaling writes)", empty, (f) => f.rss, ''),
      memoryRow('peak RSS (VmHWM) over the run', end, (f) => f.peak, '≤ 256'),
      memoryRow(
        `idle RSS ${knobs.idleSeconds} s after the last event (sidecar leading: ${leading})`,
        idle,
        (f) => f.rss,
        '≤ 100',
      ),
      memoryRow('RSS at the end (after the scaling writes with all present)', end, (f) => f.rss, ''),
    ],
  );
}

/** What the sidecar's RSS holds, from its own /metrics: V8's heap committed by space, in use, and external memory. */
function heapBreakdown(metrics: string): string {
  const one = (name: string, space?: string) => sumOf(metrics, name, (l) => space === undefined || l.space === space);
  const spaces = ['new', 'old', 'code', 'large_object', 'trusted']
    .map((sp) => `${sp} ${mib(one('nodejs_heap_space_size_total_bytes', sp))}`)
    .join(', ');
  return `V8 heap committed ${mib(one('nodejs_heap_size_total_bytes'))} MiB (by space: ${spaces}), in use ${mib(one('nodejs_heap_size_used_bytes'))} MiB, external ${mib(one('nodejs_external_memory_bytes'))} MiB, RSS ${mib(one('process_resident_memory_bytes'))} MiB`;
}

const sumValues = (r: Record<string, number>) => Object.values(r).reduce((a, b) => a + b, 0);
const showCounts = (r: Record<string, number>) =>
  Object.entries(r)
    .sort()
    .map(([k, v]) => `${k} ${v}`)
    .join(', ') || 'none';

function scaleTable(empty: ScaleRun[], full: ScaleRun[]): string {
  const med = (runs: ScaleRun[], f: (r: ScaleRun) => number) => median(runs.map(f));
  const own = (r: ScaleRun) => r.sidecar - r.apiReplay;
  const rows: [string, (r: ScaleRun) => number][] = [
    ['the write stored -> the new JobSet exists', (r) => r.total],
    ["the sidecar's part: stored -> its delete of the old JobSet returned", (r) => r.sidecar],
    ['  of which the API server answering the same requests (replayed)', (r) => r.apiReplay],
    ["  the sidecar's own (watch delivery, queue, decision)", own],
    ["the garbage collector's foreground deletion (delete returned -> the old JobSet's DELETED event)", (r) => r.gc],
    ["Trainer's re-creation (DELETED -> the new JobSet's ADDED event)", (r) => r.trainer],
  ];
  return table(
    ['median of ' + empty.length + ' (ms)', 'empty cluster', `${knobs.trainJobs} TrainJobs`, 'ratio'],
    rows.map(([what, f]) => [what, ms(med(empty, f)), ms(med(full, f)), ratio(med(full, f), med(empty, f))]),
  );
}

async function main() {
  for (const a of [controlPlaneAvailability(), upstreamControllersAvailability()])
    if (!a.available) throw new Error(`cannot run: ${a.reason}`);
  const started = new Date();
  const load = [loadavg()[0]];
  const b = await startBench();
  try {
    progress('scaling writes on an empty cluster');
    const empty = await scaleProbes(b, 'empty');
    const empty0 = footprint(b);
    progress(`creating ${knobs.trainJobs} TrainJobs, ${knobs.concurrency} at a time`);
    const pop = await populate(b);
    progress(`idle: waiting ${knobs.idleSeconds} s after the last event`);
    await new Promise((r) => setTimeout(r, knobs.idleSeconds * 1000));
    const idle = footprint(b);
    const idleMetrics = await b.scrape();
    const leading = sumOf(idleMetrics, 'trainjob_reconciler_leader');
    progress(`scaling writes with ${knobs.trainJobs} TrainJobs present`);
    const full = await scaleProbes(b, 'full');
    const end = footprint(b);
    load.push(loadavg()[0]);
    const perJob = (n: number) => (n / knobs.trainJobs).toFixed(2);
    const rebuildRequests = (runs: ScaleRun[]) => median(runs.map((r) => sumValues(r.requests)));
    const report = [
      '## The reconciler at cluster scale (`npm run bench:scale`)',
      '',
      `- date: ${started.toISOString()}; ${cpus().length} cores (${cpus()[0]?.model}), ${(totalmem() / 2 ** 30).toFixed(1)} GiB; load average ${load[0].toFixed(2)} at the start, ${load[1].toFixed(2)} at the end`,
      `- companion mode beside Trainer v2.3.0 (client ${knobs.trainerQps}/s, burst ${knobs.trainerBurst}) and JobSet v0.12.0; ${knobs.trainJobs} suspended TrainJobs of \`${RUNTIME}\` (Trainer's torchtune runtime, its claim an emptyDir), ${knobs.concurrency} creates in flight; sidecar from ${knobs.sidecarRoot ?? 'this checkout'}`,
      `- creation: all ${knobs.trainJobs} created after ${pop.createSeconds.toFixed(0)} s; ${pop.jobSets} JobSets and ${pop.jobs} Jobs built and the sidecar's queue empty after ${pop.seconds.toFixed(0)} s (wall time)`,
      '',
      memoryTable(empty0, idle, end, leading),
      '',
      table(
        ['sidecar (`trainjob-webhook reconcile`)', 'value', 'target'],
        [
          [
            `reconciles per created TrainJob, the resync's aside (${pop.reconciles} in all, ${pop.resyncKeys} of them queued by ${pop.resyncPasses} resync passes)`,
            perJob(pop.reconciles - pop.resyncKeys),
            '≤ 2',
          ],
          [
            `API requests per created TrainJob (${sumValues(pop.requests)}: ${showCounts(pop.requests)})`,
            perJob(sumValues(pop.requests)),
            '',
          ],
          [
            `API requests per rebuild (median, Lease renewals aside; empty cluster: ${rebuildRequests(empty)})`,
            String(rebuildRequests(full)),
            '',
          ],
        ],
      ),
      '',
      `The sidecar idle, from its own /metrics (prom-client's process series) at that moment: ${heapBreakdown(idleMetrics)}.`,
      '',
      `Watch events during the creation, by what the sidecar made of them: ${Object.keys(pop.watchEvents).length ? `${showCounts(pop.watchEvents)} (changed, by watch: ${showCounts(pop.changedBySource)})` : 'not counted (a sidecar without trainjob_reconciler_watch_events_total)'}. The resync queues every key again each ${RESYNC_S} s (src/reconciler/config.ts); its passes in the window are counted from the sidecar's start and the TrainJobs that existed then.`,
      '',
      `A scaling write's path (a suspended TrainJob's numNodes 1 -> 2, ${knobs.scales} times per cluster size):`,
      '',
      scaleTable(empty, full),
      '',
      `Requests of one rebuild, empty cluster: ${showCounts(empty[0]?.requests ?? {})}; with ${knobs.trainJobs}: ${showCounts(full[0]?.requests ?? {})}.`,
      '',
    ].join('\n');
    process.stdout.write(report);
    if (knobs.out) await writeFile(knobs.out, report);
  } finally {
    await b.w.stop();
  }
}

await main();
