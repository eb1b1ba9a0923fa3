// What the reconciler's caches hold per TrainJob (issue 18), without a cluster: N suspended
// TrainJobs (default 10,000) with their JobSets and Jobs in the shapes the bench:scale world stores
// them, served as list pages of JSON text to the sidecar's own watches (src/reconciler/watches.ts:
// the informers, their transform, deepFreeze and Store) through an ApiClient that answers from
// memory, and the heap retained after a full gc, for three shapes in one run:
//
// - whole: the objects as parsed (no transform), the baseline;
// - base: the cache shape of BENCH_BASE_REF, its src/ extracted from git. Default ad1b5c6, the
//   commit before the cache-shape change (7e7f6f7, merged in 4b11cb2): since that merge `main`
//   would compare this shape with itself, so a base whose src/ is HEAD's tree is refused;
// - this: this checkout's cache shape (companion mode), with and without interning.
//
// Per shape: the caches alone, then the watch-event gate's per-key notes (decision-inputs.ts,
// one judge per key, as the creation burst leaves them). Also per key, outside the informers: the
// runtime memo (runtime-memo.ts), which holds Trainer's runtime snapshot of each TrainJob whose
// JobSet exists, base's and this one's.
//
// The objects. The TrainJob as bench:scale creates it (torch, Trainer's torchtune runtime, both
// initializers) with what the API server and Trainer v2.3.0 add: uid, resourceVersion, generation,
// creationTimestamp, the CRD's defaults (managedBy, runtimeRef's apiGroup and kind), managedFields
// (the creator's Update, Trainer's status Update) and the status Trainer writes for a suspended
// job (Suspended, jobsStatus of its three jobs). The JobSet: the one the real Trainer v2.3.0 built
// from that runtime, as JobSet v0.12.0 stored it (test/rebuild/fixtures/trainer-v2.3.0-jobset-
// ttpub.json), its workspace claim an emptyDir as in bench:scale, with Trainer's apply and JobSet's
// status in managedFields and the status JobSet writes for a suspended JobSet. Its three Jobs as
// JobSet v0.12.0 constructs them (labels and annotations, the replicated job's template) with the
// API server's defaults of a Job and its pod template, and the Job controller's suspended status.
// The JobSet is captured; the server fields and the Jobs are synthesized from those sources
// (managedFields' fieldsV1 is derived from the fields each manager wrote). Every object has its
// own name, uid and resourceVersion.
//
//   npm run bench:cache                      (node --expose-gc bench/cache-memory.bench.ts)
//
// Env: BENCH_TRAINJOBS (10000), BENCH_BASE_REF (ad1b5c6), BENCH_SHAPES (whole,base,plain,this: which,
// in order), BENCH_HEAPSNAPSHOT=DIR (a heap snapshot of each shape, stored, for Chrome DevTools),
// BENCH_OUT=FILE (the report, markdown).
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import v8 from 'node:v8';
import { parse } from 'yaml';
import type { ApiClient } from '../src/cluster/api-request.ts';
import { createLogger } from '../src/observability/logger.ts';
import { cacheShapeFor, type CacheShape } from '../src/reconciler/cache-shape.ts';
import { DecisionInputGate } from '../src/reconciler/decision-inputs.ts';
import { RuntimeMemo } from '../src/reconciler/runtime-memo.ts';
import { createWatches } from '../src/reconciler/watches.ts';
import { table } from './lib/markdown.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

function intEnv(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a positive integer, not ${raw}`);
  return n;
}

const knobs = {
  trainJobs: intEnv('BENCH_TRAINJOBS', 10_000),
  /** The commit before the cache-shape change (see the header). */
  baseRef: process.env.BENCH_BASE_REF || 'ad1b5c6',
  snapshots: process.env.BENCH_HEAPSNAPSHOT || undefined,
  /** Which shapes, in order (one alone pays the fixed costs the others share: code, hidden classes). */
  shapes: (process.env.BENCH_SHAPES || 'whole,base,plain,this').split(','),
  out: process.env.BENCH_OUT || undefined,
};

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc (npm run bench:cache)');
const progress = (line: string) => process.stderr.write(`  ${line}\n`);

const NS = 'bench';
const RUNTIME = 'torchtune-llama3.2-1b-emptydir';
const JOB_NAMES = ['dataset-initializer', 'model-initializer', 'node'];

// --- the objects, as JSON text with per-object tokens -------------------------------------------

type Obj = Record<string, any>;

/** managedFields' fieldsV1 of the fields an object sets: lists of named items keyed by name, as SSA does. */
function fieldsOf(v: unknown): Obj {
  if (Array.isArray(v)) {
    const out: Obj = {};
    for (const item of v)
      if (item && typeof item === 'object' && typeof (item as Obj).name === 'string')
        out[`k:{"name":${JSON.stringify((item as Obj).name)}}`] = { '.': {}, ...fieldsOf(item) };
    return out;
  }
  if (!v || typeof v !== 'object') return {};
  const out: Obj = {};
  for (const [k, x] of Object.entries(v)) out[`f:${k}`] = fieldsOf(x);
  return out;
}

const entry = (manager: string, operation: string, fields: unknown, subresource?: string) => ({
  manager,
  operation,
  apiVersion: 'v1',
  time: '@@TIME@@',
  fieldsType: 'FieldsV1',
  fieldsV1: fieldsOf(fields),
  ...(subresource ? { subresource } : {}),
});

const condition = (type: string, reason: string, message: string) => ({
  type,
  status: 'True',
  reason,
  message,
  lastTransitionTime: '@@TIME@@',
});

function trainJobText(): string {
  const spec = {
    runtimeRef: { apiGroup: 'trainer.kubeflow.org', kind: 'ClusterTrainingRuntime', name: RUNTIME },
    suspend: true,
    managedBy: 'trainer.kubeflow.org/trainjob-controller',
    trainer: { numNodes: 1, image: 'ghcr.io/acme/train:1', command: ['torchrun', 'train.py'] },
    initializer: {
      dataset: { storageUri: 'hf://tatsu-lab/alpaca' },
      model: { storageUri: 'hf://meta-llama/Llama-3.2-1B-Instruct' },
    },
  };
  const status = {
    conditions: [{ ...condition('Suspended', 'Suspended', 'TrainJob is suspended'), status: 'True' }],
    jobsStatus: JOB_NAMES.map((name) => ({ name, ready: 0, succeeded: 0, failed: 0, active: 0, suspended: 1 })),
  };
  return JSON.stringify({
    apiVersion: 'trainer.kubeflow.org/v1alpha1',
    kind: 'TrainJob',
    metadata: {
      name: '@@NAME@@',
      namespace: NS,
      uid: '@@TJUID@@',
      resourceVersion: '@@RV0@@',
      generation: 1,
      creationTimestamp: '@@TIME@@',
      managedFields: [
        entry('trainjob-webhook-bench', 'Update', { spec }),
        entry('trainer', 'Update', { status }, 'status'),
      ],
    },
    spec,
    status,
  });
}

/** The JobSet Trainer v2.3.0 built from the torchtune runtime, as stored, its claim an emptyDir (bench:scale). */
function jobSetObject(): Obj {
  const js = JSON.parse(
    readFileSync(path.join(root, 'test/rebuild/fixtures/trainer-v2.3.0-jobset-ttpub.json'), 'utf8')
      .replaceAll('jobset-uid-ttpub', '@@JSUID@@')
      .replaceAll('trainjob-uid-ttpub', '@@TJUID@@')
      .replaceAll('ttpub', '@@NAME@@'),
  ) as Obj;
  const claims = (js.spec.volumeClaimPolicies ?? []) as Obj[];
  const claim = claims[0]?.templates?.[0]?.metadata?.name as string | undefined;
  delete js.spec.volumeClaimPolicies;
  if (claim)
    for (const r of js.spec.replicatedJobs) {
      const pod = r.template.spec.template.spec;
      pod.volumes = (pod.volumes ?? []).filter((v: Obj) => v.name !== claim).concat([{ name: claim, emptyDir: {} }]);
    }
  const applied = {
    metadata: { labels: js.metadata.labels, ownerReferences: js.metadata.ownerReferences },
    spec: js.spec,
  };
  const status = {
    conditions: [condition('Suspended', 'SuspendedJobs', 'jobset is suspended')],
    restarts: 0,
    replicatedJobsStatus: JOB_NAMES.map((name) => ({
      name,
      ready: 0,
      succeeded: 0,
      failed: 0,
      active: 0,
      suspended: 1,
    })),
  };
  js.metadata = {
    ...js.metadata,
    namespace: NS,
    resourceVersion: '@@RV1@@',
    generation: 1,
    creationTimestamp: '@@TIME@@',
    managedFields: [entry('trainer', 'Apply', applied), entry('jobset', 'Update', { status }, 'status')],
  };
  js.status = status;
  return js;
}

/** A pod template as the API server stores it in a Job: core's defaults filled in. */
function defaultedPod(pod: Obj): Obj {
  const container = (c: Obj) => ({
    ...c,
    resources: c.resources ?? {},
    terminationMessagePath: '/dev/termination-log',
    terminationMessagePolicy: 'File',
    imagePullPolicy: String(c.image).includes(':') && !String(c.image).endsWith(':latest') ? 'IfNotPresent' : 'Always',
  });
  return {
    ...pod,
    containers: (pod.containers ?? []).map(container),
    ...(pod.initContainers ? { initContainers: pod.initContainers.map(container) } : {}),
    dnsPolicy: 'ClusterFirst',
    schedulerName: 'default-scheduler',
    securityContext: {},
    terminationGracePeriodSeconds: 30,
    restartPolicy: pod.restartPolicy ?? 'Never',
  };
}

/** The Jobs JobSet v0.12.0 creates (constructJob), as stored, suspended. */
function jobObjects(js: Obj): Obj[] {
  return js.spec.replicatedJobs.map((r: Obj, i: number) => {
    const name = `@@NAME@@-${r.name}-0`;
    const jobsetLabels = {
      'jobset.sigs.k8s.io/jobset-name': '@@NAME@@',
      'jobset.sigs.k8s.io/replicatedjob-replicas': String(r.replicas ?? 1),
      'jobset.sigs.k8s.io/replicatedjob-name': r.name,
      'jobset.sigs.k8s.io/job-index': '0',
      'jobset.sigs.k8s.io/job-global-index': String(i),
      'jobset.sigs.k8s.io/job-key': `@@JOBKEY${i}@@`,
      'jobset.sigs.k8s.io/restart-attempt': '0',
      'jobset.sigs.k8s.io/jobset-uid': '@@JSUID@@',
    };
    const labels = { ...r.template.metadata?.labels, ...jobsetLabels };
    const annotations = { ...r.template.metadata?.annotations, ...jobsetLabels };
    const controller = {
      'batch.kubernetes.io/controller-uid': `@@JOBUID${i}@@`,
      'batch.kubernetes.io/job-name': name,
      'controller-uid': `@@JOBUID${i}@@`,
      'job-name': name,
    };
    const podTemplate = r.template.spec.template;
    const spec = {
      ...r.template.spec,
      backoffLimit: r.template.spec.backoffLimit ?? 0,
      suspend: true,
      manualSelector: false,
      podReplacementPolicy: 'TerminatingOrFailed',
      selector: { matchLabels: { 'batch.kubernetes.io/controller-uid': `@@JOBUID${i}@@` } },
      template: {
        metadata: {
          labels: { ...podTemplate.metadata?.labels, ...labels, ...controller },
          annotations: { ...podTemplate.metadata?.annotations, ...annotations },
        },
        spec: { subdomain: '@@NAME@@', ...defaultedPod(podTemplate.spec) },
      },
    };
    const status = { conditions: [condition('Suspended', 'JobSuspended', 'Job suspended')], ready: 0, terminating: 0 };
    return {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: {
        name,
        namespace: NS,
        uid: `@@JOBUID${i}@@`,
        resourceVersion: `@@RV${2 + i}@@`,
        generation: 1,
        creationTimestamp: '@@TIME@@',
        labels,
        annotations,
        ownerReferences: [
          {
            apiVersion: 'jobset.x-k8s.io/v1alpha2',
            kind: 'JobSet',
            name: '@@NAME@@',
            uid: '@@JSUID@@',
            controller: true,
            blockOwnerDeletion: true,
          },
        ],
        managedFields: [
          entry('jobset', 'Update', { metadata: { labels, annotations }, spec }),
          entry('kube-controller-manager', 'Update', { status }, 'status'),
        ],
      },
      spec,
      status,
    };
  });
}

const uid = (i: number, salt: string) => {
  const h = createHash('sha1').update(`${salt}/${i}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
};

const templates = (() => {
  const js = jobSetObject();
  return { trainJob: trainJobText(), jobSet: JSON.stringify(js), jobs: jobObjects(js).map((j) => JSON.stringify(j)) };
})();

/** The text of object `i`'s TrainJob, JobSet or Job: every token replaced by its own value. */
function textOf(template: string, i: number): string {
  const name = `tj-${String(i).padStart(5, '0')}`;
  return template.replace(/@@([A-Z]+)(\d*)@@/g, (_m, token: string, n: string) => {
    switch (token) {
      case 'NAME':
        return name;
      case 'TJUID':
        return uid(i, 'tj');
      case 'JSUID':
        return uid(i, 'js');
      case 'JOBUID':
        return uid(i, `job${n}`);
      case 'JOBKEY':
        return createHash('sha1')
          .update(`${NS}/${name}-${JOB_NAMES[Number(n)]}-0`)
          .digest('hex');
      case 'RV':
        return String(1000 + i * 5 + Number(n));
      case 'TIME':
        return new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString().replace('.000', '');
      default:
        throw new Error(`no token ${token}`);
    }
  });
}

// --- a list API answered from memory ---------------------------------------------------------------

const PATHS = {
  trainjobs: { apiVersion: 'trainer.kubeflow.org/v1alpha1', kind: 'TrainJobList' },
  jobsets: { apiVersion: 'jobset.x-k8s.io/v1alpha2', kind: 'JobSetList' },
  jobs: { apiVersion: 'batch/v1', kind: 'JobList' },
};

/** The items of collection `which`: N TrainJobs, N JobSets, 3N Jobs (JSON text, made per page). */
function itemText(which: keyof typeof PATHS, k: number): string {
  if (which === 'trainjobs') return textOf(templates.trainJob, k);
  if (which === 'jobsets') return textOf(templates.jobSet, k);
  return textOf(templates.jobs[k % 3], Math.floor(k / 3));
}

/** How many of each collection the client lists: N TrainJobs and, unless `trainJobsOnly`, N JobSets and 3N Jobs. */
function memoryClient(n: number, trainJobsOnly = false): ApiClient {
  return {
    server: new URL('https://memory.invalid'),
    async request(url: string) {
      const u = new URL(url, 'https://memory.invalid');
      const which = (Object.keys(PATHS) as (keyof typeof PATHS)[]).find((p) => u.pathname.endsWith(`/${p}`));
      if (!which) return { status: 404, body: Buffer.from('{}') };
      const count = which === 'trainjobs' ? n : trainJobsOnly ? 0 : which === 'jobs' ? 3 * n : n;
      const limit = Number(u.searchParams.get('limit') ?? 500);
      const from = Number(u.searchParams.get('continue') ?? 0);
      const to = Math.min(count, from + limit);
      const items: string[] = [];
      for (let k = from; k < to; k++) items.push(itemText(which, k));
      const meta = { resourceVersion: '1', ...(to < count ? { continue: String(to) } : {}) };
      const text = `{"apiVersion":"${PATHS[which].apiVersion}","kind":"${PATHS[which].kind}","metadata":${JSON.stringify(meta)},"items":[${items.join(',')}]}`;
      return { status: 200, body: Buffer.from(text) };
    },
    // The watch never opens: nothing changes after the list.
    stream: (_path: string, signal: AbortSignal) =>
      new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(new Error('stopped')))),
  };
}

// --- the measurements --------------------------------------------------------------------------------

function heapNow(): number {
  for (let i = 0; i < 3; i++) gc!();
  return v8.getHeapStatistics().used_heap_size;
}

/** Base's cache-shape.ts, from its src/ extracted out of git (BENCH_BASE_REF). */
async function baseShape(ref: string): Promise<{ shape: CacheShape; Memo: new () => Memo; commit: string }> {
  const git = (...args: string[]) => execFileSync('git', args, { cwd: root, encoding: 'utf8' }).trim();
  const commit = git('rev-parse', '--short', `${ref}^{commit}`);
  if (git('rev-parse', `${commit}:src`) === git('rev-parse', 'HEAD:src'))
    throw new Error(
      `BENCH_BASE_REF=${ref} (${commit}) has the same src/ as HEAD: "base" would measure this shape against itself; pick a commit before the change (default ad1b5c6)`,
    );
  const dir = path.join(root, 'bench/.cache', `base-${commit}`);
  if (!existsSync(path.join(dir, 'src'))) {
    mkdirSync(dir, { recursive: true });
    execFileSync('sh', ['-c', `git archive ${commit} src | tar -x -C ${JSON.stringify(dir)}`], { cwd: root });
  }
  const mod = (await import(pathToFileURL(path.join(dir, 'src/reconciler/cache-shape.ts')).href)) as Obj;
  const shape: CacheShape = mod.cacheShapeFor
    ? mod.cacheShapeFor('companion')
    : { trainJob: mod.trainJobForCache, jobSet: mod.jobSetForCache, job: mod.jobForCache };
  const memo = (await import(pathToFileURL(path.join(dir, 'src/reconciler/runtime-memo.ts')).href)) as Obj;
  return { shape, Memo: memo.RuntimeMemo, commit };
}

interface Measured {
  label: string;
  /** Bytes retained per TrainJob set (TrainJob, JobSet, 3 Jobs) by the caches. */
  caches: number;
  /** ...and by the gate's notes of each key. */
  gate: number;
  /** Bytes retained per TrainJob alone (before its JobSet exists). */
  trainJob: number;
  /** The JSON size of what one set's cache holds (for a sense of the overhead). */
  jsonBytes: number;
}

/** The heap the caches retain per TrainJob when only TrainJobs exist. */
async function trainJobsAlone(shape: CacheShape, n: number): Promise<number> {
  const before = heapNow();
  const watches = createWatches(memoryClient(n, true), {
    onKey: () => {},
    logger,
    shape,
  });
  await watches.start();
  const stored = heapNow();
  await watches.stop();
  await new Promise((resolve) => setTimeout(resolve, 50));
  return (stored - before) / n;
}

const logger = createLogger('silent');
const identity: CacheShape = { trainJob: (o) => o as never, jobSet: (o) => o as never, job: (o) => o as never };

async function measure(label: string, shape: CacheShape, n: number): Promise<Omit<Measured, 'trainJob'>> {
  const before = heapNow();
  const watches = createWatches(memoryClient(n), {
    onKey: () => {},
    logger,
    shape,
  });
  await watches.start();
  if (!watches.synced()) throw new Error('the watches did not list');
  const stored = heapNow();
  const gate = new DecisionInputGate(watches.cache, 'companion');
  for (const key of watches.trainJobKeys()) gate.judge(key, 'trainjob');
  const judged = heapNow();
  if (gate.size !== n) throw new Error(`the gate noted ${gate.size} keys, not ${n}`);
  const first = watches.cache.getJobSet(NS, 'tj-00000');
  const jsonBytes =
    JSON.stringify(watches.cache.getTrainJob(NS, 'tj-00000')).length +
    JSON.stringify(first).length +
    watches.cache.listJobs(NS, 'tj-00000').reduce((s, j) => s + JSON.stringify(j).length, 0);
  if (knobs.snapshots) {
    mkdirSync(knobs.snapshots, { recursive: true });
    progress(
      `heap snapshot: ${v8.writeHeapSnapshot(path.join(knobs.snapshots, `cache-${label.replace(/\W+/g, '-')}.heapsnapshot`))}`,
    );
  }
  await watches.stop();
  progress(
    `${label}: caches ${((stored - before) / n).toFixed(0)} B/set, gate ${((judged - stored) / n).toFixed(0)} B/key`,
  );
  return { label, caches: (stored - before) / n, gate: (judged - stored) / n, jsonBytes };
}

/** `measure`, then the TrainJobs alone (each after the last one's caches are gone). */
async function measured(label: string, shape: CacheShape, n: number): Promise<Measured> {
  const all = await measure(label, shape, n);
  return { ...all, trainJob: await trainJobsAlone(shape, n) };
}

type Memo = Pick<RuntimeMemo, 'set' | 'size'>;

/**
 * The runtime memo: Trainer v2.3.0 writes a runtime snapshot per TrainJob, and the sidecar reads it
 * (and keeps it) once the TrainJob's JobSet exists. Each TrainJob's snapshot is parsed from its own
 * text, as cluster.ts reads it; the runtime's server metadata (managedFields, a last-applied copy)
 * is left out, so this is a lower bound.
 */
function measureRuntimeMemo(Memo: new () => Memo, n: number): number {
  const yaml = readFileSync(path.join(root, 'upstream/runtimes/torchtune_llama3_2_1B.yaml'), 'utf8');
  const before = heapNow();
  const memo = new Memo();
  for (let i = 0; i < n; i++) {
    const doc = parse(yaml) as Obj;
    memo.set(`${NS}/tj-${i}`, uid(i, 'tj'), {
      found: true,
      snapshot: true,
      runtime: { kind: 'ClusterTrainingRuntime', name: doc.metadata.name, spec: doc.spec },
    });
  }
  const held = heapNow();
  // Read after the measurement, so that an optimizing compiler cannot find the memo dead before it.
  if (memo.size !== n) throw new Error(`the memo holds ${memo.size} reads, not ${n}`);
  return (held - before) / n;
}

// --- the run -----------------------------------------------------------------------------------------

const n = knobs.trainJobs;
progress(
  `${n} TrainJob sets; JSON per set: TrainJob ${textOf(templates.trainJob, 0).length} B, JobSet ${textOf(templates.jobSet, 0).length} B, Jobs ${templates.jobs.map((t) => textOf(t, 0).length).join(' + ')} B`,
);
const base = await baseShape(knobs.baseRef);
const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim();
const dirty =
  execFileSync('git', ['status', '--porcelain', '--', 'src'], { cwd: root, encoding: 'utf8' }).trim() !== '';
const version = `${head}${dirty ? '+' : ''}`;
const shapes: Record<string, [string, CacheShape]> = {
  whole: ['whole objects', identity],
  base: [`cache shape of ${knobs.baseRef} (${base.commit})`, base.shape],
  plain: [`this shape, not interned (${version})`, cacheShapeFor('companion', { intern: false })],
  this: [`this shape (${version})`, cacheShapeFor('companion')],
};
const results: Measured[] = [];
for (const name of knobs.shapes) {
  if (!shapes[name]) throw new Error(`BENCH_SHAPES: no shape ${name} (${Object.keys(shapes).join(', ')})`);
  results.push(await measured(...shapes[name], n));
}
const memoKeys = Math.min(n, 2000);
const memo = { base: measureRuntimeMemo(base.Memo, memoKeys), head: measureRuntimeMemo(RuntimeMemo, memoKeys) };

const whole = results.find((r) => r.label === shapes.whole[0])?.caches ?? NaN;
const kib = (b: number) => (b / 1024).toFixed(1);
const mibAt = (b: number, count: number) => ((b * count) / 1024 / 1024).toFixed(1);
const report = [
  `Node ${process.version}, ${n} TrainJob sets (a TrainJob, its JobSet, 3 Jobs; JSON ${textOf(templates.trainJob, 0).length} + ${textOf(templates.jobSet, 0).length} + ${templates.jobs.map((t) => textOf(t, 0).length).reduce((a, b) => a + b, 0)} bytes), companion mode:`,
  '',
  table(
    [
      'shape',
      'caches per set',
      'ratio to whole',
      'of which the TrainJob',
      'gate per key',
      'at 10,000 (caches + gate)',
      'JSON kept per set',
    ],
    results.map((r) => [
      r.label,
      `${kib(r.caches)} KiB`,
      Number.isFinite(whole) ? (r.caches / whole).toFixed(3) : 'not measured',
      `${kib(r.trainJob)} KiB`,
      `${r.gate.toFixed(0)} B`,
      `${mibAt(r.caches + r.gate, 10_000)} MiB`,
      `${r.jsonBytes} B`,
    ]),
  ),
  '',
  `Outside the informers, per key: the runtime memo (runtime-memo.ts, a parsed torchtune runtime snapshot per TrainJob with a JobSet, ${memoKeys} keys): ${knobs.baseRef}'s ${kib(memo.base)} KiB (${mibAt(memo.base, 10_000)} MiB at 10,000), this one's ${kib(memo.head)} KiB (${mibAt(memo.head, 10_000)} MiB).`,
].join('\n');
process.stdout.write(`${report}\n`);
if (knobs.out) await writeFile(knobs.out, `${report}\n`);
