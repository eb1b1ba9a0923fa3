// The REST path of a resource: `/api/v1/...` for the core group (group ''), `/apis/GROUP/VERSION/...`
// for the others; namespaced or cluster-wide, a collection or one object, with a subresource.
// Every segment is escaped (a name is user input).

export interface Resource {
  /** '' for the core group. */
  group: string;
  version: string;
  plural: string;
}

export function resourcePath(
  r: Resource,
  where: { namespace?: string; name?: string; subresource?: string } = {},
): string {
  const seg = encodeURIComponent;
  let path = r.group === '' ? `/api/${r.version}` : `/apis/${r.group}/${r.version}`;
  if (where.namespace !== undefined) path += `/namespaces/${seg(where.namespace)}`;
  path += `/${r.plural}`;
  if (where.name !== undefined) path += `/${seg(where.name)}`;
  if (where.subresource !== undefined) path += `/${where.subresource}`;
  return path;
}

export const CORE = {
  configMaps: { group: '', version: 'v1', plural: 'configmaps' },
  pods: { group: '', version: 'v1', plural: 'pods' },
  pvcs: { group: '', version: 'v1', plural: 'persistentvolumeclaims' },
  events: { group: '', version: 'v1', plural: 'events' },
  serviceAccounts: { group: '', version: 'v1', plural: 'serviceaccounts' },
  jobs: { group: 'batch', version: 'v1', plural: 'jobs' },
  crds: { group: 'apiextensions.k8s.io', version: 'v1', plural: 'customresourcedefinitions' },
} as const satisfies Record<string, Resource>;
