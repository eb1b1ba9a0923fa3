// Keeps the TrainJob CRD current: reads trainjobs.trainer.kubeflow.org at start and follows its
// changes with a watch, re-established with backoff when it ends. Every new version is handed to
// `onChange`, which compiles it; a version that does not compile is reported and the previous
// one stays in force.
import { CustomObjectsApi, Watch, type KubeConfig } from '@kubernetes/client-node';
import { describeError } from './client.ts';
import { TRAINJOB_CRD } from '../webhooks/envelope.ts';

export { TRAINJOB_CRD };

export interface CrdFollowerEvents {
  onChange(crd: unknown): void;
  onError(message: string): void;
}

/**
 * The CRD as the API server sends it. Read as raw JSON, like the watch: the typed
 * ApiextensionsV1Api renames fields on the way in (`x-kubernetes-validations` becomes
 * `x_kubernetes_validations`), which leaves a schema without its rules.
 */
export async function readCrd(kc: KubeConfig, name = TRAINJOB_CRD): Promise<unknown> {
  return kc.makeApiClient(CustomObjectsApi).getClusterCustomObject({ group: 'apiextensions.k8s.io', version: 'v1', plural: 'customresourcedefinitions', name });
}

/** Starts following; returns a function that stops it. */
export function followCrd(kc: KubeConfig, events: CrdFollowerEvents, name = TRAINJOB_CRD): () => void {
  let stopped = false;
  let abort: AbortController | undefined;
  let retryDelayMs = 1000;
  let lastResourceVersion = '';

  const changed = (crd: unknown): void => {
    const rv = (crd as { metadata?: { resourceVersion?: string } })?.metadata?.resourceVersion ?? '';
    if (rv && rv === lastResourceVersion) return;
    lastResourceVersion = rv;
    events.onChange(crd);
  };

  const start = async (): Promise<void> => {
    if (stopped) return;
    try {
      abort = await new Watch(kc).watch(
        '/apis/apiextensions.k8s.io/v1/customresourcedefinitions',
        { fieldSelector: `metadata.name=${name}`, allowWatchBookmarks: false },
        (phase, obj) => {
          if (phase === 'ADDED' || phase === 'MODIFIED') changed(obj);
          if (phase === 'DELETED') events.onError(`CRD ${name} was deleted; the last known version stays in force`);
          retryDelayMs = 1000;
        },
        (err) => restart(err ? describeError(err) : undefined),
      );
    } catch (err) {
      restart(describeError(err));
    }
  };

  const restart = (reason?: string): void => {
    if (stopped) return;
    if (reason) events.onError(`watch on CRD ${name} ended: ${reason}; retrying in ${retryDelayMs} ms`);
    const delay = retryDelayMs;
    retryDelayMs = Math.min(retryDelayMs * 2, 60_000);
    setTimeout(() => void start(), delay).unref();
  };

  void start();
  return () => {
    stopped = true;
    abort?.abort();
  };
}
