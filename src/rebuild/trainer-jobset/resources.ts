// Trainer v2.3.0's MergeResourceRequirements (pkg/util/trainingruntime): the TrainJob's
// resourcesPerNode is a strategic merge patch over the runtime node's resources, so a runtime GPU
// limit survives a TrainJob that only sets requests. limits and requests merge by resource name,
// claims by name (Trainer's own patch meta); what the patch leaves out is kept. Pure.
import type { Container } from '../../api/objects.ts';
import { isObject } from '../../json/object.ts';
import { strategicMerge } from './strategic-merge.ts';

type Resources = NonNullable<Container['resources']> & { claims?: unknown[] };

/** Go marshals both sides with omitempty: an empty map or list is absent on either side. */
function nonEmpty(r: Resources | undefined): Resources {
  return Object.fromEntries(
    Object.entries(r ?? {}).filter(([, v]) =>
      Array.isArray(v) ? v.length > 0 : isObject(v) && Object.keys(v).length > 0,
    ),
  );
}

export function mergeResources(base: Resources | undefined, override: Resources): Resources {
  const b = nonEmpty(base);
  const o = nonEmpty(override);
  const merged: Resources = {};
  for (const key of ['limits', 'requests'] as const) {
    const m = strategicMerge(b[key], o[key]);
    if (o[key] || b[key]) merged[key] = (o[key] ? m : b[key]) as Resources[typeof key];
  }
  if (b.claims || o.claims) {
    const claims = [...(b.claims ?? [])];
    for (const c of o.claims ?? []) {
      const at = claims.findIndex((x) => isObject(x) && isObject(c) && x.name === c.name);
      if (at >= 0) claims[at] = strategicMerge(claims[at], c);
      else claims.push(c);
    }
    merged.claims = claims;
  }
  return nonEmpty(merged);
}
