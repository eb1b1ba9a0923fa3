// The cluster connection as a client-node KubeConfig: from an explicit kubeconfig file, kubectl's
// files already merged (merged-kubeconfig.ts) or the in-cluster service account, never picked up
// implicitly (no ~/.kube/config, no KUBECONFIG: client-node's own merge of KUBECONFIG lets the
// last file's current-context win and throws on a name two files define, unlike client-go). Both
// commands read their kubeconfig with kube-access.ts and come here only for a user it does not
// implement (exec, auth-provider: connect.ts), and then only for its credentials
// (kubeconfig-connection.ts): no request goes through client-node.
import { KubeConfig } from '@kubernetes/client-node';
import type { ClusterAccess } from './kube-access.ts';
import { mergedLabel, type MergedKubeconfig } from './merged-kubeconfig.ts';

/** `merged`: what merged-kubeconfig.ts read for a 'merged-kubeconfig' access (its paths absolute). */
export function loadKubeConfig(access: ClusterAccess, merged?: MergedKubeconfig): KubeConfig | undefined {
  if (access.mode === 'none') return undefined;
  const kc = new KubeConfig();
  if (access.mode === 'in-cluster') {
    kc.loadFromCluster();
    return kc;
  }
  const label =
    access.mode === 'kubeconfig' ? `--kubeconfig ${access.path}` : mergedLabel(merged?.files ?? access.files);
  try {
    if (access.mode === 'kubeconfig') kc.loadFromFile(access.path);
    else if (merged) kc.loadFromString(JSON.stringify(merged.doc));
    else throw new Error('the merged kubeconfig was not read');
    if (access.context !== undefined) kc.setCurrentContext(access.context);
  } catch (err) {
    throw new Error(`${label}: ${(err as Error).message.split('\n')[0]}`, { cause: err });
  }
  // A file that parses but names no cluster (empty, or no current-context) would only retry forever.
  if (!kc.getCurrentCluster()) throw new Error(`${label}: no current context with a cluster`);
  return kc;
}
