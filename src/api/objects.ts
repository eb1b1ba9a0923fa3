// The shapes of the TrainJob, its JobSet and the objects around them, as the rebuild's judgment and
// the reconciler read them. Objects come from the API server as JSON: only the fields used are
// typed, everything stays optional, and nothing is assumed to be well formed.
import { isObject } from '../json/object.ts';

export type Obj = Record<string, unknown>;

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface ObjectMeta {
  name?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  /** A string in JSON (a Date only from a typed client such as client-node's, which nothing reads through now). */
  creationTimestamp?: string | Date;
  deletionTimestamp?: string | Date;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
  finalizers?: string[];
}

export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: Obj;
}

export interface Container {
  name: string;
  image?: string;
  command?: string[];
  args?: string[];
  env?: EnvVar[];
  ports?: { containerPort: number; protocol?: string; name?: string }[];
  resources?: { limits?: Record<string, string | number>; requests?: Record<string, string | number> };
  volumeMounts?: Obj[];
  [key: string]: unknown;
}

export interface PodSpec {
  containers?: Container[];
  initContainers?: Container[];
  [key: string]: unknown;
}

export interface ReplicatedJob {
  name: string;
  replicas?: number;
  dependsOn?: Obj[];
  template?: {
    metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
    spec?: {
      parallelism?: number;
      completions?: number;
      template?: { metadata?: Obj; spec?: PodSpec };
      [key: string]: unknown;
    };
  };
  [key: string]: unknown;
}

export interface JobSetSpec {
  suspend?: boolean;
  replicatedJobs?: ReplicatedJob[];
  volumeClaimPolicies?: Obj[];
  [key: string]: unknown;
}

export interface JobSet {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec?: JobSetSpec;
  status?: Obj;
}

export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  lastTransitionTime: string;
  observedGeneration?: number;
}

/** A dataset or model initializer's source: its URI, envs, and the Secret its envs come from. */
export interface InitializerSource {
  storageUri?: string;
  env?: EnvVar[];
  secretRef?: { name?: string };
}

export interface TrainJobSpec {
  suspend?: boolean;
  managedBy?: string;
  runtimeRef?: { name?: string; kind?: string; apiGroup?: string };
  trainer?: {
    image?: string;
    command?: string[];
    args?: string[];
    env?: EnvVar[];
    numNodes?: number;
    numProcPerNode?: number | string;
    resourcesPerNode?: Container['resources'];
  };
  initializer?: {
    dataset?: InitializerSource;
    model?: InitializerSource;
  };
  runtimePatches?: { manager?: string; trainingRuntimeSpec?: { template?: { metadata?: Obj; spec?: Obj } } }[];
}

export interface TrainJob {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec?: TrainJobSpec;
  status?: { conditions?: Condition[]; [key: string]: unknown };
}

/** Torch's envInjection target: a replicated job and containers (or init containers) in it. */
export interface EnvInjectionTarget {
  jobName?: string;
  containerNames?: string[];
}

export interface RuntimeSpec {
  mlPolicy?: {
    numNodes?: number;
    torch?: { numProcPerNode?: number | string; envInjection?: { targets?: EnvInjectionTarget[] } };
    mpi?: { runLauncherAsNode?: boolean; numProcPerNode?: number; mpiImplementation?: string };
    [policy: string]: unknown;
  };
  template?: {
    metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
    spec?: JobSetSpec;
  };
  [key: string]: unknown;
}

/** A TrainingRuntime or ClusterTrainingRuntime, reduced to what the reconciler needs. */
export interface Runtime {
  kind: string;
  name: string;
  spec: RuntimeSpec;
}

export interface JobCondition {
  type?: string;
  status?: string;
  reason?: string;
}

export interface Job {
  metadata: ObjectMeta;
  spec?: { suspend?: boolean; parallelism?: number };
  status?: { active?: number; terminating?: number; conditions?: JobCondition[] };
}

export interface Pod {
  metadata: ObjectMeta;
  status?: { phase?: string };
}

export interface PersistentVolumeClaim {
  metadata: ObjectMeta;
}

// Guards for reading objects that may be malformed (see wellformed.ts for whole objects). Absent
// means undefined or null: the API server drops null fields, and `?.`/`??` read both alike.

export function isAbsent(value: unknown): value is undefined | null {
  return value === undefined || value === null;
}

/** Any value as text for a message, never throwing (no bigint JSON, no toString on null-prototype objects). */
export function show(value: unknown): string {
  if (typeof value === 'string') return value;
  try {
    return JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v)) ?? String(value);
  } catch {
    return Object.prototype.toString.call(value);
  }
}

/** metadata.name, when the object has a readable one. */
export function nameOf(object: unknown): string | undefined {
  const meta = isObject(object) ? object.metadata : undefined;
  return isObject(meta) && typeof meta.name === 'string' ? meta.name : undefined;
}

/** `Kind namespace/name` (or `Kind name`) of any object, for messages. */
export function labelOf(kind: string, object: unknown): string {
  const meta = isObject(object) ? object.metadata : undefined;
  const namespace = isObject(meta) && typeof meta.namespace === 'string' && meta.namespace ? `${meta.namespace}/` : '';
  return `${kind} ${namespace}${nameOf(object) ?? '?'}`;
}

/** `ClusterTrainingRuntime name` (or `TrainingRuntime name`), for messages. */
export function runtimeLabel(runtime: unknown): string {
  const { kind, name } = (isObject(runtime) ? runtime : {}) as Partial<Record<'kind' | 'name', unknown>>;
  return `${typeof kind === 'string' ? kind : 'runtime'} ${typeof name === 'string' ? name : '?'}`;
}

/** The controller owner reference of an object, if it has one (entries that are not objects are skipped). */
export function controllerOf(meta: ObjectMeta | undefined): OwnerReference | undefined {
  const owners: unknown = meta?.ownerReferences;
  return Array.isArray(owners)
    ? owners.find((o): o is OwnerReference => isObject(o) && o.controller === true)
    : undefined;
}

/** A deletionTimestamp of any value other than absent or "" counts as deleting: the cautious reading. */
export function isDeleting(meta: unknown): boolean {
  const t: unknown = isObject(meta) ? meta.deletionTimestamp : undefined;
  return !isAbsent(t) && t !== '';
}

/** A non-negative (safe) integer field, or undefined when absent or not one. */
export function intOf(value: unknown): number | undefined {
  const n = typeof value === 'bigint' ? Number(value) : value;
  return typeof n === 'number' && Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}
