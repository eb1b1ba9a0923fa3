// The reconciler's Lease as a watch keeps it, so that a numNodes change need not GET it (one of the
// reads behind each such change, scale-check.ts). One object, by name: a watch with the
// metadata.name field selector in the Lease's namespace, which the API server authorizes against
// `watch` on that resourceName. Both a GET with resourceVersion=0 (what scale-check.ts sends) and
// a watch are served from the API server's watch cache, so what the watch last delivered is what
// such a GET would answer, up to the event's delivery.
//
// What the watch says is trusted only while it is known to be current: from the first event of a
// running watch (a watch without resourceVersion begins with the object as ADDED) until the watch
// ends, and for at most TRUST_MS after the last event. A reconciler that leads renews every 2 s
// (reconciler/config.ts), so a watch that brought nothing for TRUST_MS is either on a Lease nobody
// renews (then the judgment reads it anyway) or stalled; either way the check GETs the Lease
// again, as it did before. An absent Lease yields no event at all and is always read by GET.
import type { ApiClient } from '../../cluster/api-request.ts';
import { followWatch } from '../../cluster/api-watch.ts';
import type { LeaseView, Read } from '../scale-admission.ts';

/** How long the last event of a running watch stands for the Lease without another one. */
export const LEASE_TRUST_MS = 10_000;

/** The Lease as last delivered by a running watch, while it can be trusted (pure: the events are fed in). */
export class WatchedLease {
  private last: { lease: LeaseView | undefined; at: number } | undefined;
  private readonly trustMs: number;

  constructor(trustMs = LEASE_TRUST_MS) {
    this.trustMs = trustMs;
  }

  /** A watch event: ADDED/MODIFIED carry the Lease, DELETED says it is gone, BOOKMARK that nothing changed. */
  onEvent(type: string, object: unknown, now: number): void {
    if (type === 'ADDED' || type === 'MODIFIED') this.last = { lease: object as LeaseView, at: now };
    else if (type === 'DELETED') this.last = { lease: undefined, at: now };
    else if (type === 'BOOKMARK' && this.last) this.last = { ...this.last, at: now };
  }

  /** The watch ended: nothing is known until the next one delivers. */
  onEnded(): void {
    this.last = undefined;
  }

  /** The Lease as a read would give it, or undefined when it must be read. */
  read(now: number): Read<LeaseView> | undefined {
    const last = this.last;
    if (!last || now - last.at > this.trustMs || now < last.at) return undefined;
    return last.lease ? { kind: 'found', value: last.lease } : { kind: 'absent' };
  }
}

export interface LeaseWatch {
  read(): Read<LeaseView> | undefined;
  stop(): void;
}

/**
 * Follows the Lease; `onError` hears each end of the watch once per distinct reason (a 403 means
 * the webhook's role lacks `watch` on the Lease: every change then GETs it, as without the watch).
 */
export function watchLease(
  client: ApiClient,
  lease: { namespace: string; name: string },
  onError: (message: string) => void,
  now: () => number = () => performance.now(),
): LeaseWatch {
  const state = new WatchedLease();
  let lastReason: string | undefined;
  const what = `the reconciler's Lease ${lease.namespace}/${lease.name}`;
  const stop = followWatch(
    client,
    `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(lease.namespace)}/leases`,
    { fieldSelector: `metadata.name=${lease.name}`, allowWatchBookmarks: 'true' },
    {
      onEvent: ({ type, object }) => state.onEvent(type, object, now()),
      onMalformed: (reason) => onError(`watch on ${what}: ${reason}`),
      onEnded: (reason, retryMs) => {
        state.onEnded();
        if (!reason || reason === lastReason) return;
        lastReason = reason;
        onError(
          `watch on ${what} ended: ${reason}; numNodes changes GET the Lease until a watch runs again (next try in ${retryMs} ms)`,
        );
      },
    },
  );
  return { read: () => state.read(now()), stop };
}
