// The cluster connection: from an explicit kubeconfig file or the in-cluster service account,
// never picked up implicitly (no ~/.kube/config, no KUBECONFIG).
import { createHash } from 'node:crypto';
import { KubeConfig } from '@kubernetes/client-node';
import type { ClusterAccess } from '../config/serve.ts';

export function loadKubeConfig(access: ClusterAccess): KubeConfig | undefined {
  if (access.mode === 'none') return undefined;
  const kc = new KubeConfig();
  if (access.mode === 'kubeconfig') {
    try {
      kc.loadFromFile(access.path);
    } catch (err) {
      throw new Error(`--kubeconfig ${access.path}: ${(err as Error).message.split('\n')[0]}`);
    }
    // A file that parses but names no cluster (empty, or no current-context) would only retry forever.
    if (!kc.getCurrentCluster()) throw new Error(`--kubeconfig ${access.path}: no current context with a cluster`);
  } else kc.loadFromCluster();
  return shareConnections(kc);
}

type Dispatcher = { close?(): Promise<void> } | undefined;
type DispatcherFactory = (cluster: unknown, agentOptions: Record<string, unknown>) => Dispatcher;

/** What a dispatcher is built from: the server and the TLS material (a rotated certificate changes it). */
function dispatcherKey(cluster: unknown, agentOptions: Record<string, unknown>): string {
  const h = createHash('sha256');
  h.update(String((cluster as { server?: unknown } | null)?.server ?? ''));
  for (const k of ['ca', 'cert', 'key', 'pfx', 'passphrase', 'rejectUnauthorized', 'servername']) {
    const v = agentOptions[k];
    h.update(`\0${k}=`);
    if (v !== undefined) h.update(Buffer.isBuffer(v) ? v : String(v));
  }
  return h.digest('hex');
}

/**
 * One connection pool per KubeConfig. @kubernetes/client-node 2.0.1 builds a new undici Agent for
 * every request (applySecurityAuthentication -> createDispatcher) and never closes it, so every
 * call opened a connection that stayed open: after ~330 reads `serve` held 120-154 sockets to the
 * API server. The dispatcher is reused while the server and TLS material it was built from stay
 * the same; when they change (a rotated client certificate) a new one is built and the old one
 * closed once its requests are done. Connections are then bounded by the requests in flight.
 */
export function shareConnections(kc: KubeConfig): KubeConfig {
  const target = kc as unknown as { createDispatcher: DispatcherFactory };
  const build = target.createDispatcher.bind(kc);
  let current: { key: string; dispatcher: Dispatcher } | undefined;
  target.createDispatcher = (cluster, agentOptions) => {
    const key = dispatcherKey(cluster, agentOptions);
    if (current?.key === key) return current.dispatcher;
    const previous = current;
    current = { key, dispatcher: build(cluster, agentOptions) };
    void previous?.dispatcher?.close?.().catch(() => {});
    return current.dispatcher;
  };
  return kc;
}

/** The HTTP status of a client-node ApiException, if the error is one. */
export function statusCode(err: unknown): number | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'number' ? code : undefined;
}

/** The call's result, or undefined when the object is not there (HTTP 404). */
export async function orUndefinedIfNotFound<T>(call: Promise<T>): Promise<T | undefined> {
  try {
    return await call;
  } catch (err) {
    if (statusCode(err) === 404) return undefined;
    throw err;
  }
}

/** A short, single-line reason for a failed API call, without response bodies that may be large. */
export function describeError(err: unknown): string {
  const code = statusCode(err);
  const body = (err as { body?: unknown } | null)?.body;
  let reason = '';
  if (typeof body === 'string') {
    try {
      reason = String((JSON.parse(body) as { message?: unknown }).message ?? '');
    } catch {
      reason = '';
    }
  }
  const message = reason || (err instanceof Error ? err.message : String(err));
  return (code ? `HTTP ${code}: ` : '') + message.split('\n')[0].slice(0, 300);
}
