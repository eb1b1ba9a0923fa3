// After the restorer's JSON patch: the managed fields that give back what that patch took, so
// that Trainer's next `helm upgrade` cannot fail on a conflict with the restorer. Pure.
//
// Why it is needed: `spec.versions` of a CRD is an atomic list for server-side apply
// (`+listType=atomic`, k8s.io/apiextensions-apiserver pkg/apis/apiextensions/v1/types.go:59), so
// whoever writes one rule inside it owns the whole list, and the other managers lose it (an
// update takes what it changed: sigs.k8s.io/structured-merge-diff/v6 merge/update.go:131, forced
// for updates). Helm 4 upgrades by server-side apply of the whole CRD under the manager "helm",
// without force unless `--force-conflicts` is given (helm.sh/helm/v4 cmd/helm/helm.go:36,
// pkg/kube/client.go:1241-1257), so its next upgrade would fail with a conflict on `.spec.versions`
// against whoever patched the CRD (`kubectl patch` included). Helm 3 patches with a three-way
// strategic merge (v3 pkg/kube/client.go:652-712: a typed v1 CRD, `versions` replaced whole) and
// never conflicts.
//
// So the restorer disclaims the field: a second patch sets metadata.managedFields to what they are,
// minus `.spec.versions` in the restorer's own entry and in every other Update entry (an entry goes
// when nothing is left in it). The API server keeps managed fields a request sets, and a request
// that changes nothing else takes no field for its manager (k8s.io/apimachinery
// pkg/util/managedfields/internal/fieldmanager.go:120-140, managedfieldsupdater.go). The list is
// then owned by nobody, and the next applier (Helm 4, kubectl apply --server-side, a GitOps tool)
// takes it without a conflict.
type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The entry's fieldsV1 without f:spec.f:versions; undefined when it did not own it (or is not a fields trie). */
function withoutVersions(fieldsV1: unknown): Obj | undefined {
  if (!isObj(fieldsV1) || !Object.hasOwn(fieldsV1, 'f:spec')) return undefined;
  const spec = fieldsV1['f:spec'];
  if (!isObj(spec) || !Object.hasOwn(spec, 'f:versions')) return undefined;
  const { 'f:versions': _versions, ...restSpec } = spec;
  const { 'f:spec': _spec, ...rest } = fieldsV1;
  return Object.keys(restSpec).length > 0 ? { ...rest, 'f:spec': restSpec } : rest;
}

/**
 * The JSON patch that drops `.spec.versions` from the entries of `fieldManager` and of every
 * `Update` operation in the CRD's managed fields (after a test of its resourceVersion): a
 * `kubectl patch` of the install (manager `kubectl-patch`, an Update) owns the list as much as
 * the restorer's own write, and would make Helm 4's next apply conflict just the same, while an
 * `Apply` owner (Helm 4 itself) keeps what it applies. Undefined when no such entry owns it
 * (nothing to give back) or the object has no managed fields to edit. Never throws.
 */
export function disclaimVersionsOps(crd: unknown, fieldManager: string): unknown[] | undefined {
  const meta = isObj(crd) ? crd.metadata : undefined;
  if (!isObj(meta)) return undefined;
  const rv = meta.resourceVersion;
  const entries = meta.managedFields;
  if (typeof rv !== 'string' || rv === '' || !Array.isArray(entries)) return undefined;
  let changed = false;
  const kept: unknown[] = [];
  for (const entry of entries) {
    const fields =
      isObj(entry) && (entry.manager === fieldManager || entry.operation === 'Update')
        ? withoutVersions(entry.fieldsV1)
        : undefined;
    if (!fields) {
      kept.push(entry);
      continue;
    }
    changed = true;
    if (Object.keys(fields).length > 0) kept.push({ ...(entry as Obj), fieldsV1: fields });
  }
  if (!changed) return undefined;
  return [
    { op: 'test', path: '/metadata/resourceVersion', value: rv },
    { op: 'replace', path: '/metadata/managedFields', value: kept },
  ];
}
