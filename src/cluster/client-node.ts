// The cluster connection as a client-node KubeConfig, for a kubeconfig user kube-access.ts does
// not implement (exec, auth-provider: connect.ts), and then only for its credentials
// (kubeconfig-connection.ts): no request goes through client-node. It is given a document already
// read, never a file: an explicit file (kube-access.ts) or kubectl's files merged
// (merged-kubeconfig.ts), its relative paths resolved against the directory of the file each entry
// came from, exec.command included (client-go's ResolveLocalPaths and GetAuthInfoFileReferences,
// tools/clientcmd/loader.go; client-node's loadFromFile makes only the CA, certificate and key
// absolute and would run a relative exec command from the process's directory), cut to the
// context in use (kubeconfig-minify.ts). Nothing is picked up implicitly (no ~/.kube/config, no
// KUBECONFIG: client-node's own merge lets the last file's current-context win and throws on a
// name two files define, unlike client-go).
import { KubeConfig } from '@kubernetes/client-node';
import type { JsonObject } from '../json/object.ts';
import { minifiedKubeconfig } from './kubeconfig-minify.ts';

/** `doc`'s `context` (else its current-context) for client-node; errors are one line, prefixed with `label`. */
export function clientNodeConfig(doc: JsonObject, context: string | undefined, label: string): KubeConfig {
  const kc = new KubeConfig();
  try {
    kc.loadFromString(JSON.stringify(minifiedKubeconfig(doc, context)));
  } catch (err) {
    throw new Error(`${label}: ${(err as Error).message.split('\n')[0]}`, { cause: err });
  }
  // A document that names no cluster would only retry forever (kube-access.ts has refused it already).
  if (!kc.getCurrentCluster()) throw new Error(`${label}: no current context with a cluster`);
  return kc;
}
