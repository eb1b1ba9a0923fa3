// The reconciler's I/O edge: every read and write it makes against the API server, behind one
// interface (so the orchestrator can be tested without a cluster). Writes are SSA applies under
// the reconciler's field manager, JSON patches that test a resourceVersion, and deletes with
// uid/resourceVersion preconditions, all as raw JSON through the project's request layer
// (src/cluster/api-json.ts: client-go's rules, a bounded keep-alive pool).
import { jsonApi, withQuery, type JsonApi } from '../cluster/api-json.ts';
import type { ApiClient } from '../cluster/api-request.ts';
import { listAll } from '../cluster/list-pages.ts';
import { CORE, resourcePath, type Resource } from '../cluster/resource-path.ts';
import { orUndefinedIfNotFound, refusalMessage, statusCode } from '../cluster/errors.ts';
import {
  CLUSTER_TRAINING_RUNTIME,
  COSCHEDULING_POD_GROUP,
  REFUSAL_SEEN_ANNOTATION,
  VOLCANO_POD_GROUP,
  JOBSET,
  JOBSET_NAME_LABEL,
  RETAINED_FOR_LABEL,
  RUNTIME_SNAPSHOT_KEY,
  RUNTIME_SNAPSHOT_SUFFIX,
  TRAINING_RUNTIME,
  TRAINJOB,
  TRAINJOB_API_VERSION,
  TRAINJOB_GROUP,
  TRAINJOB_KIND,
} from '../api/names.ts';
import { initializerObjects, type InitializerObjects } from './initializer-objects.ts';
import { COMPONENT } from './names.ts';
import type { RecreateCheck, RuntimeRead } from '../rebuild/decision.ts';
import {
  controllerOf,
  type Condition,
  type Job,
  type JobSet,
  type PersistentVolumeClaim,
  type Pod,
  type RuntimeSpec,
  type TrainJob,
} from '../api/objects.ts';
import type { GangScheduler, PodGroup } from '../rebuild/podgroup.ts';
import type { PvcPatch } from '../rebuild/pvc-plan.ts';
import { reportApplyConfiguration, type EventSpec, type RebuildReport } from '../rebuild/report.ts';
import { statusApplyConfiguration } from '../rebuild/status.ts';
import {
  refusalsFromEvents,
  TRAINER_EVENT_REPORTER,
  TRAINER_REFUSAL_REASON,
  type TrainerRefusal,
} from '../rebuild/refused-apply.ts';
import type { JobStatus } from '../rebuild/terminal-status.ts';

export interface ReconcilerCluster {
  getTrainJob(namespace: string, name: string): Promise<TrainJob | undefined>;
  getJobSet(namespace: string, name: string): Promise<JobSet | undefined>;
  readRuntime(trainJob: TrainJob): Promise<RuntimeRead>;
  listChildren(namespace: string, jobSetName: string): Promise<{ jobs: Job[]; pods: Pod[] }>;
  listPvcs(namespace: string): Promise<PersistentVolumeClaim[]>;
  listRetainedPvcs(namespace: string, trainJobUid: string): Promise<PersistentVolumeClaim[]>;
  patchPvc(namespace: string, patch: PvcPatch): Promise<PersistentVolumeClaim>;
  deleteJobSet(namespace: string, name: string, uid: string, resourceVersion: string): Promise<void>;
  /** Sets only `spec.suspend` to true, testing uid and resourceVersion (not an apply of the JobSet). */
  /** spec.suspend alone, uid and resourceVersion tested (the sidecar's suspend, and its undoing). */
  setJobSetSuspend(
    namespace: string,
    name: string,
    uid: string,
    resourceVersion: string,
    suspend: boolean,
  ): Promise<void>;
  /** A server-side dry-run create of the same JobSet: would it be admitted again (RecreateCheck)? */
  dryRunRecreate(jobSet: JobSet): Promise<RecreateCheck>;
  /** The scheduler's PodGroup of that name; undefined when absent or when its CRD is not installed (both 404). */
  getPodGroup(scheduler: GangScheduler, namespace: string, name: string): Promise<PodGroup | undefined>;
  deletePodGroup(
    scheduler: GangScheduler,
    namespace: string,
    name: string,
    uid: string,
    resourceVersion: string,
  ): Promise<void>;
  applyJobSet(jobSet: JobSet): Promise<JobSet>;
  applyTrainJobStatus(trainJob: TrainJob, conditions: Condition[], jobsStatus?: JobStatus[]): Promise<void>;
  applyReport(trainJob: TrainJob, report: RebuildReport | undefined): Promise<void>;
  /** The fold of Trainer's refusals last answered (refused-apply.ts; undefined removes it), resourceVersion tested. */
  recordRefusalFold(trainJob: TrainJob, fold: string | undefined): Promise<void>;
  recordEvent(trainJob: TrainJob, event: EventSpec): Promise<void>;
  /** Trainer's Events on the TrainJob that say its apply failed (refused-apply.ts), malformed ones skipped. */
  listTrainerRefusals(namespace: string, trainJobUid: string): Promise<TrainerRefusal[]>;
  /** The initializer objects of these that exist (initializer-objects.ts). */
  getInitializerObjects: InitializerObjects['get'];
  deleteInitializerObject: InitializerObjects['delete'];
}

export interface ClusterOptions {
  fieldManager: string;
  /** Names this replica on its Events (reportingInstance). */
  identity: string;
}

const POD_GROUPS = { coscheduling: COSCHEDULING_POD_GROUP, volcano: VOLCANO_POD_GROUP } as const;

/** Event messages are capped like the API server's (1 KiB). */
function cap(message: string): string {
  return message.length <= 1024 ? message : `${message.slice(0, 1020)} ...`;
}

const at = (r: Resource, namespace: string, name?: string, subresource?: string) =>
  resourcePath(r, { namespace, ...(name !== undefined ? { name } : {}), ...(subresource ? { subresource } : {}) });

const items = async <T>(client: ApiClient, path: string, query: { labelSelector?: string; fieldSelector?: string }) =>
  (await listAll(client, path, query)).items as T[];

/** The runtime Trainer builds from: its KEP-2599 snapshot of this TrainJob, else what runtimeRef names. */
// eslint-disable-next-line complexity -- Trainer's lookup: the KEP-2599 snapshot, then runtimeRef's kind
async function readRuntime(api: JsonApi, trainJob: TrainJob): Promise<RuntimeRead> {
  const namespace = trainJob.metadata.namespace ?? '';
  const name = trainJob.metadata.name ?? '';
  const snapshot = (await orUndefinedIfNotFound(
    api.get(at(CORE.configMaps, namespace, `${name}${RUNTIME_SNAPSHOT_SUFFIX}`)),
  )) as { metadata?: TrainJob['metadata']; data?: Record<string, string> } | undefined;
  const owner = controllerOf(snapshot?.metadata);
  const text = snapshot?.data?.[RUNTIME_SNAPSHOT_KEY];
  if (text && owner?.uid === trainJob.metadata.uid) {
    // yaml only here (a Trainer that writes runtime snapshots): an in-cluster reconciler reads no other YAML.
    const { parse } = await import('yaml');
    const doc = parse(text) as { kind?: string; metadata?: { name?: string }; spec?: RuntimeSpec };
    if (doc?.spec)
      return {
        found: true,
        snapshot: true,
        runtime: { kind: doc.kind ?? 'ClusterTrainingRuntime', name: doc.metadata?.name ?? '', spec: doc.spec },
      };
  }
  const ref = trainJob.spec?.runtimeRef ?? {};
  const kind = ref.kind ?? 'ClusterTrainingRuntime';
  if ((ref.apiGroup ?? TRAINJOB_GROUP) !== TRAINJOB_GROUP || !ref.name) {
    return { found: false, reason: `spec.runtimeRef ${JSON.stringify(ref)} does not name a Trainer runtime` };
  }
  const runtime = (await orUndefinedIfNotFound(
    api.get(
      kind === 'TrainingRuntime'
        ? at(TRAINING_RUNTIME, namespace, ref.name)
        : resourcePath(CLUSTER_TRAINING_RUNTIME, { name: ref.name }),
    ),
  )) as { spec?: RuntimeSpec } | undefined;
  if (!runtime?.spec) return { found: false, reason: `${kind} ${ref.name} not found` };
  return { found: true, runtime: { kind, name: ref.name, spec: runtime.spec } };
}

/** A server-side dry-run create of the JobSet as given: would it be admitted again? */
async function dryRunCreate(api: JsonApi, jobSet: JobSet): Promise<RecreateCheck> {
  const { name, namespace = '', labels, annotations, ownerReferences } = jobSet.metadata;
  const body = {
    apiVersion: jobSet.apiVersion,
    kind: jobSet.kind,
    metadata: { name, namespace, labels, annotations, ownerReferences },
    spec: jobSet.spec,
  };
  try {
    await api.post(withQuery(at(JOBSET, namespace), { dryRun: 'All' }), body);
    return { admitted: true };
  } catch (err) {
    const code = statusCode(err);
    // Admission runs before the existence check: AlreadyExists means it was admitted.
    if (code === 409) return { admitted: true };
    if (code === 400 || code === 403 || code === 422) return { admitted: false, reason: refusalMessage(err) };
    throw err;
  }
}

/** An Event on the TrainJob (core v1, as the API server's 1 KiB cap on its message). */
function eventBody(trainJob: TrainJob, event: EventSpec, identity: string) {
  const { namespace = '', name = '' } = trainJob.metadata;
  const now = new Date().toISOString();
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { generateName: `${name}.`, namespace },
    involvedObject: {
      apiVersion: trainJob.apiVersion ?? TRAINJOB_API_VERSION,
      kind: TRAINJOB_KIND,
      name,
      namespace,
      uid: trainJob.metadata.uid,
      resourceVersion: trainJob.metadata.resourceVersion,
    },
    type: event.type,
    reason: event.reason,
    message: cap(event.message),
    source: { component: COMPONENT },
    reportingComponent: COMPONENT,
    reportingInstance: identity.slice(0, 128),
    firstTimestamp: now,
    lastTimestamp: now,
    count: 1,
  };
}

// eslint-disable-next-line max-lines-per-function -- one method per cluster call, over one JSON API
export function createReconcilerCluster(client: ApiClient, opts: ClusterOptions): ReconcilerCluster {
  const api = jsonApi(client);
  const { fieldManager } = opts;
  const initializers = initializerObjects(api);
  const managed = { fieldManager };
  const forced = { fieldManager, force: true };
  const trainJobAt = (t: TrainJob, subresource?: string) =>
    at(TRAINJOB, t.metadata.namespace ?? '', t.metadata.name ?? '', subresource);

  return {
    getTrainJob: (namespace, name) =>
      orUndefinedIfNotFound(api.get(at(TRAINJOB, namespace, name))) as Promise<TrainJob | undefined>,
    getJobSet: (namespace, name) =>
      orUndefinedIfNotFound(api.get(at(JOBSET, namespace, name))) as Promise<JobSet | undefined>,
    readRuntime: (trainJob) => readRuntime(api, trainJob),
    getInitializerObjects: initializers.get,
    deleteInitializerObject: initializers.delete,

    async listChildren(namespace, jobSetName) {
      const labelSelector = `${JOBSET_NAME_LABEL}=${jobSetName}`;
      const [jobs, pods] = await Promise.all([
        items<Job>(client, at(CORE.jobs, namespace), { labelSelector }),
        items<Pod>(client, at(CORE.pods, namespace), { labelSelector }),
      ]);
      return { jobs, pods };
    },

    listPvcs: (namespace) => items<PersistentVolumeClaim>(client, at(CORE.pvcs, namespace), {}),

    listRetainedPvcs: (namespace, trainJobUid) =>
      items<PersistentVolumeClaim>(client, at(CORE.pvcs, namespace), {
        labelSelector: `${RETAINED_FOR_LABEL}=${trainJobUid}`,
      }),

    async patchPvc(namespace, patch) {
      return (await api.jsonPatch(
        withQuery(at(CORE.pvcs, namespace, patch.name), managed),
        patch.ops,
      )) as PersistentVolumeClaim;
    },

    async deleteJobSet(namespace, name, uid, resourceVersion) {
      await api.delete(at(JOBSET, namespace, name), {
        propagationPolicy: 'Foreground',
        preconditions: { uid, resourceVersion },
      });
    },

    async setJobSetSuspend(namespace, name, uid, resourceVersion, suspend) {
      // A JSON patch that changes spec.suspend alone (JobSet's webhook allows it, while the whole
      // JobSet Trainer applies is refused), under this reconciler's field manager; the tests make
      // it fail (and the key be retried from a fresh read) if the JobSet was replaced or changed.
      // Companion mode still never applies a JobSet: Trainer keeps ownership of everything else,
      // and takes spec.suspend back with its forced apply on resume.
      const ops = [
        { op: 'test', path: '/metadata/uid', value: uid },
        { op: 'test', path: '/metadata/resourceVersion', value: resourceVersion },
        { op: 'add', path: '/spec/suspend', value: suspend },
      ];
      await api.jsonPatch(withQuery(at(JOBSET, namespace, name), managed), ops);
    },

    dryRunRecreate: (jobSet) => dryRunCreate(api, jobSet),

    getPodGroup: (scheduler, namespace, name) =>
      orUndefinedIfNotFound(api.get(at(POD_GROUPS[scheduler], namespace, name))) as Promise<PodGroup | undefined>,

    async deletePodGroup(scheduler, namespace, name, uid, resourceVersion) {
      await api.delete(at(POD_GROUPS[scheduler], namespace, name), { preconditions: { uid, resourceVersion } });
    },

    async applyJobSet(jobSet) {
      const path = at(JOBSET, jobSet.metadata.namespace ?? '', jobSet.metadata.name ?? '');
      return (await api.apply(path, jobSet, forced)) as JobSet;
    },

    async applyTrainJobStatus(trainJob, conditions, jobsStatus) {
      await api.apply(
        trainJobAt(trainJob, 'status'),
        statusApplyConfiguration(trainJob, conditions, jobsStatus),
        forced,
      );
    },

    async applyReport(trainJob, report) {
      await api.apply(trainJobAt(trainJob), reportApplyConfiguration(trainJob, report), forced);
    },

    async recordRefusalFold(trainJob, fold) {
      // A merge patch (an Update entry of this field manager, which the report's apply leaves
      // alone); its resourceVersion makes it fail (and the key be retried from a fresh read) when
      // the TrainJob changed since it was judged: that change is what Trainer's next refusal regards.
      const { resourceVersion } = trainJob.metadata;
      const body = { metadata: { resourceVersion, annotations: { [REFUSAL_SEEN_ANNOTATION]: fold ?? null } } };
      await api.mergePatch(withQuery(trainJobAt(trainJob), managed), body);
    },

    async listTrainerRefusals(namespace, trainJobUid) {
      // Trainer records them through events.k8s.io; the core view holds the same objects, and its
      // field selectors name the TrainJob (regarding), the reason and the reporting controller
      // (Trainer's recorder, pkg/controller/setup.go:44 in v2.2.1, v2.3.0 and main), so that an
      // Event anyone else wrote cannot set off a rebuild.
      const fieldSelector = `involvedObject.uid=${trainJobUid},reason=${TRAINER_REFUSAL_REASON},reportingComponent=${TRAINER_EVENT_REPORTER}`;
      return refusalsFromEvents(await items<unknown>(client, at(CORE.events, namespace), { fieldSelector }));
    },

    async recordEvent(trainJob, event) {
      const namespace = trainJob.metadata.namespace ?? '';
      await api.post(at(CORE.events, namespace), eventBody(trainJob, event, opts.identity));
    },
  };
}
