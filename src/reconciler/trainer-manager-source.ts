// Trainer's controller-manager Deployment, followed by name for its image tag: a hint beside the
// line found from the TrainJob CRD (trainer-line-hint.ts), never the rules. Like the CRD follower
// (trainer-line-source.ts): a list and a watch with fieldSelector metadata.name=<name>, which the
// API server authorizes against a Role's resourceNames (what client-go's informers with a name
// selector send), raw JSON. Every outcome is an observation, never a throw: a Deployment read, none
// there (an empty list, a 404, a delete), no right (403), another failure; after a failure it
// starts again with backoff (5 s doubling to 5 min: a hint is not worth more requests).
import { CustomObjectsApi, ListWatch, Watch, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { describeError, statusCode } from '../cluster/errors.ts';
import { isObject } from '../json/object.ts';
import type { DeploymentRef, ManagerObservation } from './trainer-line-hint.ts';

export interface TrainerManagerSource {
  start(): Promise<void>;
  stop(): Promise<void>;
}

const DEPLOYMENTS = { group: 'apps', version: 'v1', plural: 'deployments' } as const;

/** The HTTP status of a failed list (client-node's ApiException: `code`) or watch (`statusCode`). */
const httpStatus = (err: unknown): number | undefined => {
  const code = statusCode(err) ?? (err as { statusCode?: unknown } | null)?.statusCode;
  return typeof code === 'number' ? code : undefined;
};

export function followTrainerManager(
  kc: KubeConfig,
  opts: {
    target: DeploymentRef;
    onObservation: (seen: ManagerObservation) => void;
    restartDelayMs?: number;
    maxRestartDelayMs?: number;
  },
): TrainerManagerSource {
  const { namespace, name } = opts.target;
  const objects = kc.makeApiClient(CustomObjectsApi);
  const base = opts.restartDelayMs ?? 5_000;
  const max = opts.maxRestartDelayMs ?? 300_000;
  let delay = base;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const byName = `metadata.name=${name}`;
  const observe = (seen: ManagerObservation) => {
    if (!stopped) opts.onObservation(seen);
  };
  const list = async () => {
    const raw: unknown = await objects.listNamespacedCustomObject({ ...DEPLOYMENTS, namespace, fieldSelector: byName });
    // The informer reads items' metadata: only well-formed items reach it.
    const items = (isObject(raw) && Array.isArray(raw.items) ? raw.items : []).filter(
      (i): i is KubernetesObject & Record<string, unknown> => isObject(i) && isObject(i.metadata),
    );
    delay = base;
    const mine = items.find((i) => i.metadata?.name === name);
    observe(mine ? { state: 'read', deployment: mine } : { state: 'absent' });
    return { ...(isObject(raw) ? raw : {}), items } as never;
  };
  const informer = new ListWatch<KubernetesObject>(
    `/apis/${DEPLOYMENTS.group}/${DEPLOYMENTS.version}/namespaces/${namespace}/${DEPLOYMENTS.plural}`,
    new Watch(kc),
    list,
    false,
    undefined,
    byName,
  );
  const read = (d: KubernetesObject) => {
    delay = base;
    observe({ state: 'read', deployment: d });
  };
  informer.on('add', read);
  informer.on('update', read);
  informer.on('delete', () => observe({ state: 'absent' }));
  informer.on('error', (err: unknown) => {
    if (stopped) return;
    const code = httpStatus(err);
    const described = describeError(err);
    const error = code && !described.startsWith('HTTP ') ? `HTTP ${code}: ${described}` : described;
    observe(
      code === 403 ? { state: 'forbidden', error } : code === 404 ? { state: 'absent' } : { state: 'failing', error },
    );
    timer = setTimeout(() => {
      if (!stopped) informer.start().catch(() => undefined);
    }, delay);
    timer.unref();
    delay = Math.min(delay * 2, max);
  });
  return {
    async start() {
      // A first list that fails is an observation and is retried; start does not wait for it.
      await informer.start().catch(() => undefined);
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await informer.stop();
    },
  };
}
