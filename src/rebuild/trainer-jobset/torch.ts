// Trainer v2.3.0's Torch plugin, the parts a standalone build needs: PET_NPROC_PER_NODE from
// numProcPerNode and the node's resources, the PET_* envs on the trainer's `node` container and on
// the envInjection targets; and the GPU count runtime.GetNumGPUPerNode reads (XGBoost's too).
import { JOB_COMPLETION_INDEX_FIELD, PET, TORCH_MASTER_PORT } from '../../api/names.ts';
import type { Container, EnvVar, TrainJob } from '../../api/objects.ts';

/** The torchtune entrypoint: Trainer rewrites its arguments instead of setting PET_* envs. */
export const TORCHTUNE_ENTRYPOINT = ['tune', 'run'];

export type Resources = Container['resources'];
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

/** The first resource whose name contains "gpu" (Go reads one, in map order: there is one in practice). */
function gpuIn(list: Quantities): number {
  const found = Object.entries(list ?? {}).find(([k]) => k.toLowerCase().includes('gpu'));
  return found ? wholeCpus(found[1]) : 0;
}

/** runtime.GetNumGPUPerNode: the requests' GPUs, else the limits'. */
export function gpusPerNode(resources: Resources): number {
  return gpuIn(resources?.requests) || gpuIn(resources?.limits);
}

/** The Torch plugin's getNumCPUPerNode: the requests' CPUs, else the limits'. */
function cpusPerNode(resources: Resources): number {
  const requested = wholeCpus(resources?.requests?.cpu);
  return requested || wholeCpus(resources?.limits?.cpu);
}

/**
 * numProcPerNode: the TrainJob's, else "auto"; "auto" without GPUs counts the node's CPUs (at
 * least 1). The resources are the TrainJob's resourcesPerNode as given (not merged), else the
 * runtime node's. ("cpu" is the value older Trainer versions took; counted the same way.)
 */
export function numProcPerNode(trainJob: TrainJob, runtimeNode: Container | undefined): string {
  const requested = trainJob.spec?.trainer?.numProcPerNode ?? 'auto';
  const resources = trainJob.spec?.trainer?.resourcesPerNode ?? runtimeNode?.resources ?? {};
  if (requested === 'cpu' || (requested === 'auto' && gpusPerNode(resources) === 0)) {
    return String(Math.max(1, cpusPerNode(resources)));
  }
  return String(requested);
}

/** PET_NNODES, PET_NPROC_PER_NODE, PET_NODE_RANK, then the master's address and port. */
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

type Port = NonNullable<Container['ports']>[number];

/**
 * Trainer's apply.UpsertPort: replaces the first port with the same containerPort or the same
 * name, where two absent names are the same (so an unnamed port of the runtime is replaced).
 */
export function upsertPort(ports: readonly Port[] | undefined, port: Port): Port[] {
  const out = [...(ports ?? [])];
  const at = out.findIndex((p) => p.containerPort === port.containerPort || p.name === port.name);
  if (at >= 0) out[at] = port;
  else out.push(port);
  return out;
}
