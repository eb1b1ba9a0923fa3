// The values a rule applies to, found the way the API server's CEL validator finds them (src/crd:
// valuesAt, and correlate for UPDATE): every concrete path matching a schema location such as
// `spec.runtimePatches[*].manager`, with the old value it correlates with (transition rules'
// oldSelf: through object fields, map keys and list-type=map items, never set or atomic list
// items) and whether an error there is ratcheted.
import { correlatedOld, ratchetStateAt, shouldRatchet, valuesAt, type Correlation, type SchemaNode } from '../crd/index.ts';
import type { CelSchema } from './values.ts';

export interface Located {
  /** Kubernetes field path, e.g. `spec.runtimePatches[0].manager` ('' for the root). */
  path: string;
  value: unknown;
  /** The correlated old value; `undefined` when there is none (CREATE, absent, not correlatable). */
  oldValue: unknown;
  /** The raw schema at the location (types the CEL values). */
  schema: CelSchema;
  /** UPDATE only: the value (or its nearest correlatable ancestor) is unchanged, so errors here become warnings. */
  ratchet: boolean;
}

/** Every value at `location` in `obj`; with a correlation (UPDATE), each with its old value. */
export function locate(root: SchemaNode, location: string, obj: unknown, correlation?: Correlation): Located[] {
  return valuesAt(root, obj, location).map((v) => {
    if (!correlation) return { path: v.path, value: v.value, oldValue: undefined, schema: v.schema.raw as CelSchema, ratchet: false };
    const old = correlatedOld(correlation, v.segments);
    return {
      path: v.path,
      value: v.value,
      oldValue: old.correlated ? old.oldValue : undefined,
      schema: v.schema.raw as CelSchema,
      ratchet: shouldRatchet(ratchetStateAt(correlation, v.segments)),
    };
  });
}
