// buildJobSet: TrainJob + its (Cluster)TrainingRuntime -> the JobSet Trainer v2.3.0 would apply,
// for standalone mode (no Trainer controller). Torch, JAX, XGBoost and plain runtimes: MPI needs
// Trainer's SSH Secret and hostfile ConfigMap, Flux its entrypoint ConfigMap and CURVE Secret (and
// a rewritten command), which standalone mode neither builds nor may create, so both are refused
// as a whole, never half built. A malformed TrainJob or runtime, or runtimePatches that make the
// template malformed, are refused with the field that is (see wellformed.ts). Pure.
import {
  ANCESTOR_LABEL,
  ANCESTOR_TRAINER,
  JOBSET_API_VERSION,
  NODE,
  TORCH_MASTER_PORT,
  TRAINJOB_API_VERSION,
  TRAINJOB_KIND,
} from '../../api/names.ts';
import { mlPolicyOf, effectiveNumNodes } from '../../scale/ml-policy.ts';
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
import { malformedJobSetSpec, malformedRuntime, malformedTrainJob } from '../../api/wellformed.ts';
import { jaxEnv } from './jax.ts';
import { mergeResources } from './resources.ts';
import { strategicMerge } from './strategic-merge.ts';
import { numProcPerNode, torchEnv, TORCHTUNE_ENTRYPOINT, upsertEnv, upsertPort } from './torch.ts';
import { xgboostEnv } from './xgboost.ts';

export type BuildResult = { ok: true; jobSet: JobSet; numNodes: number } | { ok: false; reason: string };

/** The ML policy plugins a standalone build runs (PlainML for `plain`, and beside XGBoost). */
type Framework = 'torch' | 'jax' | 'xgboost' | 'plain';

const INITIALIZERS = [
  { ancestor: 'dataset-initializer', source: 'dataset' },
  { ancestor: 'model-initializer', source: 'model' },
] as const;

/** Replicated jobs Trainer sets `replicas: 1` on (its runtime webhook allows no other value there). */
const ONE_REPLICA = new Set<string>([ANCESTOR_TRAINER, ...INITIALIZERS.map((i) => i.ancestor)]);

/**
 * The policy source a standalone build knows. JAX and XGBoost are read from the runtime's
 * mlPolicy directly; the rest as mlPolicyOf sees it.
 */
function frameworkOf(runtime: Runtime): { ok: true; framework: Framework } | { ok: false; reason: string } {
  const known = mlPolicyOf(runtime);
  if (known.kind === 'torch' || known.kind === 'plain' || known.kind === 'jax' || known.kind === 'xgboost')
    return { ok: true, framework: known.kind };
  const ref = runtimeLabel(runtime);
  if (known.kind === 'mpi')
    return {
      ok: false,
      reason: `${ref} uses the MPI policy, which standalone mode does not build (it needs Trainer's SSH Secret and hostfile ConfigMap); run Kubeflow Trainer's controller with the reconciler in companion mode for MPI runtimes`,
    };
  const name = known.kind === 'unknown' ? known.name : known.kind;
  const flux =
    name === 'flux'
      ? " (it needs Trainer's entrypoint ConfigMap and CURVE Secret, and rewrites the trainer's command); run Kubeflow Trainer's controller with the reconciler in companion mode for Flux runtimes"
      : ' (torch, jax, xgboost or no policy only)';
  return { ok: false, reason: `${ref} uses the ML policy "${name}", which standalone mode does not build${flux}` };
}

/** Trainer's build of the trainer's `node` container: its plugin's envs and port, then the TrainJob's. */
function trainerEnvs(framework: Framework, trainJob: TrainJob, numNodes: number, node?: Container): EnvVar[] {
  const name = trainJob.metadata.name ?? '';
  const own = trainJob.spec?.trainer?.env ?? [];
  switch (framework) {
    case 'torch':
      // The Torch plugin upserts the TrainJob's envs, then PET_*.
      return [...own, ...torchEnv(name, numNodes, numProcPerNode(trainJob, node))];
    case 'jax':
      // PlainML does not run for JAX, and the JAX plugin leaves the TrainJob's envs to the builder.
      return [...jaxEnv(name, numNodes), ...own];
    case 'xgboost':
      // PlainML runs too (its guard leaves XGBoost out), in an order that Go's map iteration picks
      // per Trainer process; PlainML's first is the order the Torch plugin has.
      return [...own, ...xgboostEnv(name, numNodes, trainJob.spec?.trainer?.resourcesPerNode ?? node?.resources)];
    case 'plain':
      return own;
  }
}

// Trainer v2.3.0's JobSet build in its order: the plugins' refusals, runtimePatches, per-job envs, owner.
// eslint-disable-next-line complexity, max-lines-per-function -- Trainer v2.3.0's build, step for step
export function buildJobSet(trainJob: TrainJob, runtime: Runtime): BuildResult {
  const malformed = malformedTrainJob(trainJob) ?? malformedRuntime(runtime);
  if (malformed) return { ok: false, reason: malformed };
  const fw = frameworkOf(runtime);
  if (!fw.ok) return fw;
  const { framework } = fw;
  const ref = runtimeLabel(runtime);
  const command = trainJob.spec?.trainer?.command;
  if (
    framework === 'torch' &&
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
  // A copy of its own: a patch value (a `$patch: replace` template, a whole replicated job) comes
  // out of the TrainJob as it is, and the TrainJob may be the reconciler's frozen cached object,
  // which the steps below would write into.
  const merged = structuredClone(mergeRuntimePatches(trainJob, template.spec ?? {}, template.metadata ?? {}));
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
  const hasPolicy = runtime.spec.mlPolicy !== undefined && runtime.spec.mlPolicy !== null;
  const replicatedJobs = rJobs.map((rJob) => {
    const trainer = isTrainer(rJob);
    const count = trainer ? numNodes : Math.max(intOf(rJob.template?.spec?.parallelism) ?? 1, 1);
    const out = withCount(rJob, count);
    if (trainer) {
      updateContainer(out, NODE, (c) => {
        // resourcesPerNode is merged at the runtime info, for the trainer's job of a runtime with an mlPolicy.
        const perNode = trainJob.spec?.trainer?.resourcesPerNode;
        if (hasPolicy && !isAbsent(perNode)) c.resources = mergeResources(c.resources, perNode);
        // The plugins touch the node container only when the TrainJob has spec.trainer.
        if (isAbsent(trainJob.spec?.trainer)) return;
        c.env = upsertEnv(c.env, trainerEnvs(framework, trainJob, numNodes, rJobNode(rJobs)));
        if (framework !== 'plain') c.ports = upsertPort(c.ports, { containerPort: TORCH_MASTER_PORT });
        applyTrainer(c, trainJob);
      });
    }
    initializerEnvs(out, trainJob);
    return out;
  });
  if (framework === 'torch') {
    const injected = injectTorchEnvs(
      replicatedJobs,
      runtime,
      torchEnv(name, numNodes, numProcPerNode(trainJob, rJobNode(rJobs))),
    );
    if (injected) return { ok: false, reason: `${ref}: ${injected}` };
  }

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
  const ancestor = template.metadata?.labels?.[ANCESTOR_LABEL];
  // Trainer's builder sets 1 on the trainer's and the initializers' jobs; the others keep the runtime's.
  const replicas = ancestor !== undefined && ONE_REPLICA.has(ancestor) ? { replicas: 1 } : {};
  return {
    ...rJob,
    ...replicas,
    template: { ...template, spec: { ...template.spec, parallelism: count, completions: count } },
  };
}

/** The runtime's node container (ExtractResourcePerNodeFromRuntime: a job named node, or the trainer's). */
function rJobNode(rJobs: readonly ReplicatedJob[]): Container | undefined {
  for (const r of rJobs) {
    if (r.name !== NODE && !isTrainer(r)) continue;
    const node = r.template?.spec?.template?.spec?.containers?.find((c) => c.name === NODE && c.resources);
    if (node) return node;
  }
  return undefined;
}

/** storageUri, env and the Secret the envs come from (envFrom) on the initializer containers. */
function initializerEnvs(rJob: ReplicatedJob, trainJob: TrainJob): void {
  for (const init of INITIALIZERS) {
    const source = trainJob.spec?.initializer?.[init.source];
    if (!source || rJob.template?.metadata?.labels?.[ANCESTOR_LABEL] !== init.ancestor) continue;
    updateContainer(rJob, init.ancestor, (c) => {
      const env: EnvVar[] = [
        ...(source.storageUri ? [{ name: 'STORAGE_URI', value: source.storageUri }] : []),
        ...(source.env ?? []),
      ];
      c.env = upsertEnv(c.env, env);
      const secret = source.secretRef?.name;
      if (source.secretRef) {
        const envFrom = Array.isArray(c.envFrom) ? c.envFrom : [];
        c.envFrom = [...envFrom, { secretRef: { name: secret ?? '' } }];
      }
    });
  }
}

/**
 * Torch's envInjection: the PET_* envs and the master's address and port on each target container
 * (a container, else an init container, of the named replicated job). A target that is not there
 * fails Trainer's build (and its webhook), so the build is refused.
 */
function injectTorchEnvs(rJobs: ReplicatedJob[], runtime: Runtime, envs: EnvVar[]): string | undefined {
  for (const target of runtime.spec.mlPolicy?.torch?.envInjection?.targets ?? []) {
    for (const containerName of target.containerNames ?? []) {
      const c = targetContainer(rJobs, target.jobName, containerName);
      if (!c)
        return `envInjection target podSet "${target.jobName}" container "${containerName}" not found in runtime template`;
      c.env = upsertEnv(c.env, envs);
    }
  }
  return undefined;
}

/** info.FindContainerByPodSetName: a container of the job, else an init container. */
function targetContainer(rJobs: ReplicatedJob[], job: string | undefined, name: string): Container | undefined {
  const podSpec = rJobs.find((r) => r.name === job)?.template?.spec?.template?.spec;
  return podSpec?.containers?.find((x) => x.name === name) ?? podSpec?.initContainers?.find((x) => x.name === name);
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
  // The builder upserts the TrainJob's envs once more: where a plugin put them, they stay.
  if (t.env?.length) c.env = upsertEnv(c.env, t.env);
}
