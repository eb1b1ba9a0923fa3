// Reads and deletes the objects an initializer's first run made (src/rebuild/initializers.ts): the
// data cache's LeaderWorkerSet (a custom resource; absent when its CRD is not installed) and its
// ServiceAccount. Each is read by name, live: a delete never rests on a cache.
import type { JsonApi } from '../cluster/api-json.ts';
import { orUndefinedIfNotFound } from '../cluster/errors.ts';
import { CORE, resourcePath } from '../cluster/resource-path.ts';
import type { ObjectMeta } from '../api/objects.ts';
import type { InitializerObject, InitializerObjectRef } from '../rebuild/initializers.ts';

export interface InitializerObjects {
  /** The objects of these that exist (404, also for a resource the API server does not serve, is absence). */
  get(namespace: string, refs: readonly InitializerObjectRef[]): Promise<InitializerObject[]>;
  /**
   * In the background (the object goes at once, its dependents after it: the initializer's second
   * run finds its names free), with uid and resourceVersion preconditions.
   */
  delete(namespace: string, ref: InitializerObjectRef, uid: string, resourceVersion: string): Promise<void>;
}

const LWS = { group: 'leaderworkerset.x-k8s.io', version: 'v1', plural: 'leaderworkersets' } as const;

const pathOf = (namespace: string, ref: InitializerObjectRef) =>
  resourcePath(ref.kind === 'ServiceAccount' ? CORE.serviceAccounts : LWS, { namespace, name: ref.name });

export function initializerObjects(api: JsonApi): InitializerObjects {
  async function read(namespace: string, ref: InitializerObjectRef): Promise<ObjectMeta | undefined> {
    const found = (await orUndefinedIfNotFound(api.get(pathOf(namespace, ref)))) as
      { metadata?: ObjectMeta } | undefined;
    return found ? (found.metadata ?? {}) : undefined;
  }

  return {
    async get(namespace, refs) {
      const metas = await Promise.all(refs.map((ref) => read(namespace, ref)));
      return refs.flatMap((ref, i) => (metas[i] ? [{ ref, metadata: metas[i] }] : []));
    },
    async delete(namespace, ref, uid, resourceVersion) {
      await api.delete(pathOf(namespace, ref), {
        propagationPolicy: 'Background',
        preconditions: { uid, resourceVersion },
      });
    },
  };
}
