// One object followed by name: a list and a watch with fieldSelector metadata.name=<name>, which is
// what client-go's informers with a name selector send and what the API server authorizes against
// a Role's resourceNames, read as raw JSON (src/cluster/informer.ts). Every outcome goes to a
// callback, never a throw; after a failure the follow starts again with backoff. The reconciler
// follows the TrainJob CRD this way (trainer-line-source.ts: the Trainer line).
import type { ApiClient } from '../cluster/api-request.ts';
import { createInformer } from '../cluster/informer.ts';

/** An object as read: its metadata at least (the informer stores only named objects). */
export type FollowedObject = Readonly<Record<string, unknown>> & { metadata?: { name?: string } };

export interface ByNameTarget {
  /** The collection's path (`/apis/apiextensions.k8s.io/v1/customresourcedefinitions`). */
  path: string;
  name: string;
}

export interface ByNameCallbacks {
  /** The object, as listed (each list), added or updated, and again once a watch is up after a failure. */
  onObject: (obj: FollowedObject) => void;
  /** The object was deleted. */
  onDeleted: () => void;
  /** A list found no object of that name. */
  onNone?: () => void;
  /** The list or the watch failed (`status`: its HTTP status, when there is one); it is started again. */
  onError: (message: string, status: number | undefined) => void;
}

export interface ByNameFollower {
  /** Starts the follow; a first list that fails goes to onError and is retried: this does not wait for it. */
  start(): Promise<void>;
  stop(): Promise<void>;
}

export function followByName(
  client: ApiClient,
  target: ByNameTarget,
  on: ByNameCallbacks,
  backoff: { initialMs: number; maxMs: number },
): ByNameFollower {
  let stopped = false;
  /** A failure was reported since the object (or its absence) was last said. */
  let failed = false;
  const read = (obj: FollowedObject) => {
    if (!stopped) on.onObject(obj);
  };
  const informer = createInformer<FollowedObject>({
    client,
    path: target.path,
    fieldSelector: `metadata.name=${target.name}`,
    // Only the object of that name (a server that ignored the selector would send more).
    transform: (o) => ((o as FollowedObject).metadata?.name === target.name ? (o as FollowedObject) : undefined),
    backoff: { ...backoff, jitter: 0 },
    handlers: {
      onUpdate: (_old, obj) => read(obj),
      onAdd: read,
      onDelete: () => {
        if (!stopped) on.onDeleted();
      },
      // Said after every list: a relist of an unchanged object after a failure is a read too.
      onListed: (items) => {
        failed = false;
        if (stopped) return;
        if (items.length === 0) on.onNone?.();
      },
      onError: (message, status) => {
        failed = true;
        if (!stopped) on.onError(message, status);
      },
      // A watch cut off without a status (a broken connection, a refused one) is resumed from its
      // resourceVersion with no list, so nothing unchanged comes again: the object as stored is said
      // once the next watch is up, or a failure would be the last word until the object changes.
      onWatching: () => {
        if (!failed || stopped) return;
        failed = false;
        const [obj] = informer.list();
        if (obj) on.onObject(obj);
        else on.onNone?.();
      },
    },
  });
  return {
    start: () => informer.start(),
    async stop() {
      stopped = true;
      await informer.stop();
    },
  };
}
