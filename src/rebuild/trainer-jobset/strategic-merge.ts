// A strategic merge patch over a JobSet spec, as Trainer merges `runtimePatches` into the
// runtime's JobSet template. Lists merge by the patch merge keys of the Kubernetes (and JobSet)
// Go types; every other list is replaced. `null` deletes a field; `$patch: replace|delete` are
// honoured on objects and list items. Pure; the inputs are not modified.
import { type Obj } from '../../api/objects.ts';
import { isObject } from '../../json/object.ts';

/** Patch merge keys by field name (core/v1 PodSpec and Container, JobSet's ReplicatedJob). */
const MERGE_KEYS: Record<string, string> = {
  replicatedJobs: 'name',
  containers: 'name',
  initContainers: 'name',
  ephemeralContainers: 'name',
  env: 'name',
  volumes: 'name',
  volumeMounts: 'mountPath',
  ports: 'containerPort',
  imagePullSecrets: 'name',
  schedulingGates: 'name',
  resourceClaims: 'name',
  hostAliases: 'ip',
};

export function strategicMerge(original: unknown, patch: unknown, field = ''): unknown {
  if (isObject(patch)) {
    if (patch.$patch === 'replace') return withoutDirective(patch);
    const base = isObject(original) ? original : {};
    const out: Obj = { ...base };
    for (const [k, v] of Object.entries(patch)) {
      if (k === '$patch') continue;
      if (v === null) delete out[k];
      else out[k] = strategicMerge(base[k], v, k);
    }
    return out;
  }
  if (Array.isArray(patch)) {
    const key = MERGE_KEYS[field];
    return key && Array.isArray(original)
      ? mergeList(original, patch, key)
      : patch.map((item) => (isObject(item) ? withoutDirective(item) : item));
  }
  return patch;
}

function withoutDirective(obj: Obj): Obj {
  const { $patch: _directive, ...rest } = obj;
  return rest;
}

function mergeList(original: unknown[], patch: unknown[], key: string): unknown[] {
  const out = [...original];
  for (const item of patch) {
    if (!isObject(item) || !(key in item)) {
      out.push(item);
      continue;
    }
    const at = out.findIndex((o) => isObject(o) && o[key] === item[key]);
    if (item.$patch === 'delete') {
      if (at >= 0) out.splice(at, 1);
    } else if (at >= 0) {
      out[at] = strategicMerge(out[at], item);
    } else {
      out.push(withoutDirective(item));
    }
  }
  return out;
}
