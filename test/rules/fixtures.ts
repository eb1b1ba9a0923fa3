// A realistic TrainJob and a way to derive variants of it, deep-cloned per call.
export type TrainJob = {
  apiVersion: string;
  kind: string;
  metadata: Record<string, unknown>;
  spec: Record<string, any>;
};

export function trainJob(): TrainJob {
  return {
    apiVersion: 'trainer.kubeflow.org/v1alpha1',
    kind: 'TrainJob',
    metadata: { name: 'llama-ft', namespace: 'team-a', uid: '6f1c0c1e-0000-4000-8000-000000000001', generation: 1 },
    spec: {
      runtimeRef: { apiGroup: 'trainer.kubeflow.org', kind: 'ClusterTrainingRuntime', name: 'torch-distributed' },
      suspend: true,
      managedBy: 'trainer.kubeflow.org/trainjob-controller',
      trainer: {
        image: 'ghcr.io/acme/train:1',
        command: ['torchrun', 'train.py'],
        args: ['--epochs', '3'],
        numNodes: 1,
        numProcPerNode: 2,
        env: [
          { name: 'LR', value: '0.001' },
          { name: 'HF_TOKEN', valueFrom: { secretKeyRef: { name: 'hf', key: 'token' } } },
        ],
        resourcesPerNode: { limits: { 'nvidia.com/gpu': 2 }, requests: { cpu: '4', memory: '16Gi' } },
      },
    },
  };
}

export function variant(base: TrainJob, change: (o: TrainJob) => void): TrainJob {
  const copy = structuredClone(base);
  change(copy);
  return copy;
}

export function condition(type: string, status: string, reason: string): Record<string, unknown> {
  return { type, status, reason, message: `${type} ${reason}`, lastTransitionTime: '2026-11-30T08:00:00Z' };
}

/** The job with a True `type` condition in its (stored) status, as Trainer v2.3.0 writes it. */
export function finished(
  base: TrainJob,
  type: 'Complete' | 'Failed',
  reason = type === 'Complete' ? 'JobSetCompleted' : 'JobSetFailed',
): TrainJob {
  return variant(
    base,
    (o) =>
      ((o as TrainJob & { status: unknown }).status = {
        conditions: [condition('Suspended', 'False', 'Resumed'), condition(type, 'True', reason)],
      }),
  );
}

/** A validator's UPDATE input for team-a/llama-ft. */
export const update = (object: unknown, oldObject: unknown) => ({
  uid: 'u',
  operation: 'UPDATE' as const,
  namespace: 'team-a',
  name: 'llama-ft',
  object,
  oldObject,
  dryRun: false,
});
