// One object followed by name: a list and a watch with fieldSelector metadata.name=<name>, which is
// what client-go's informers with a name selector send and what the API server authorizes against
// a Role's resourceNames, read as raw JSON. Every outcome goes to a callback, never a throw; after
// a failure the follow starts again with backoff (reset by every object read). The reconciler
// follows the TrainJob CRD this way (trainer-line-source.ts: the Trainer line) and Trainer's
// controller-manager Deployment (trainer-manager-source.ts: its image tag, a hint).
import { ListWatch, Watch, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { statusCode } from '../cluster/errors.ts';
import { isObject } from '../json/object.ts';

export interface ByNameTarget {
  /** The collection's path (`/apis/apps/v1/namespaces/NS/deployments`). */
  path: string;
  name: string;
  /** Lists the collection with the given field selector (the raw list as the API server sent it). */
  list: (fieldSelector: string) => Promise<unknown>;
}

export interface ByNameCallbacks {
  /** The object, as listed (each list, so also after a failure), added or updated. */
  onObject: (obj: KubernetesObject) => void;
  /** The object was deleted. */
  onDeleted: () => void;
  /** A list found no object of that name. */
  onNone?: () => void;
  /** The list or the watch failed (`status`: its HTTP status, when there is one); it is started again. */
  onError: (err: unknown, status: number | undefined) => void;
}

export interface ByNameFollower {
  /** Starts the follow; a first list that fails goes to onError and is retried: this does not wait for it. */
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** The HTTP status of a failed list (client-node's ApiException: `code`) or watch (`statusCode`). */
function httpStatus(err: unknown): number | undefined {
  const code = statusCode(err) ?? (err as { statusCode?: unknown } | null)?.statusCode;
  return typeof code === 'number' ? code : undefined;
}

export function followByName(
  kc: KubeConfig,
  target: ByNameTarget,
  on: ByNameCallbacks,
  backoff: { initialMs: number; maxMs: number },
): ByNameFollower {
  const byName = `metadata.name=${target.name}`;
  let delay = backoff.initialMs;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const read = (obj: KubernetesObject) => {
    delay = backoff.initialMs;
    if (!stopped) on.onObject(obj);
  };
  const list = async () => {
    const raw = await target.list(byName);
    // The informer reads the items' metadata: only well-formed items reach it.
    const items = (isObject(raw) && Array.isArray(raw.items) ? raw.items : []).filter(
      (i): i is KubernetesObject & Record<string, unknown> => isObject(i) && isObject(i.metadata),
    );
    // Said here too: after a failure, a relist of an unchanged object raises no informer event.
    const found = items.find((i) => i.metadata?.name === target.name);
    if (found) read(found);
    else if (!stopped) on.onNone?.();
    return { ...(isObject(raw) ? raw : {}), items } as never;
  };
  const informer = new ListWatch<KubernetesObject>(target.path, new Watch(kc), list, false, undefined, byName);
  informer.on('add', read);
  informer.on('update', read);
  informer.on('delete', () => {
    if (!stopped) on.onDeleted();
  });
  informer.on('error', (err: unknown) => {
    if (stopped) return;
    on.onError(err, httpStatus(err));
    timer = setTimeout(() => {
      if (!stopped) informer.start().catch(() => undefined);
    }, delay);
    timer.unref();
    delay = Math.min(delay * 2, backoff.maxMs);
  });
  return {
    async start() {
      await informer.start().catch(() => undefined);
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await informer.stop();
    },
  };
}
