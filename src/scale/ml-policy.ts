// Where a TrainJob's node count lands in the JobSet Trainer builds, per ML policy (Trainer v2.3.0's
// Torch, PlainML, MPI, JAX, XGBoost and Flux plugins, pkg/runtime/framework/plugins/). Pure.
import { ANCESTOR_LABEL, ANCESTOR_TRAINER, NODE, PET } from '../api/names.ts';
import { intOf, runtimeLabel, type ReplicatedJob, type Runtime, type TrainJob } from '../api/objects.ts';
import { malformedRuntime, malformedTrainJob } from '../api/wellformed.ts';

/**
 * The env var of the `node` container each policy writes the node count into (torch: PET_NNODES;
 * Trainer v2.3.0's JAX plugin: JAX_NUM_PROCESSES, one process per node). The only source of
 * NodeShape.env names, so the cache's kept env list (NODE_COUNT_ENV) cannot miss one.
 */
const COUNT_ENV = { torch: PET.nnodes, jax: 'JAX_NUM_PROCESSES' } as const;

/** The env vars of a JobSet's containers the staleness check compares (NodeShape.env): all it reads of them. */
export const NODE_COUNT_ENV: readonly string[] = Object.values(COUNT_ENV);

export type MlPolicy =
  | { kind: 'torch' }
  /** No policy source: Trainer's PlainML plugin. */
  | { kind: 'plain' }
  | { kind: 'mpi'; runLauncherAsNode: boolean }
  /** JAX: the count on the trainer job, JAX_NUM_PROCESSES on its `node` container. */
  | { kind: 'jax' }
  /** XGBoost: the count on the trainer job (PlainML's too: its guard does not exclude XGBoost). */
  | { kind: 'xgboost' }
  /** Flux: PlainML sets the trainer job's count; Flux's entrypoint ConfigMap is re-applied by Trainer. */
  | { kind: 'flux' }
  /** A policy this reconciler does not know how to judge (two sources, or one Trainer v2.3.0 has not): left alone. */
  | { kind: 'unknown'; name: string };

/** The ML policy sources of Trainer v2.3.0, as the runtime's `spec.mlPolicy` names them. */
export const KNOWN_POLICIES = ['torch', 'mpi', 'jax', 'xgboost', 'flux'] as const;

export function mlPolicyOf(runtime: Runtime): MlPolicy {
  const policy = runtime.spec.mlPolicy ?? {};
  const sources = Object.keys(policy).filter((k) => k !== 'numNodes' && policy[k] !== undefined && policy[k] !== null);
  if (sources.length === 0) return { kind: 'plain' };
  if (sources.length > 1) return { kind: 'unknown', name: sources.sort().join('+') };
  const [source] = sources;
  if (source === 'torch') return { kind: 'torch' };
  if (source === 'mpi') return { kind: 'mpi', runLauncherAsNode: policy.mpi?.runLauncherAsNode === true };
  if (source === 'jax' || source === 'xgboost' || source === 'flux') return { kind: source };
  return { kind: 'unknown', name: source };
}

/**
 * spec.trainer.numNodes, else what Trainer v2.3.0 gives the trainer job without it
 * (core/trainingruntime.go newRuntimeInfo): with an mlPolicy its numNodes (default 1), without one
 * the trainer job's own parallelism in the runtime (default 1).
 */
export function effectiveNumNodes(trainJob: TrainJob, runtime: Runtime): number {
  const requested = intOf(trainJob.spec?.trainer?.numNodes);
  if (requested !== undefined) return requested;
  const mlPolicy = runtime.spec.mlPolicy;
  if (mlPolicy !== undefined && mlPolicy !== null) return intOf(mlPolicy.numNodes) ?? 1;
  const trainerJob = (runtime.spec.template?.spec?.replicatedJobs ?? []).find(
    (r) => r.template?.metadata?.labels?.[ANCESTOR_LABEL] === ANCESTOR_TRAINER,
  );
  return intOf(trainerJob?.template?.spec?.parallelism) ?? 1;
}

/** What the node count fixes in the JobSet: one replicated job's parallelism/completions, maybe an env. */
export interface NodeShape {
  policy: MlPolicy;
  numNodes: number;
  /** How the replicated job is found in a JobSet. */
  replicatedJob: { by: 'ancestor-label'; value: typeof ANCESTOR_TRAINER } | { by: 'name'; value: string };
  /** parallelism = completions = count. */
  count: number;
  /** Torch: PET_NNODES on the `node` container, compared when present (torchtune's entrypoint has none). */
  env?: { container: string; name: (typeof COUNT_ENV)[keyof typeof COUNT_ENV]; value: string };
}

export type ShapeResult = { known: true; shape: NodeShape } | { known: false; reason: string };

/**
 * The node-count-bearing parts Trainer would build for this TrainJob. MPI puts the count on the
 * `node` job (numNodes - 1, at least 1, when the launcher runs as a node) and only when the
 * TrainJob sets numNodes; otherwise the runtime's own `node` parallelism stays. A malformed
 * TrainJob or runtime (see wellformed.ts) is not judged.
 */
// eslint-disable-next-line complexity -- one case per Trainer v2.3.0 ML policy plugin
export function expectedNodeShape(trainJob: TrainJob, runtime: Runtime): ShapeResult {
  const malformed = malformedTrainJob(trainJob) ?? malformedRuntime(runtime);
  if (malformed) return { known: false, reason: malformed };
  const policy = mlPolicyOf(runtime);
  const numNodes = effectiveNumNodes(trainJob, runtime);
  const trainer = { by: 'ancestor-label', value: ANCESTOR_TRAINER } as const;
  switch (policy.kind) {
    // torch and jax: the node job runs numNodes pods and its count env says numNodes.
    case 'torch':
    case 'jax':
      return {
        known: true,
        shape: {
          policy,
          numNodes,
          replicatedJob: trainer,
          count: numNodes,
          env: { container: NODE, name: COUNT_ENV[policy.kind], value: String(numNodes) },
        },
      };
    // XGBoost's DMLC_NUM_WORKER is numNodes times the GPUs per node: the count alone tells a stale JobSet.
    case 'xgboost':
    case 'flux':
    case 'plain':
      return { known: true, shape: { policy, numNodes, replicatedJob: trainer, count: numNodes } };
    case 'mpi': {
      const requested = intOf(trainJob.spec?.trainer?.numNodes);
      const runtimeNode = runtime.spec.template?.spec?.replicatedJobs?.find((r) => r.name === NODE);
      const count =
        requested === undefined
          ? (intOf(runtimeNode?.template?.spec?.parallelism) ?? 1)
          : policy.runLauncherAsNode
            ? Math.max(requested - 1, 1)
            : requested;
      return { known: true, shape: { policy, numNodes, replicatedJob: { by: 'name', value: NODE }, count } };
    }
    case 'unknown':
      return {
        known: false,
        reason: `ML policy "${policy.name}" of ${runtimeLabel(runtime)} is not one this reconciler can judge (${KNOWN_POLICIES.join(', ')}, or none)`,
      };
  }
}

export function findReplicatedJob(jobs: ReplicatedJob[] | undefined, shape: NodeShape): ReplicatedJob | undefined {
  const { by, value } = shape.replicatedJob;
  return (jobs ?? []).find((r) =>
    by === 'name' ? r.name === value : r.template?.metadata?.labels?.[ANCESTOR_LABEL] === value,
  );
}

export function describeReplicatedJob(shape: NodeShape): string {
  return shape.replicatedJob.by === 'name'
    ? `replicated job named "${shape.replicatedJob.value}"`
    : `replicated job labelled ${ANCESTOR_LABEL}=${ANCESTOR_TRAINER}`;
}
