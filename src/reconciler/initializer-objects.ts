// Reads and deletes the objects an initializer's first run made (src/rebuild/initializers.ts): the
// data cache's LeaderWorkerSet (a custom resource; absent when its CRD is not installed) and its
// ServiceAccount. Each is read by name, live: a delete never rests on a cache.
import { CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { orUndefinedIfNotFound } from '../cluster/errors.ts';
import type { ObjectMeta } from '../api/objects.ts';
import type { InitializerObject, InitializerObjectRef } from '../rebuild/initializers.ts';

export interface InitializerObjects {
  /** The objects of these that exist (404, also for a resource the API server does not serve, is absence). */
  get(namespace: string, refs: readonly InitializerObjectRef[]): Promise<InitializerObject[]>;
  /** Foreground, with uid and resourceVersion preconditions. */
  delete(namespace: string, ref: InitializerObjectRef, uid: string, resourceVersion: string): Promise<void>;
}

const LWS = { group: 'leaderworkerset.x-k8s.io', version: 'v1', plural: 'leaderworkersets' } as const;

export function initializerObjects(kc: KubeConfig): InitializerObjects {
  const objects = kc.makeApiClient(CustomObjectsApi);
  const core = kc.makeApiClient(CoreV1Api);

  async function read(namespace: string, ref: InitializerObjectRef): Promise<ObjectMeta | undefined> {
    const { name } = ref;
    const found =
      ref.kind === 'ServiceAccount'
        ? await orUndefinedIfNotFound(core.readNamespacedServiceAccount({ namespace, name }))
        : ((await orUndefinedIfNotFound(objects.getNamespacedCustomObject({ ...LWS, namespace, name }))) as
            { metadata?: ObjectMeta } | undefined);
    return found ? ((found.metadata ?? {}) as ObjectMeta) : undefined;
  }

  return {
    async get(namespace, refs) {
      const metas = await Promise.all(refs.map((ref) => read(namespace, ref)));
      return refs.flatMap((ref, i) => (metas[i] ? [{ ref, metadata: metas[i] }] : []));
    },
    async delete(namespace, ref, uid, resourceVersion) {
      const body = { propagationPolicy: 'Foreground', preconditions: { uid, resourceVersion } };
      if (ref.kind === 'ServiceAccount')
        await core.deleteNamespacedServiceAccount({ namespace, name: ref.name, propagationPolicy: 'Foreground', body });
      else
        await objects.deleteNamespacedCustomObject({
          ...LWS,
          namespace,
          name: ref.name,
          propagationPolicy: 'Foreground',
          body,
        });
    },
  };
}
