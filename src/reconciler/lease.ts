// Leader election over a coordination.k8s.io/v1 Lease, the way client-go's leaderelection does
// it: the holder renews every retry period; another candidate takes over once it has observed the
// same record, unrenewed, for a whole lease duration (measured on its own clock, so clock skew
// between replicas does not matter); a holder that cannot renew within the renew deadline stops
// acting before anyone else may start. With two sidecars, one acts and the other waits.
import { jsonApi } from '../cluster/api-json.ts';
import type { ApiClient } from '../cluster/api-request.ts';
import { describeError, statusCode } from '../cluster/errors.ts';
import { resourcePath } from '../cluster/resource-path.ts';
import type { Logger } from '../observability/logger.ts';
import type { LeaderElectionConfig } from './config.ts';
import { LEASE } from './names.ts';

export interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

export interface LeaseObject {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    /** What else the API server or others keep there (owners, uid), carried through updates. */
    [key: string]: unknown;
  };
  spec?: LeaseSpec;
}

/** metav1.MicroTime: RFC 3339 with exactly six fractional digits. */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

export interface Observed {
  /** holderIdentity and renewTime as last seen, and when (local clock) they were first seen. */
  record: string;
  atMs: number;
}

export type LeaseStep =
  { kind: 'create'; spec: LeaseSpec } | { kind: 'update'; spec: LeaseSpec } | { kind: 'wait'; holder: string };

/** What to do with the Lease as read (undefined: absent). Pure. */
export function leaseStep(
  lease: LeaseObject | undefined,
  observed: Observed | undefined,
  identity: string,
  nowMs: number,
  durationMs: number,
): LeaseStep {
  const seconds = Math.ceil(durationMs / 1000);
  const now = microTime(nowMs);
  if (!lease)
    return {
      kind: 'create',
      spec: {
        holderIdentity: identity,
        leaseDurationSeconds: seconds,
        acquireTime: now,
        renewTime: now,
        leaseTransitions: 0,
      },
    };
  const spec = lease.spec ?? {};
  const holder = spec.holderIdentity ?? '';
  const mine = holder === identity;
  if (holder && !mine) {
    const held = (spec.leaseDurationSeconds ?? seconds) * 1000;
    const since = observed?.record === recordOf(lease) ? observed.atMs : nowMs;
    if (since + held > nowMs) return { kind: 'wait', holder };
  }
  return {
    kind: 'update',
    spec: {
      holderIdentity: identity,
      leaseDurationSeconds: seconds,
      acquireTime: mine ? (spec.acquireTime ?? now) : now,
      renewTime: now,
      leaseTransitions: mine ? (spec.leaseTransitions ?? 0) : (spec.leaseTransitions ?? 0) + 1,
    },
  };
}

export function recordOf(lease: LeaseObject): string {
  return `${lease.spec?.holderIdentity ?? ''}@${lease.spec?.renewTime ?? ''}`;
}

export interface LeaderElector {
  /**
   * Runs until stopped; calls onStartedLeading each time the Lease is acquired and onStoppedLeading
   * each time it is lost (then campaigns again).
   */
  run(callbacks: { onStartedLeading(): void; onStoppedLeading(): void }): void;
  /** True while the Lease is held and was renewed within the renew deadline. */
  isLeader(): boolean;
  /** Stops, and releases the Lease when held (so a successor need not wait out the duration). */
  stop(): Promise<void>;
}

// eslint-disable-next-line max-lines-per-function -- client-go's LeaderElector: renew, run, release share its state
export function createLeaderElector(
  client: ApiClient,
  config: LeaderElectionConfig,
  logger: Logger,
  now: () => number = Date.now,
): LeaderElector {
  // client-go's leaderelection: a call that has no answer within the renew deadline is given up.
  const api = jsonApi(client, { timeoutMs: config.renewDeadlineMs });
  const leases = resourcePath(LEASE, { namespace: config.namespace });
  const ref = resourcePath(LEASE, { namespace: config.namespace, name: config.name });
  const log = logger.child({ lease: `${config.namespace}/${config.name}`, identity: config.identity });
  let observed: Observed | undefined;
  let lastRenewMs: number | undefined;
  let leading = false;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let current: Promise<void> = Promise.resolve();
  /** The Lease as this replica last wrote it. */
  let written: LeaseObject | undefined;

  /**
   * The Lease to write: an update carries the metadata as read or last written (labels, owners and
   * the rest that others put there; a PUT replaces what it does not carry), as client-go's LeaseLock
   * updates the object it got; only the spec and our annotations change.
   */
  const bodyOf = (lease: LeaseObject | undefined, spec: LeaseSpec): LeaseObject => ({
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: {
      ...lease?.metadata,
      name: config.name,
      namespace: config.namespace,
      annotations: { ...lease?.metadata.annotations, ...config.annotations },
    },
    spec,
  });

  /**
   * client-go's fast path: the leader renews on the Lease it last wrote, with no read first; a
   * conflict (someone else wrote since) or any failure falls back to the read.
   */
  async function renewAsWritten(): Promise<boolean> {
    const t = now();
    if (!written || !leading || lastRenewMs === undefined || t - lastRenewMs >= config.renewDeadlineMs) return false;
    const step = leaseStep(written, observed, config.identity, t, config.leaseDurationMs);
    if (step.kind !== 'update') return false;
    try {
      written = (await api.put(ref, bodyOf(written, step.spec))) as LeaseObject;
      observed = { record: recordOf(written), atMs: t };
      return true;
    } catch (err) {
      log.debug(
        { error: describeError(err) },
        'leader election: the renewal on the Lease as written failed; reading it',
      );
      return false;
    }
  }

  async function tryAcquireOrRenew(): Promise<boolean> {
    if (await renewAsWritten()) return true;
    written = undefined;
    let lease: LeaseObject | undefined;
    try {
      lease = (await api.get(ref)) as LeaseObject;
    } catch (err) {
      if (statusCode(err) !== 404) throw err;
    }
    const t = now();
    if (lease && observed?.record !== recordOf(lease)) observed = { record: recordOf(lease), atMs: t };
    const step = leaseStep(lease, observed, config.identity, t, config.leaseDurationMs);
    if (step.kind === 'wait') return false;
    const body = bodyOf(lease, step.spec);
    try {
      const stored = (step.kind === 'create' ? await api.post(leases, body) : await api.put(ref, body)) as LeaseObject;
      observed = { record: recordOf(stored), atMs: t };
      written = stored;
      return true;
    } catch (err) {
      if (statusCode(err) === 409) return false; // someone else wrote first
      throw err;
    }
  }

  return {
    run(callbacks) {
      const loop = async () => {
        if (stopped) return;
        try {
          if (await tryAcquireOrRenew()) {
            lastRenewMs = now();
            if (!leading) {
              leading = true;
              log.info('leader election: acquired the Lease; acting');
              callbacks.onStartedLeading();
            }
          }
        } catch (err) {
          log.warn({ error: describeError(err) }, 'leader election: Lease read or write failed');
        }
        if (leading && (lastRenewMs === undefined || now() - lastRenewMs > config.renewDeadlineMs)) {
          // Stop acting at once and campaign again, in this process: an exit would restart the
          // container, and a sidecar that is not running makes the webhook's pod NotReady.
          // In-flight work writes only while isLeader() holds, and deletes carry preconditions.
          leading = false;
          log.error(
            'leader election: could not renew the Lease within the renew deadline; stopped acting, campaigning again',
          );
          callbacks.onStoppedLeading();
        }
        if (!stopped) timer = setTimeout(() => (current = loop()), config.retryPeriodMs);
      };
      current = loop();
    },
    isLeader: () => leading && lastRenewMs !== undefined && now() - lastRenewMs < config.renewDeadlineMs,
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await current;
      if (!leading) return;
      leading = false;
      try {
        const lease = (await api.get(ref)) as LeaseObject;
        if (lease.spec?.holderIdentity !== config.identity) return;
        const t = microTime(now());
        await api.put(ref, {
          ...lease,
          // client-go's release: no holder, a 1 s duration, acquired and renewed now.
          spec: { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1, acquireTime: t, renewTime: t },
        });
        log.info('leader election: released the Lease');
      } catch (err) {
        log.warn(
          { error: describeError(err) },
          'leader election: could not release the Lease; a successor waits for it to expire',
        );
      }
    },
  };
}
