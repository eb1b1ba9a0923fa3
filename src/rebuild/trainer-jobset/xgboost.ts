// Trainer v2.3.0's XGBoost plugin (plugins/xgboost): the Rabit tracker (the first node, port
// 29500), the task id from the Job's completion index, and the worker count: nodes x GPUs per
// node (1 without GPUs), the GPUs read from the TrainJob's resourcesPerNode if set, else from the
// runtime's `node` container. Pure.
import { JOB_COMPLETION_INDEX_FIELD, NODE, TORCH_MASTER_PORT } from '../../api/names.ts';
import type { EnvVar } from '../../api/objects.ts';
import { gpusPerNode, type Resources } from './torch.ts';

export function xgboostEnv(trainJobName: string, numNodes: number, resourcesPerNode: Resources | undefined): EnvVar[] {
  const workersPerNode = gpusPerNode(resourcesPerNode) || 1;
  return [
    { name: 'DMLC_TRACKER_URI', value: `${trainJobName}-${NODE}-0-0.${trainJobName}` },
    { name: 'DMLC_TRACKER_PORT', value: String(TORCH_MASTER_PORT) },
    { name: 'DMLC_TASK_ID', valueFrom: { fieldRef: { fieldPath: JOB_COMPLETION_INDEX_FIELD } } },
    { name: 'DMLC_NUM_WORKER', value: String(numNodes * workersPerNode) },
  ];
}
