// Trainer v2.3.0's Torch plugin, the parts a standalone build needs: PET_NPROC_PER_NODE from
// numProcPerNode and the node's resources, and the PET_* envs on the trainer's `node` container.
import { JOB_COMPLETION_INDEX_FIELD, PET, TORCH_MASTER_PORT } from '../../api/names.ts';
import type { Container, EnvVar, Runtime, TrainJob } from '../../api/objects.ts';

/** The torchtune entrypoint: Trainer rewrites its arguments instead of setting PET_* envs. */
export const TORCHTUNE_ENTRYPOINT = ['tune', 'run'];

type Quantities = Record<string, string | number> | undefined;

/** A CPU quantity ("2", "500m", "1.5") rounded up to whole CPUs, as resource.Quantity.Value() does. */
export function wholeCpus(q: string | number | undefined): number {
  if (q === undefined) return 0;
  const text = String(q).trim();
  const m = /^(\d+(?:\.\d+)?)(m?)$/.exec(text);
  if (!m) return 0;
  const value = Number(m[1]) / (m[2] === 'm' ? 1000 : 1);
  return Math.ceil(value);
}

function gpus(resources: Container['resources']): number {
  const pick = (list: Quantities) =>
    Object.entries(list ?? {})
      .filter(([k]) => k.toLowerCase().includes('gpu'))
      .reduce((n, [, v]) => n + (Number(v) || 0), 0);
  return pick(resources?.limits) || pick(resources?.requests);
}

/** numProcPerNode ("auto" by default); "cpu", or "auto" without GPUs, counts the node's CPUs (at least 1). */
// eslint-disable-next-line complexity -- the Torch plugin's fallbacks: TrainJob, runtime, auto; GPUs, then CPUs
export function numProcPerNode(trainJob: TrainJob, runtime: Runtime, runtimeNode: Container | undefined): string {
  const requested = trainJob.spec?.trainer?.numProcPerNode ?? runtime.spec.mlPolicy?.torch?.numProcPerNode ?? 'auto';
  const resources = trainJob.spec?.trainer?.resourcesPerNode ?? runtimeNode?.resources ?? {};
  if (requested === 'cpu' || (requested === 'auto' && gpus(resources) === 0)) {
    return String(Math.max(1, wholeCpus(resources.limits?.cpu ?? resources.requests?.cpu)));
  }
  return String(requested);
}

export function torchEnv(trainJobName: string, numNodes: number, nprocPerNode: string): EnvVar[] {
  return [
    { name: PET.nnodes, value: String(numNodes) },
    { name: PET.nprocPerNode, value: nprocPerNode },
    { name: PET.nodeRank, valueFrom: { fieldRef: { fieldPath: JOB_COMPLETION_INDEX_FIELD } } },
    { name: PET.masterAddr, value: `${trainJobName}-node-0-0.${trainJobName}` },
    { name: PET.masterPort, value: String(TORCH_MASTER_PORT) },
  ];
}

/** Upserts by name, keeping the position of names already present (Trainer's apply.UpsertEnvVars). */
export function upsertEnv(env: readonly EnvVar[] | undefined, add: readonly EnvVar[]): EnvVar[] {
  const out = [...(env ?? [])];
  for (const e of add) {
    const at = out.findIndex((x) => x.name === e.name);
    if (at >= 0) out[at] = e;
    else out.push(e);
  }
  return out;
}
