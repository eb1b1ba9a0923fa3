// The names this project shares with upstream (Trainer v2.3.0, JobSet v0.12.0: groups, kinds,
// the CRD, labels, annotations) and the few it adds, as JobSet keeps pkg/constants: the webhook,
// the rebuild's judgment and the reconciler read them from here. Nothing here imports anything.

export const TRAINJOB_GROUP = 'trainer.kubeflow.org';
export const TRAINJOB_VERSION = 'v1alpha1';
export const TRAINJOB_KIND = 'TrainJob';
export const TRAINJOB_API_VERSION = `${TRAINJOB_GROUP}/${TRAINJOB_VERSION}`;
/** The TrainJob CRD's name. */
export const TRAINJOB_CRD = `trainjobs.${TRAINJOB_GROUP}`;
export const TRAINJOB = { group: TRAINJOB_GROUP, version: TRAINJOB_VERSION, plural: 'trainjobs' } as const;
export const TRAINING_RUNTIME = {
  group: TRAINJOB_GROUP,
  version: TRAINJOB_VERSION,
  plural: 'trainingruntimes',
} as const;
export const CLUSTER_TRAINING_RUNTIME = {
  group: TRAINJOB_GROUP,
  version: TRAINJOB_VERSION,
  plural: 'clustertrainingruntimes',
} as const;

export const JOBSET = { group: 'jobset.x-k8s.io', version: 'v1alpha2', plural: 'jobsets' } as const;
export const JOBSET_API_VERSION = `${JOBSET.group}/${JOBSET.version}`;

/** spec.managedBy of TrainJobs that Kubeflow Trainer's controller reconciles (absent = this). */
export const TRAINER_MANAGED_BY = `${TRAINJOB_GROUP}/trainjob-controller`;

/** Trainer's label on the replicated job that runs the trainer (torch/plain: `node`; MPI: `launcher`). */
export const ANCESTOR_LABEL = `${TRAINJOB_GROUP}/trainjob-ancestor-step`;
export const ANCESTOR_TRAINER = 'trainer';
export const NODE = 'node';

/** JobSet's label on its Jobs, pods and volumeClaimPolicies PVCs. */
export const JOBSET_NAME_LABEL = 'jobset.sigs.k8s.io/jobset-name';
/** JobSet's label on the Jobs and pods of one replicated job: its name. */
export const REPLICATED_JOB_NAME_LABEL = 'jobset.sigs.k8s.io/replicatedjob-name';

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
export type Mode = 'companion' | 'standalone';
/**
 * On the reconciler's leader-election Lease: its mode (companion or standalone). The webhook reads
 * the Lease to admit a count change only while a reconciler leads, and judges it for that mode.
 */
export const RECONCILER_MODE_ANNOTATION = `${PREFIX}/reconciler-mode`;
/** The reconciler's leader-election Lease, in the reconciler's namespace. */
export const RECONCILER_LEASE_NAME = 'trainjob-webhook-reconciler';
export const RETAINED_FOR_LABEL = `${PREFIX}/retained-for`;
export const RELEASED_FROM_ANNOTATION = `${PREFIX}/released-from-jobset`;
/**
 * On a resumed TrainJob whose JobSet stays suspended: the fold of Trainer's refusal Events the
 * reconciler last answered (src/rebuild/refused-apply.ts, refusalFold). Writing it changes the
 * TrainJob's resourceVersion, so that Trainer's next refusal is a new Event with its own note.
 */
export const REFUSAL_SEEN_ANNOTATION = `${PREFIX}/trainer-refusal-seen`;

/**
 * The PodGroups Trainer v2.3.0's gang-scheduling plugins apply, one per TrainJob, named after it and
 * controlled by it (plugins/coscheduling and plugins/volcano, Build): scheduler-plugins'
 * Coscheduling and Volcano.
 */
export const COSCHEDULING_POD_GROUP = {
  group: 'scheduling.x-k8s.io',
  version: 'v1alpha1',
  plural: 'podgroups',
} as const;
export const VOLCANO_POD_GROUP = { group: 'scheduling.volcano.sh', version: 'v1beta1', plural: 'podgroups' } as const;

/**
 * Rules this project writes into the TrainJob CRD start with this CEL comment, so the webhook can
 * recognise them and not report a violation twice, and the Trainer line's detection can leave them
 * out (src/rules/marker.ts, src/api/trainer-line-detect.ts).
 */
export const GENERATED_RULE_MARKER = '// trainjob-webhook:';

/**
 * This project's field in the TrainJob's status (the CRD patch adds its schema; the reconciler
 * writes it with SSA on the status subresource, src/rebuild/status-field.ts). Named so no Trainer
 * field can collide with it; the `kubectl trainjob` plugin reads it.
 */
export const STATUS_FIELD = 'trainjobWebhook';
/** The scale subresource the CRD patch adds (kubectl scale, autoscalers): its paths in the TrainJob. */
export const SCALE_SUBRESOURCE = {
  specReplicasPath: '.spec.trainer.numNodes',
  statusReplicasPath: `.status.${STATUS_FIELD}.nodes`,
  labelSelectorPath: `.status.${STATUS_FIELD}.selector`,
} as const;
