// Names the reconciler shares with upstream (Trainer v2.3.0, JobSet v0.12.0) and the few it adds.
export { JOBSET } from '../webhook/jobset-read.ts';

export const TRAINJOB = { group: 'trainer.kubeflow.org', version: 'v1alpha1', plural: 'trainjobs' } as const;
export const TRAINJOB_API_VERSION = 'trainer.kubeflow.org/v1alpha1';
export const JOBSET_API_VERSION = 'jobset.x-k8s.io/v1alpha2';
export const TRAINING_RUNTIME = { group: 'trainer.kubeflow.org', version: 'v1alpha1', plural: 'trainingruntimes' } as const;
export const CLUSTER_TRAINING_RUNTIME = { group: 'trainer.kubeflow.org', version: 'v1alpha1', plural: 'clustertrainingruntimes' } as const;
export const LEASE = { group: 'coordination.k8s.io', version: 'v1', plural: 'leases' } as const;

/** spec.managedBy of TrainJobs that Kubeflow Trainer's controller reconciles (absent = this). */
export const TRAINER_MANAGED_BY = 'trainer.kubeflow.org/trainjob-controller';

/** Trainer's label on the replicated job that runs the trainer (torch/plain: `node`; MPI: `launcher`). */
export const ANCESTOR_LABEL = 'trainer.kubeflow.org/trainjob-ancestor-step';
export const ANCESTOR_TRAINER = 'trainer';
export const NODE = 'node';

/** JobSet's label on its Jobs, pods and volumeClaimPolicies PVCs. */
export const JOBSET_NAME_LABEL = 'jobset.sigs.k8s.io/jobset-name';

/** Trainer's runtime snapshot (KEP-2599): ConfigMap `<trainjob>-runtime-snapshot`, key `runtime`. */
export const RUNTIME_SNAPSHOT_SUFFIX = '-runtime-snapshot';
export const RUNTIME_SNAPSHOT_KEY = 'runtime';

/** Torch env names Trainer injects into the trainer's `node` container. */
export const PET = {
  nnodes: 'PET_NNODES',
  nprocPerNode: 'PET_NPROC_PER_NODE',
  nodeRank: 'PET_NODE_RANK',
  masterAddr: 'PET_MASTER_ADDR',
  masterPort: 'PET_MASTER_PORT',
} as const;
export const TORCH_MASTER_PORT = 29500;
export const JOB_COMPLETION_INDEX_FIELD = "metadata.annotations['batch.kubernetes.io/job-completion-index']";

// What this project adds. The annotation reports on the TrainJob (companion mode); the label and
// annotation mark a workspace PVC kept through a rebuild, so that it can be handed back.
const PREFIX = 'trainjob-webhook.kubeflow.org';
export const REPORT_ANNOTATION = `${PREFIX}/jobset-rebuild`;
export const RETAINED_FOR_LABEL = `${PREFIX}/retained-for`;
export const RELEASED_FROM_ANNOTATION = `${PREFIX}/released-from-jobset`;

export const DEFAULT_FIELD_MANAGER = 'trainjob-webhook-reconciler';
/** The component name on Events and the name of the leader-election Lease. */
export const COMPONENT = 'trainjob-webhook-reconciler';
