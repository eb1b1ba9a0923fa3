// The cluster connection as a client-node KubeConfig: from an explicit kubeconfig file or the
// in-cluster service account, never picked up implicitly (no ~/.kube/config, no KUBECONFIG). Both
// commands read their kubeconfig with kube-access.ts and come here only for a user it does not
// implement (exec, auth-provider: connect.ts), and then only for its credentials
// (kubeconfig-connection.ts): no request goes through client-node.
import { KubeConfig } from '@kubernetes/client-node';
import type { ClusterAccess } from './kube-access.ts';

export function loadKubeConfig(access: ClusterAccess): KubeConfig | undefined {
  if (access.mode === 'none') return undefined;
  const kc = new KubeConfig();
  if (access.mode === 'kubeconfig') {
    try {
      kc.loadFromFile(access.path);
      if (access.context !== undefined) kc.setCurrentContext(access.context);
    } catch (err) {
      throw new Error(`--kubeconfig ${access.path}: ${(err as Error).message.split('\n')[0]}`, { cause: err });
    }
    // A file that parses but names no cluster (empty, or no current-context) would only retry forever.
    if (!kc.getCurrentCluster()) throw new Error(`--kubeconfig ${access.path}: no current context with a cluster`);
  } else kc.loadFromCluster();
  return kc;
}
