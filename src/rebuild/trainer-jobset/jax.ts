// Trainer v2.3.0's JAX plugin (plugins/jax): the process count, the process id from the Job's
// completion index and the coordinator (the first node, port 29500) on the trainer's `node`
// container. Unlike Torch, it does not upsert the TrainJob's envs itself: the JobSet builder adds
// them after these. Pure.
import { JOB_COMPLETION_INDEX_FIELD, NODE, TORCH_MASTER_PORT } from '../../api/names.ts';
import type { EnvVar } from '../../api/objects.ts';

export function jaxEnv(trainJobName: string, numNodes: number): EnvVar[] {
  return [
    { name: 'JAX_NUM_PROCESSES', value: String(numNodes) },
    { name: 'JAX_PROCESS_ID', valueFrom: { fieldRef: { fieldPath: JOB_COMPLETION_INDEX_FIELD } } },
    { name: 'JAX_COORDINATOR_ADDRESS', value: `${trainJobName}-${NODE}-0-0.${trainJobName}:${TORCH_MASTER_PORT}` },
  ];
}
