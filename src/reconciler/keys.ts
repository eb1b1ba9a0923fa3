// The work queue's keys: `namespace/name` of a TrainJob, as client-go's MetaNamespaceKeyFunc.
export function keyOf(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

export function splitKey(key: string): { namespace: string; name: string } {
  const slash = key.indexOf('/');
  return { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}
