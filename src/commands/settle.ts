// `trainjob-webhook settle --kubeconfig FILE [--revert] [--wait SECONDS]`: before an uninstall (or
// a Trainer upgrade that puts the blanket spec.trainer rule back), lists the TrainJobs whose count
// change is not carried out yet (the reconciler's report: Waiting, Rebuilding, Blocked), waits for
// the rebuilds under way, and with --revert sets numNodes back to the count each Blocked (and
// Waiting) job's JobSet was built with, through the API server (a revert is admitted; an MPI
// job's only while its runtime can be read, scale-admission.ts). A running job is suspended in the
// same update (the CRD's rule), then resumed, except under Kueue, which resumes it itself
// (settle-plan.ts revertPlan). Every write tests the resourceVersion read: on a conflict the job is
// read again and judged again, so a user's change meanwhile is never overwritten.
// Exit 0 when nothing is left pending, 1 when something is, 2 on bad input.
import { parse } from 'yaml';
import {
  CLUSTER_TRAINING_RUNTIME,
  JOBSET,
  REPORT_ANNOTATION,
  RUNTIME_SNAPSHOT_KEY,
  RUNTIME_SNAPSHOT_SUFFIX,
  TRAINING_RUNTIME,
  TRAINJOB,
} from '../api/names.ts';
import type { JobSet, Runtime, RuntimeSpec, TrainJob } from '../api/objects.ts';
import type { ApiClient } from '../cluster/api-request.ts';
import { connectCluster } from '../cluster/connect.ts';
import { isObject } from '../json/object.ts';
import { parseFlags } from '../process/flags.ts';
import { mayContinue, revertPlan, settleAction, withWrite, type SettleAction } from '../rebuild/settle-plan.ts';
import type { CommandIo } from './io.ts';

export const SETTLE_FLAGS = {
  kubeconfig: { type: 'string' },
  revert: { type: 'boolean' },
  wait: { type: 'string' },
} as const;

export const SETTLE_USAGE = `Usage: trainjob-webhook settle --kubeconfig FILE [--revert] [--wait SECONDS]

Run before uninstalling (or before an upgrade of Trainer that restores its blanket spec.trainer
rule): lists every TrainJob whose numNodes change is not carried out yet, by the reconciler's
report (Waiting, Rebuilding, Blocked), so that none is left stranded without a reconciler.

  --kubeconfig FILE  the cluster (an identity that may list TrainJobs, get JobSets, runtimes and
                     ConfigMaps, and update TrainJobs)
  --revert           set numNodes back to the count the JobSet was built with, for Blocked and
                     Waiting jobs (admitted by the webhook as a revert; nothing is rebuilt); a
                     running job is suspended in the same update, then resumed (under Kueue,
                     Kueue resumes it), so its pods restart from their last checkpoint
  --wait SECONDS     wait up to this long for the rebuilds under way (default 0: do not wait)

Exit code 0 when nothing is left pending, 1 when something is, 2 on bad input.`;

const MAX_BYTES = 64 * 1024 * 1024;
const POLL_MS = 2_000;

interface Cluster {
  get(path: string): Promise<Record<string, unknown> | undefined>;
  put(path: string, body: unknown): Promise<{ ok: boolean; conflict: boolean; message: string; object?: unknown }>;
}

function clusterOf(api: ApiClient): Cluster {
  const call = async (path: string, method: 'GET' | 'PUT', body?: unknown) => {
    const res = await api.request(path, { method, body, signal: AbortSignal.timeout(30_000), maxBytes: MAX_BYTES });
    return { status: res.status, text: res.body.toString('utf8') };
  };
  return {
    async get(path) {
      const res = await call(path, 'GET');
      if (res.status === 404) return undefined;
      if (res.status !== 200) throw new Error(`GET ${path}: HTTP ${res.status}: ${res.text.slice(0, 300)}`);
      const value: unknown = JSON.parse(res.text);
      if (!isObject(value)) throw new Error(`GET ${path}: the answer is not an object`);
      return value;
    },
    async put(path, body) {
      const res = await call(path, 'PUT', body);
      const parsed = (() => {
        try {
          return JSON.parse(res.text) as { message?: string };
        } catch {
          return { message: res.text.slice(0, 300) };
        }
      })();
      const message = res.status === 200 ? '' : parsed.message;
      return {
        ok: res.status === 200,
        conflict: res.status === 409,
        message: `HTTP ${res.status}${message ? `: ${message}` : ''}`,
        object: res.status === 200 ? parsed : undefined,
      };
    },
  };
}

const apis = (r: { group: string; version: string; plural: string }) => `/apis/${r.group}/${r.version}`;
const seg = encodeURIComponent;

async function listTrainJobs(c: Cluster): Promise<TrainJob[]> {
  const items: TrainJob[] = [];
  let cont = '';
  do {
    const page = await c.get(`${apis(TRAINJOB)}/${TRAINJOB.plural}?limit=500${cont ? `&continue=${seg(cont)}` : ''}`);
    items.push(...((Array.isArray(page?.items) ? page.items : []) as TrainJob[]));
    const meta = isObject(page?.metadata) ? page.metadata : {};
    cont = typeof meta.continue === 'string' ? meta.continue : '';
  } while (cont);
  return items;
}

/** Trainer's runtime for the job: its snapshot ConfigMap first (what Trainer builds from), then runtimeRef. */
// eslint-disable-next-line complexity -- Trainer's lookup: the snapshot, then runtimeRef's kind
async function readRuntime(c: Cluster, tj: TrainJob): Promise<Runtime | undefined> {
  const ns = tj.metadata.namespace ?? '';
  const name = tj.metadata.name ?? '';
  const snapshot = await c.get(`/api/v1/namespaces/${seg(ns)}/configmaps/${seg(`${name}${RUNTIME_SNAPSHOT_SUFFIX}`)}`);
  const text = isObject(snapshot?.data) ? snapshot.data[RUNTIME_SNAPSHOT_KEY] : undefined;
  if (typeof text === 'string') {
    const doc = parse(text) as { kind?: string; metadata?: { name?: string }; spec?: RuntimeSpec } | null;
    if (doc?.spec)
      return { kind: doc.kind ?? 'ClusterTrainingRuntime', name: doc.metadata?.name ?? '', spec: doc.spec };
  }
  const ref = tj.spec?.runtimeRef ?? {};
  if (!ref.name) return undefined;
  const runtime =
    ref.kind === 'TrainingRuntime'
      ? await c.get(`${apis(TRAINING_RUNTIME)}/namespaces/${seg(ns)}/${TRAINING_RUNTIME.plural}/${seg(ref.name)}`)
      : await c.get(`${apis(CLUSTER_TRAINING_RUNTIME)}/${CLUSTER_TRAINING_RUNTIME.plural}/${seg(ref.name)}`);
  return isObject(runtime?.spec)
    ? { kind: ref.kind ?? 'ClusterTrainingRuntime', name: ref.name, spec: runtime.spec as RuntimeSpec }
    : undefined;
}

const trainJobPath = (tj: TrainJob) =>
  `${apis(TRAINJOB)}/namespaces/${seg(tj.metadata.namespace ?? '')}/${TRAINJOB.plural}/${seg(tj.metadata.name ?? '')}`;

async function judge(c: Cluster, tj: TrainJob, revertWaiting: boolean): Promise<SettleAction> {
  const jobSet = (await c.get(
    `${apis(JOBSET)}/namespaces/${seg(tj.metadata.namespace ?? '')}/${JOBSET.plural}/${seg(tj.metadata.name ?? '')}`,
  )) as JobSet | undefined;
  const runtime = await readRuntime(c, tj).catch(() => undefined);
  return settleAction({ trainJob: tj, jobSet, runtime, revertWaiting });
}

const CONFLICT_TRIES = 3;

/**
 * The revert's writes (revertPlan), each a whole-object PUT with the resourceVersion last read or
 * written. A conflict on the first re-reads and re-judges the job (a user may have changed it);
 * on a later one (the resume) it goes on only while the job's spec is still what the first wrote.
 */
async function revert(
  c: Cluster,
  first: TrainJob,
  firstAction: Extract<SettleAction, { kind: 'revert' }>,
  io: CommandIo,
): Promise<{ ok: boolean; text: string }> {
  let tj = first;
  let action: SettleAction = firstAction;
  for (let attempt = 1; ; attempt++) {
    if (action.kind !== 'revert')
      return {
        ok: action.kind === 'settled',
        text: `changed meanwhile, not reverted: ${action.kind === 'settled' ? 'nothing pending now' : action.why}`,
      };
    const plan = revertPlan(tj, action.numNodes);
    const [head, ...rest] = plan.writes;
    const out = await c.put(trainJobPath(tj), withWrite(tj, head!));
    if (out.conflict && attempt < CONFLICT_TRIES) {
      const again = (await c.get(trainJobPath(tj))) as TrainJob | undefined;
      if (!again) return { ok: true, text: 'deleted meanwhile' };
      io.err(`${tj.metadata.namespace}/${tj.metadata.name}: changed meanwhile (HTTP 409); read and judged again`);
      tj = again;
      action = await judge(c, tj, true);
      continue;
    }
    const what = `numNodes ${action.numNodes}${head!.suspend ? ' (suspended in the same update)' : ''}`;
    if (!out.ok) return { ok: false, text: `revert to ${what} refused (${out.message}) (${action.why})` };
    let written = out.object as TrainJob;
    for (const write of rest) {
      const done = await writeOn(c, written, write);
      if (!done.ok)
        return {
          ok: false,
          text: done.changed
            ? `reverted to ${what}, then changed by someone else before the resume: left as they made it`
            : `reverted to ${what}, but the resume was refused (${done.message}): it is left suspended; resume it yourself (kubectl patch trainjob ${tj.metadata.name} -n ${tj.metadata.namespace} --type=merge -p '{"spec":{"suspend":false}}')`,
        };
      written = done.object;
    }
    return { ok: true, text: `reverted to numNodes ${action.numNodes}; ${plan.after} (${action.why})` };
  }
}

/** A later write of a plan (the resume): retried on a conflict while the job's spec is still the one written. */
async function writeOn(
  c: Cluster,
  written: TrainJob,
  write: Parameters<typeof withWrite>[1],
): Promise<{ ok: true; object: TrainJob } | { ok: false; changed?: true; message: string }> {
  let base = written;
  for (let attempt = 1; ; attempt++) {
    const out = await c.put(trainJobPath(base), withWrite(base, write));
    if (out.ok) return { ok: true, object: out.object as TrainJob };
    if (!out.conflict || attempt >= CONFLICT_TRIES) return { ok: false, message: out.message };
    const again = (await c.get(trainJobPath(base))) as TrainJob | undefined;
    if (!again || !mayContinue(again, written)) return { ok: false, changed: true, message: 'changed meanwhile' };
    base = again;
  }
}

function parseWait(raw: string | undefined): number {
  if (raw === undefined) return 0;
  if (!/^\d+$/.test(raw) || Number(raw) > 86_400)
    throw new Error(`--wait must be whole seconds from 0 to 86400, got "${raw}"`);
  return Number(raw);
}

// eslint-disable-next-line complexity -- the command top to bottom: flags, connect, list, act, wait, exit code
export async function settleCommand(args: string[], io: CommandIo): Promise<number> {
  let values: { kubeconfig?: string; revert?: boolean; wait?: string };
  let waitS: number;
  try {
    values = parseFlags(args, SETTLE_FLAGS);
    waitS = parseWait(values.wait);
    if (!values.kubeconfig) throw new Error('--kubeconfig is required');
  } catch (err) {
    io.err(`settle: ${(err as Error).message}\n\n${SETTLE_USAGE}`);
    return 2;
  }
  let c: Cluster;
  try {
    const connection = await connectCluster({ mode: 'kubeconfig', path: values.kubeconfig });
    if (!connection) throw new Error('no cluster');
    c = clusterOf(connection.client);
  } catch (err) {
    io.err(`settle: ${(err as Error).message.split('\n')[0]}`);
    return 2;
  }
  const deadline = Date.now() + waitS * 1000;
  const reverted = new Set<string>();
  for (;;) {
    const pending = (await listTrainJobs(c)).filter((t) => t.metadata?.annotations?.[REPORT_ANNOTATION]);
    let waiting = 0;
    let left = 0;
    for (const tj of pending) {
      const key = `${tj.metadata.namespace}/${tj.metadata.name}`;
      const action = await judge(c, tj, values.revert === true);
      if (action.kind === 'settled') continue;
      if (action.kind === 'revert' && values.revert && !reverted.has(key)) {
        const out = await revert(c, tj, action, io);
        io.out(`${key}: ${out.text}`);
        if (out.ok) reverted.add(key);
        else left++;
        continue;
      }
      if (action.kind === 'wait') waiting++;
      else left++;
      const what =
        action.kind === 'revert' ? `not rebuilt; --revert sets numNodes back to ${action.numNodes}` : action.why;
      io.out(`${key}: ${action.kind === 'wait' ? 'rebuilding' : 'needs a person'}: ${what}`);
    }
    if (waiting === 0 || Date.now() >= deadline) {
      io.out(
        waiting + left === 0
          ? 'settled: no TrainJob has a count change that is not carried out'
          : `not settled: ${waiting} rebuilding, ${left} needing a person; do not uninstall yet`,
      );
      return waiting + left === 0 ? 0 : 1;
    }
    io.out(
      `waiting for ${waiting} rebuild${waiting === 1 ? '' : 's'} (up to ${Math.ceil((deadline - Date.now()) / 1000)} s more)`,
    );
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}
