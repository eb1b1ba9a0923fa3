// The shapes the reconciler reads. Objects come from the API server as JSON: only the fields used
// here are typed, everything stays optional, and nothing is assumed to be well formed.

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
  /** A string in JSON; a Date when read through client-node's typed APIs. */
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
    dataset?: { storageUri?: string; env?: EnvVar[] };
    model?: { storageUri?: string; env?: EnvVar[] };
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

export interface RuntimeSpec {
  mlPolicy?: {
    numNodes?: number;
    torch?: { numProcPerNode?: number | string };
    mpi?: { runLauncherAsNode?: boolean; numProcPerNode?: number; mpiImplementation?: string };
    [policy: string]: unknown;
  };
  template?: { metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> }; spec?: JobSetSpec };
  [key: string]: unknown;
}

/** A TrainingRuntime or ClusterTrainingRuntime, reduced to what the reconciler needs. */
export interface Runtime {
  kind: string;
  name: string;
  spec: RuntimeSpec;
}

export interface Job {
  metadata: ObjectMeta;
  spec?: { suspend?: boolean; parallelism?: number };
  status?: { active?: number; terminating?: number };
}

export interface Pod {
  metadata: ObjectMeta;
  status?: { phase?: string };
}

export interface PersistentVolumeClaim {
  metadata: ObjectMeta;
}

export function keyOf(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

export function splitKey(key: string): { namespace: string; name: string } {
  const slash = key.indexOf('/');
  return { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}

/** The controller owner reference of an object, if it has one. */
export function controllerOf(meta: ObjectMeta | undefined): OwnerReference | undefined {
  return meta?.ownerReferences?.find((o) => o.controller === true);
}

export function isDeleting(meta: ObjectMeta | undefined): boolean {
  const t = meta?.deletionTimestamp;
  return t instanceof Date || (typeof t === 'string' && t !== '');
}

/** A non-negative integer field, or undefined when absent or not an integer. */
export function intOf(value: unknown): number | undefined {
  if (typeof value === 'bigint') return Number(value);
  return typeof value === 'number' && Number.isInteger(value) ? value : undefined;
}
