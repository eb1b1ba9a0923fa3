// Keeps the TrainJob CRD current: reads trainjobs.trainer.kubeflow.org at start and follows its
// changes with a watch, re-established with backoff when it ends. Every new version is handed to
// `onChange`, which compiles it; a version that does not compile is reported and the previous
// one stays in force.
import type { ApiClient } from '../cluster/api-request.ts';
import { jsonApi } from '../cluster/api-json.ts';
import { followWatch, reportingTo } from '../cluster/api-watch.ts';
import { TRAINJOB_CRD } from '../api/names.ts';

export interface CrdFollowerEvents {
  onChange(crd: unknown): void;
  onError(message: string): void;
}

const CRDS = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';

/** The CRD as the API server sends it, raw JSON (a typed client renames x-kubernetes-validations). */
export async function readCrd(client: ApiClient, name = TRAINJOB_CRD): Promise<unknown> {
  return jsonApi(client).get(`${CRDS}/${encodeURIComponent(name)}`);
}

/** Starts following; returns a function that stops it. */
export function followCrd(client: ApiClient, events: CrdFollowerEvents, name = TRAINJOB_CRD): () => void {
  let lastResourceVersion = '';
  const changed = (crd: unknown): void => {
    const rv = (crd as { metadata?: { resourceVersion?: string } } | null)?.metadata?.resourceVersion ?? '';
    if (rv && rv === lastResourceVersion) return;
    lastResourceVersion = rv;
    events.onChange(crd);
  };
  return followWatch(
    client,
    CRDS,
    { fieldSelector: `metadata.name=${name}` },
    {
      onEvent: ({ type, object }) => {
        if (type === 'ADDED' || type === 'MODIFIED') changed(object);
        if (type === 'DELETED') events.onError(`CRD ${name} was deleted; the last known version stays in force`);
      },
      ...reportingTo(`CRD ${name}`, (message) => events.onError(message)),
    },
  );
}
