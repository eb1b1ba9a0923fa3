// The Jobs read through @kubernetes/client-node, for a kubeconfig that reaches the API server
// through proxy-url (HTTP or SOCKS), which the direct GET of api-get.ts does not speak.
import { BatchV1Api, Observable, type KubeConfig, type RequestContext, type ResponseContext } from '@kubernetes/client-node';
import type { JobSetRead } from '../rules/jobset-pods.ts';
import { describeError } from './client.ts';

const apis = new WeakMap<KubeConfig, BatchV1Api>();

export async function readJobsWithClientNode(kc: KubeConfig, { namespace, labelSelector, signal }: { namespace: string; labelSelector: string; signal: AbortSignal }): Promise<JobSetRead> {
  let api = apis.get(kc);
  if (!api) apis.set(kc, (api = kc.makeApiClient(BatchV1Api)));
  // Client-node's object API takes Observable middleware: this one hands the caller's abort to the request.
  const abortWith = {
    middleware: [{ pre: (ctx: RequestContext) => (ctx.setSignal(signal), new Observable(Promise.resolve(ctx))), post: (res: ResponseContext) => new Observable(Promise.resolve(res)) }],
    middlewareMergeStrategy: 'append' as const,
  };
  try {
    const list = await api.listNamespacedJob({ namespace, labelSelector, resourceVersion: '0' }, abortWith);
    return { kind: 'read', jobs: list.items };
  } catch (err) {
    return { kind: 'failed', error: `reading its Jobs failed: ${describeError(err)}` };
  }
}
