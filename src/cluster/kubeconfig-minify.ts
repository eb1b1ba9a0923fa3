// The part of a kubeconfig one connection uses, as `kubectl config view --minify` writes it
// (k8s.io/client-go/tools/clientcmd/api/helpers.go MinifyConfig): the context in use, its cluster
// and its user, with current-context set to that context. client-node is given only this: its
// loadFromString refuses an invalid entry anywhere in what it is given (config_types.js
// newClusters: "clusters[i].cluster.server is missing"), while client-go checks only the context in
// use (tools/clientcmd/validation.go ConfirmUsable). Pure.
import { isObject, type JsonObject } from '../json/object.ts';

/** The entry of `list` named `name`, whole (name and body), as a list of at most one. */
function named(doc: JsonObject, list: string, name: unknown): unknown[] {
  const items = doc[list];
  const found =
    typeof name === 'string' && Array.isArray(items) ? items.find((e) => isObject(e) && e.name === name) : undefined;
  return found === undefined ? [] : [found];
}

/** `doc` (its paths already absolute) cut to `context`, else its current-context. */
export function minifiedKubeconfig(doc: JsonObject, context?: string): JsonObject {
  const name = context ?? doc['current-context'];
  const contexts = named(doc, 'contexts', name);
  const entry = contexts[0];
  const body = isObject(entry) && isObject(entry.context) ? entry.context : {};
  return {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: named(doc, 'clusters', body.cluster),
    users: named(doc, 'users', body.user),
    contexts,
    ...(typeof name === 'string' ? { 'current-context': name } : {}),
  };
}
