// buildJobSet: TrainJob + its (Cluster)TrainingRuntime -> the JobSet Trainer v2.3.0 would apply,
// for standalone mode (no Trainer controller). Torch and plain runtimes only: MPI needs Trainer's
// SSH Secret and hostfile ConfigMap, so it is refused as a whole, never half built. A malformed
// TrainJob or runtime, or runtimePatches that make the template malformed, are refused with the
// field that is (see wellformed.ts). Pure.
import {
  ANCESTOR_LABEL,
  ANCESTOR_TRAINER,
  JOBSET_API_VERSION,
  NODE,
  TORCH_MASTER_PORT,
  TRAINJOB_API_VERSION,
  TRAINJOB_KIND,
} from '../../api/names.ts';
import { mlPolicyOf, effectiveNumNodes } from '../ml-policy.ts';
import {
  intOf,
  isAbsent,
  labelOf,
  runtimeLabel,
  type Container,
  type EnvVar,
  type JobSet,
  type JobSetSpec,
  type Obj,
  type ReplicatedJob,
  type Runtime,
  type TrainJob,
} from '../../api/objects.ts';
import { malformedJobSetSpec, malformedRuntime, malformedTrainJob } from '../wellformed.ts';
import { strategicMerge } from './strategic-merge.ts';
import { numProcPerNode, torchEnv, TORCHTUNE_ENTRYPOINT, upsertEnv } from './torch.ts';

export type BuildResult = { ok: true; jobSet: JobSet; numNodes: number } | { ok: false; reason: string };

const INITIALIZERS = [
  { ancestor: 'dataset-initializer', source: 'dataset' },
  { ancestor: 'model-initializer', source: 'model' },
] as const;

// Trainer v2.3.0's JobSet build in its order: the plugins' refusals, runtimePatches, per-job envs, owner.
// eslint-disable-next-line complexity, max-lines-per-function -- Trainer v2.3.0's build, step for step
export function buildJobSet(trainJob: TrainJob, runtime: Runtime): BuildResult {
  const malformed = malformedTrainJob(trainJob) ?? malformedRuntime(runtime);
  if (malformed) return { ok: false, reason: malformed };
  const policy = mlPolicyOf(runtime);
  const ref = runtimeLabel(runtime);
  if (policy.kind === 'mpi')
    return {
      ok: false,
      reason: `${ref} uses the MPI policy, which standalone mode does not build (it needs Trainer's SSH Secret and hostfile ConfigMap); run Kubeflow Trainer's controller with the reconciler in companion mode for MPI runtimes`,
    };
  if (policy.kind !== 'torch' && policy.kind !== 'plain')
    return {
      ok: false,
      reason: `${ref} uses the ML policy "${policy.kind === 'unknown' ? policy.name : policy.kind}", which standalone mode does not build (torch or no policy only)`,
    };
  const command = trainJob.spec?.trainer?.command;
  if (
    policy.kind === 'torch' &&
    command &&
    command.length === TORCHTUNE_ENTRYPOINT.length &&
    command.every((c, i) => c === TORCHTUNE_ENTRYPOINT[i])
  ) {
    return {
      ok: false,
      reason: `the torchtune entrypoint (${TORCHTUNE_ENTRYPOINT.join(' ')}) needs Trainer's argument rewriting, which standalone mode does not do`,
    };
  }
  const template = structuredClone(runtime.spec.template ?? {});
  const merged = mergeRuntimePatches(trainJob, template.spec ?? {}, template.metadata ?? {});
  const patchedBadly = malformedJobSetSpec(
    merged.spec,
    `the JobSet template of ${ref} with the runtimePatches of ${labelOf('TrainJob', trainJob)}`,
  );
  if (patchedBadly) return { ok: false, reason: patchedBadly };
  const rJobs = inRuntimeOrder(merged.spec.replicatedJobs ?? [], template.spec?.replicatedJobs ?? []);
  if (!rJobs.some(isTrainer))
    return { ok: false, reason: `${ref} has no replicated job labelled ${ANCESTOR_LABEL}=${ANCESTOR_TRAINER}` };

  const numNodes = effectiveNumNodes(trainJob, runtime);
  const name = trainJob.metadata.name ?? '';
  const runtimeNode = runtime.spec.template?.spec?.replicatedJobs
    ?.find(isTrainer)
    ?.template?.spec?.template?.spec?.containers?.find((c) => c.name === NODE);
  const replicatedJobs = rJobs.map((rJob) => {
    const trainer = isTrainer(rJob);
    const count = trainer ? numNodes : (intOf(rJob.template?.spec?.parallelism) ?? 1);
    const out = withCount(rJob, count);
    if (trainer) {
      updateContainer(out, NODE, (c) => {
        applyTrainer(c, trainJob);
        if (policy.kind === 'torch') {
          c.env = upsertEnv(c.env, torchEnv(name, numNodes, numProcPerNode(trainJob, runtime, runtimeNode)));
          const ports = (c.ports ?? []).filter((p) => p.containerPort !== TORCH_MASTER_PORT);
          c.ports = [...ports, { containerPort: TORCH_MASTER_PORT }];
        }
      });
    }
    for (const init of INITIALIZERS) {
      const source = trainJob.spec?.initializer?.[init.source];
      if (source && rJob.template?.metadata?.labels?.[ANCESTOR_LABEL] === init.ancestor) {
        updateContainer(out, init.ancestor, (c) => {
          const env: EnvVar[] = [
            ...(source.storageUri ? [{ name: 'STORAGE_URI', value: source.storageUri }] : []),
            ...(source.env ?? []),
          ];
          c.env = upsertEnv(c.env, env);
        });
      }
    }
    return out;
  });

  const jobSet: JobSet = {
    apiVersion: JOBSET_API_VERSION,
    kind: 'JobSet',
    metadata: {
      name,
      namespace: trainJob.metadata.namespace,
      ...(Object.keys(merged.labels).length ? { labels: merged.labels } : {}),
      ...(Object.keys(merged.annotations).length ? { annotations: merged.annotations } : {}),
      ownerReferences: [
        {
          apiVersion: TRAINJOB_API_VERSION,
          kind: TRAINJOB_KIND,
          name,
          uid: trainJob.metadata.uid ?? '',
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: {
      ...merged.spec,
      ...volumeClaimPoliciesAsStored(merged.spec.volumeClaimPolicies),
      replicatedJobs,
      suspend: trainJob.spec?.suspend ?? false,
    },
  };
  return { ok: true, jobSet, numNodes };
}

/**
 * volumeClaimPolicies as JobSet v0.12.0 stores them: its defaulting webhook, which runs on CREATE
 * only, sets `retentionPolicy.whenDeleted: Delete` where none is given and writes each claim
 * template back from Go, where the empty status is `status: {}` (jobset_webhook.go:151-157). The
 * list is atomic and immutable (`self == oldSelf`), so an apply without those defaults changes it
 * and is refused ("Value is immutable") on every later apply to the JobSet it created.
 */
function volumeClaimPoliciesAsStored(policies: Obj[] | undefined): { volumeClaimPolicies?: Obj[] } {
  if (!Array.isArray(policies)) return {};
  return {
    volumeClaimPolicies: policies.map((policy) => ({
      ...policy,
      retentionPolicy: policy.retentionPolicy ?? { whenDeleted: 'Delete' },
      ...(Array.isArray(policy.templates)
        ? { templates: policy.templates.map((t: Obj) => ('status' in t ? t : { ...t, status: {} })) }
        : {}),
    })),
  };
}

function isTrainer(rJob: ReplicatedJob): boolean {
  return rJob.template?.metadata?.labels?.[ANCESTOR_LABEL] === ANCESTOR_TRAINER;
}

/** runtimePatches in list order. The merged spec is unchecked: patches may make it malformed. */
function mergeRuntimePatches(
  trainJob: TrainJob,
  spec: JobSetSpec,
  metadata: { labels?: Record<string, string>; annotations?: Record<string, string> },
) {
  let merged = spec as Obj;
  let labels = { ...metadata.labels };
  let annotations = { ...metadata.annotations };
  for (const patch of trainJob.spec?.runtimePatches ?? []) {
    const t = patch.trainingRuntimeSpec?.template;
    if (t?.spec) merged = strategicMerge(merged, t.spec) as Obj;
    const meta = (t?.metadata ?? {}) as { labels?: Record<string, string>; annotations?: Record<string, string> };
    labels = { ...labels, ...meta.labels };
    annotations = { ...annotations, ...meta.annotations };
  }
  return { spec: merged as JobSetSpec, labels, annotations };
}

/** The runtime's replicated job order is kept, new ones follow. */
function inRuntimeOrder(rJobs: readonly ReplicatedJob[], runtimeJobs: readonly ReplicatedJob[]): ReplicatedJob[] {
  const order = runtimeJobs.map((r) => r.name);
  return [...rJobs].sort((a, b) => rank(order, a.name) - rank(order, b.name));
}

function rank(order: string[], name: string): number {
  const i = order.indexOf(name);
  return i < 0 ? order.length : i;
}

function withCount(rJob: ReplicatedJob, count: number): ReplicatedJob {
  const template = rJob.template ?? {};
  return {
    ...rJob,
    replicas: 1,
    template: { ...template, spec: { ...template.spec, parallelism: count, completions: count } },
  };
}

function updateContainer(rJob: ReplicatedJob, name: string, change: (c: Container) => void): void {
  const podSpec = rJob.template?.spec?.template?.spec;
  const container = podSpec?.containers?.find((c) => c.name === name);
  if (container) change(container);
}

function applyTrainer(c: Container, trainJob: TrainJob): void {
  const t = trainJob.spec?.trainer;
  if (!t) return;
  if (!isAbsent(t.image)) c.image = t.image;
  if (!isAbsent(t.command)) c.command = [...t.command];
  if (!isAbsent(t.args)) c.args = [...t.args];
  if (!isAbsent(t.resourcesPerNode)) c.resources = structuredClone(t.resourcesPerNode);
  if (t.env?.length) c.env = upsertEnv(c.env, t.env);
}
