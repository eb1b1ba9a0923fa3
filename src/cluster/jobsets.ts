// Reads the JobSet that belongs to a TrainJob (same namespace and name) for the numNodes guard.
import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import type { JobSetRead } from '../rules/jobset-guard.ts';
import { describeError, statusCode } from './client.ts';

export const JOBSET = { group: 'jobset.x-k8s.io', version: 'v1alpha2', plural: 'jobsets' } as const;

export function jobSetReader(kc: KubeConfig): (namespace: string, name: string) => Promise<JobSetRead> {
  const api = kc.makeApiClient(CustomObjectsApi);
  return async (namespace, name) => {
    try {
      const jobSet: unknown = await api.getNamespacedCustomObject({ ...JOBSET, namespace, name });
      return { kind: 'found', jobSet };
    } catch (err) {
      if (statusCode(err) === 404) return { kind: 'not-found' };
      return { kind: 'failed', error: describeError(err) };
    }
  };
}
