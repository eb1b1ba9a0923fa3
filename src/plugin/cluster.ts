// The plugin's reads and writes, with the user's own credentials (kubeconfig, --context,
// impersonation and proxy through src/cluster/): the TrainJob, its JobSet, pods, runtime and Kueue
// Workloads, SelfSubjectAccessReviews, and the TrainJob's writes with the API server's warnings: a
// JSON merge patch of only the fields changed, with the resourceVersion read (optimistic
// concurrency as an update has it, without writing back the whole object as JSON.parse read it,
// which rounds an int64 beyond 2^53). A refusal is an ApiRefusal carrying the Status.
import {
  CLUSTER_TRAINING_RUNTIME,
  JOBSET,
  JOBSET_NAME_LABEL,
  RUNTIME_SNAPSHOT_KEY,
  RUNTIME_SNAPSHOT_SUFFIX,
  TRAINING_RUNTIME,
  TRAINJOB,
} from '../api/names.ts';
import { isDeleting, type JobSet, type Runtime, type RuntimeSpec, type TrainJob } from '../api/objects.ts';
import { withQuery } from '../cluster/api-json.ts';
import type { ApiClient } from '../cluster/api-request.ts';
import { connectMerged } from '../cluster/connect.ts';
import type { MergedKubeconfig } from '../cluster/merged-kubeconfig.ts';
import { CORE, resourcePath } from '../cluster/resource-path.ts';
import { isObject } from '../json/object.ts';
import { statusOf, type ApiStatus } from './kubectl-error.ts';
import type { TrainJobPatch } from './progress.ts';
import { isWorkloadOf, KUEUE_QUEUE_LABEL, podView, workloadView, type KueueView, type Observed } from './observed.ts';

export const WORKLOADS = { group: 'kueue.x-k8s.io', version: 'v1beta2', plural: 'workloads' } as const;
const MAX_BYTES = 64 * 1024 * 1024;
const CALL_MS = 30_000;

export class ApiRefusal extends Error {
  override name = 'ApiRefusal';
  readonly status: ApiStatus;
  constructor(status: ApiStatus) {
    super(status.message);
    this.status = status;
  }
}

export interface Right {
  verb: string;
  group: string;
  resource: string;
  namespace: string;
}
export const showRight = (r: Right) =>
  `${r.verb} ${r.resource}${r.group ? `.${r.group}` : ''} in namespace ${r.namespace}`;

/** The warnings of an answer (RFC 7234 `299 - "text"`), as kubectl prints them. */
function warningsOf(headers: Record<string, string | string[] | undefined> | undefined): string[] {
  const raw = headers?.warning;
  const all = Array.isArray(raw) ? raw : raw ? [raw] : [];
  return all.flatMap((h) => [...h.matchAll(/\d{3} \S+ "((?:[^"\\]|\\.)*)"/g)].map((m) => m[1].replace(/\\(.)/g, '$1')));
}

export interface Cluster {
  namespace: string;
  /** The TrainJob; not found is an ApiRefusal (404), shown as kubectl shows it. */
  getTrainJob(name: string): Promise<TrainJob>;
  listTrainJobs(): Promise<TrainJob[]>;
  /** A merge patch of the TrainJob (progress.ts's changePatch), dry run or not: the API server's warnings. */
  patchTrainJob(name: string, patch: TrainJobPatch, dryRun?: boolean): Promise<{ warnings: string[] }>;
  /** Kueue's pause: spec.active false on a Workload (true again ends it). */
  setWorkloadActive(name: string, active: boolean): Promise<void>;
  observe(tj: TrainJob, runtimes?: Map<string, Runtime | undefined>): Promise<Observed>;
  allowed(right: Right): Promise<boolean>;
}

/** `merged`: kubeconfig.ts's pluginKubeconfig, the kubeconfig kubectl would read, already read. */
export async function connect(
  merged: MergedKubeconfig,
  context: string | undefined,
  namespace: string,
): Promise<Cluster> {
  return clusterOf((await connectMerged(merged, context)).client, namespace);
}

// eslint-disable-next-line max-lines-per-function -- the calls share one request helper
export function clusterOf(api: ApiClient, namespace: string): Cluster {
  const call = async (method: 'GET' | 'POST' | 'PATCH', path: string, body?: unknown, contentType?: string) => {
    const res = await api.request(path, {
      method,
      body,
      ...(contentType ? { contentType } : {}),
      signal: AbortSignal.timeout(CALL_MS),
      maxBytes: MAX_BYTES,
    });
    const text = res.body.toString('utf8');
    if (res.status < 200 || res.status > 299) throw new ApiRefusal(statusOf(res.status, text));
    return { value: JSON.parse(text) as unknown, warnings: warningsOf(res.headers) };
  };
  const get = async (path: string) => (await call('GET', path)).value;
  const optional = async (path: string): Promise<unknown> => {
    try {
      return await get(path);
    } catch (err) {
      if (err instanceof ApiRefusal && (err.status.code === 404 || err.status.code === 403)) return undefined;
      throw err;
    }
  };
  const items = (v: unknown): unknown[] => (isObject(v) && Array.isArray(v.items) ? v.items : []);
  const tjPath = (name: string) => resourcePath(TRAINJOB, { namespace, name });

  // eslint-disable-next-line complexity -- Trainer's lookup: the snapshot, then runtimeRef's kind
  const readRuntime = async (tj: TrainJob): Promise<Runtime | undefined> => {
    const snapshot = await optional(
      resourcePath(CORE.configMaps, { namespace, name: `${tj.metadata.name}${RUNTIME_SNAPSHOT_SUFFIX}` }),
    );
    const text = isObject(snapshot) && isObject(snapshot.data) ? snapshot.data[RUNTIME_SNAPSHOT_KEY] : undefined;
    if (typeof text === 'string') {
      const { parse } = await import('yaml');
      const doc = parse(text) as { kind?: string; metadata?: { name?: string }; spec?: RuntimeSpec } | null;
      if (doc?.spec)
        return { kind: doc.kind ?? 'ClusterTrainingRuntime', name: doc.metadata?.name ?? '', spec: doc.spec };
    }
    const ref = tj.spec?.runtimeRef ?? {};
    if (!ref.name) return undefined;
    const runtime = await optional(
      ref.kind === 'TrainingRuntime'
        ? resourcePath(TRAINING_RUNTIME, { namespace, name: ref.name })
        : resourcePath(CLUSTER_TRAINING_RUNTIME, { name: ref.name }),
    );
    return isObject(runtime) && isObject(runtime.spec)
      ? { kind: ref.kind ?? 'ClusterTrainingRuntime', name: ref.name, spec: runtime.spec as RuntimeSpec }
      : undefined;
  };

  const kueueOf = async (tj: TrainJob): Promise<KueueView | undefined> => {
    const queue = tj.metadata.labels?.[KUEUE_QUEUE_LABEL];
    if (!queue) return undefined;
    try {
      const list = await get(resourcePath(WORKLOADS, { namespace }));
      return {
        queue,
        // A Workload Kueue deleted (a count it no longer matches) lingers on its finalizer: not the job's.
        workloads: items(list)
          .filter((w) => isWorkloadOf(w, tj) && !(isObject(w) && isObject(w.metadata) && isDeleting(w.metadata)))
          .map(workloadView),
      };
    } catch (err) {
      if (!(err instanceof ApiRefusal)) throw err;
      return { queue, workloads: { unreadable: `HTTP ${err.status.code}: ${err.status.message.slice(0, 200)}` } };
    }
  };

  return {
    namespace,
    getTrainJob: async (name) => (await get(tjPath(name))) as TrainJob,
    listTrainJobs: async () => items(await get(resourcePath(TRAINJOB, { namespace }))) as TrainJob[],
    async patchTrainJob(name, patch, dryRun) {
      const out = await call(
        'PATCH',
        withQuery(tjPath(name), { dryRun: dryRun ? 'All' : undefined }),
        patch,
        'application/merge-patch+json',
      );
      return { warnings: out.warnings };
    },
    async setWorkloadActive(name, active) {
      await call(
        'PATCH',
        resourcePath(WORKLOADS, { namespace, name }),
        { spec: { active } },
        'application/merge-patch+json',
      );
    },
    async observe(tj, runtimes) {
      const name = tj.metadata.name ?? '';
      const key = `${tj.spec?.runtimeRef?.kind ?? ''}/${tj.spec?.runtimeRef?.name ?? ''}`;
      const runtime = runtimes?.has(key) ? runtimes.get(key) : await readRuntime(tj);
      runtimes?.set(key, runtime);
      const [jobSet, pods, kueue] = await Promise.all([
        optional(resourcePath(JOBSET, { namespace, name })),
        get(withQuery(resourcePath(CORE.pods, { namespace }), { labelSelector: `${JOBSET_NAME_LABEL}=${name}` })),
        kueueOf(tj),
      ]);
      return {
        trainJob: tj,
        ...(jobSet ? { jobSet: jobSet as JobSet } : {}),
        pods: items(pods).map(podView),
        ...(kueue ? { kueue } : {}),
        ...(runtime ? { runtime } : {}),
      };
    },
    async allowed(right) {
      const review = await call('POST', '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SelfSubjectAccessReview',
        spec: { resourceAttributes: right },
      });
      const status = isObject(review.value) && isObject(review.value.status) ? review.value.status : {};
      return status.allowed === true;
    },
  };
}
