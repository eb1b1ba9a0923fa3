// The cluster connection as a client-node KubeConfig: from an explicit kubeconfig file or the
// in-cluster service account, never picked up implicitly (no ~/.kube/config, no KUBECONFIG). The
// reconciler uses it (informers); `serve` reads its kubeconfig with kube-access.ts and comes here
// only for a user it does not implement (exec, auth-provider: connect.ts).
import { createHash } from 'node:crypto';
import { KubeConfig } from '@kubernetes/client-node';
import type { ClusterAccess } from './kube-access.ts';

export function loadKubeConfig(access: ClusterAccess): KubeConfig | undefined {
  if (access.mode === 'none') return undefined;
  const kc = new KubeConfig();
  if (access.mode === 'kubeconfig') {
    try {
      kc.loadFromFile(access.path);
    } catch (err) {
      throw new Error(`--kubeconfig ${access.path}: ${(err as Error).message.split('\n')[0]}`, { cause: err });
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
