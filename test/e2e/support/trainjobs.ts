// TrainJob helpers for end-to-end suites: objects, create/update through the real API server,
// and the API server's answer when it refuses (a metav1.Status).
import { readFileSync } from 'node:fs';
import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import jsonpatch from 'fast-json-patch';
import { parse } from 'yaml';
import { upstreamCrds, upstreamCrdsOf, type TrainerLine } from '../../harness/index.ts';

export const TRAINJOB = { group: 'trainer.kubeflow.org', version: 'v1alpha1', plural: 'trainjobs' } as const;

export type Obj = Record<string, any>;

export function trainJobObject(name: string, namespace: string, spec: Obj = {}): Obj {
  return {
    apiVersion: 'trainer.kubeflow.org/v1alpha1',
    kind: 'TrainJob',
    metadata: { name, namespace },
    spec: {
      runtimeRef: { name: 'torch-distributed' },
      suspend: true,
      trainer: {
        image: 'ghcr.io/acme/train:1',
        numNodes: 1,
        command: ['torchrun', 'train.py'],
        env: [
          { name: 'A', value: '1' },
          { name: 'B', value: '2' },
        ],
      },
      ...spec,
    },
  };
}

export interface Refusal {
  code: number;
  reason: string;
  message: string;
  causes: { reason?: string; field?: string; message?: string }[];
  /** details.retryAfterSeconds: the API server passes a webhook's Status on whole. */
  retryAfterSeconds?: number;
}

/** The Status of a refused call, or throws what was not a refusal. */
export function refusalOf(err: unknown): Refusal {
  const body = (err as { body?: unknown }).body;
  const status = (typeof body === 'string' ? JSON.parse(body) : body) as Obj | undefined;
  if (!status || status.kind !== 'Status') throw err;
  return {
    code: status.code,
    reason: status.reason,
    message: status.message,
    causes: status.details?.causes ?? [],
    ...(status.details?.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: status.details.retryAfterSeconds }),
  };
}

export type Outcome = { allowed: true; object: Obj; warnings?: string[] } | { allowed: false; refusal: Refusal };

export function trainJobs(kc: KubeConfig) {
  const api = kc.makeApiClient(CustomObjectsApi);
  const attempt = async (call: () => Promise<Obj>): Promise<Outcome> => {
    try {
      return { allowed: true, object: await call() };
    } catch (err) {
      return { allowed: false, refusal: refusalOf(err) };
    }
  };
  return {
    create: (obj: Obj, dryRun?: 'All') =>
      attempt(() =>
        api.createNamespacedCustomObject({ ...TRAINJOB, namespace: obj.metadata.namespace, body: obj, dryRun }),
      ),
    get: (namespace: string, name: string) =>
      api.getNamespacedCustomObject({ ...TRAINJOB, namespace, name }) as Promise<Obj>,
    /**
     * An UPDATE: reads the stored object, changes it, replaces it. A 409 (a controller wrote the
     * object in between: Trainer's status) is read again and retried, as `kubectl edit` does.
     */
    update: async (namespace: string, name: string, change: (o: Obj) => void, dryRun?: 'All') => {
      for (let attempt409 = 0; ; attempt409++) {
        const current = (await api.getNamespacedCustomObject({ ...TRAINJOB, namespace, name })) as Obj;
        const next = structuredClone(current);
        change(next);
        const out = await attempt(() =>
          api.replaceNamespacedCustomObject({ ...TRAINJOB, namespace, name, body: next, dryRun }),
        );
        if (out.allowed || out.refusal.code !== 409 || attempt409 >= 10) return out;
      }
    },
    delete: (namespace: string, name: string) => api.deleteNamespacedCustomObject({ ...TRAINJOB, namespace, name }),
  };
}

/**
 * An upstream TrainJob CRD: the current cell's (the one its world installs) by default, or a
 * named one ('master': the main line at SOURCES.md's commit).
 */
export function upstreamTrainJobCrd(version?: 'master' | TrainerLine): Obj {
  const file =
    version === undefined ? upstreamCrds.trainjobs : upstreamCrdsOf(version === 'master' ? 'main' : version).trainjobs;
  return parse(readFileSync(file, 'utf8')) as Obj;
}

/** The upstream CRD with a JSON6902 patch applied (e.g. manifests/crd-patch/trainjob-crd-patch.yaml). */
export function patchedCrd(crd: Obj, ops: unknown[]): Obj {
  const copy = structuredClone(crd);
  jsonpatch.applyPatch(copy, ops as jsonpatch.Operation[], true, true);
  delete copy.metadata.annotations;
  return copy;
}
