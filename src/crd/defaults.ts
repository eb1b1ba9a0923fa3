// Structural defaulting as the API server does it after decoding a custom resource
// (apiextensions-apiserver schema/defaulting/algorithm.go): a property's default fills it when
// the property is absent, or null where the schema does not allow null; defaults apply inside
// every object that exists, including list items and additionalProperties values.
import type { SchemaNode } from './schema.ts';
import { deepClone, hasOwn, ownKeys, setOwn } from './values.ts';
import { isObject } from '../json/object.ts';

function isNonNullableNull(v: unknown, s: SchemaNode | undefined): s is SchemaNode {
  return v === null && s !== undefined && !s.nullable;
}

/** What defaulting does under a schema node: its properties that have a default, and whether any node below has one. */
interface DefaultsPlan {
  defaulted: Array<[string, SchemaNode]>;
  anyBelow: boolean;
}

const plans = new WeakMap<SchemaNode, DefaultsPlan>();

/**
 * Computed once per schema node: most of a TrainJob's schema has no default, and a subtree without
 * any is not walked.
 */
function planOf(s: SchemaNode): DefaultsPlan {
  let plan = plans.get(s);
  if (plan !== undefined) return plan;
  // Placeholder while the children are planned: a schema that reached itself would be walked, never skipped.
  plans.set(s, { defaulted: [], anyBelow: true });
  const defaulted: Array<[string, SchemaNode]> = [];
  let anyBelow = false;
  for (const [k, prop] of s.properties ?? []) {
    if (prop.default !== undefined) defaulted.push([k, prop]);
    if (prop.default !== undefined || planOf(prop).anyBelow) anyBelow = true;
  }
  for (const child of [s.additionalProperties, s.items]) {
    if (child !== undefined && (child.default !== undefined || planOf(child).anyBelow)) anyBelow = true;
  }
  plan = { defaulted, anyBelow };
  plans.set(s, plan);
  return plan;
}

/** Defaulting in place (Go's Default): the caller owns `x`. */
// eslint-disable-next-line complexity -- algorithm.go's Default: properties, additionalProperties, items in one walk
export function applyDefaultsInPlace(x: unknown, s: SchemaNode | undefined): void {
  if (s === undefined) return;
  const plan = planOf(s);
  if (!plan.anyBelow) return;
  if (isObject(x)) {
    for (const [k, prop] of plan.defaulted) {
      if (!hasOwn(x, k) || isNonNullableNull(x[k], prop)) setOwn(x, k, deepClone(prop.default!.value));
    }
    for (const k of ownKeys(x)) {
      const prop = s.properties?.get(k);
      if (prop !== undefined) {
        applyDefaultsInPlace(x[k], prop);
      } else if (s.additionalProperties !== undefined) {
        const ap = s.additionalProperties;
        if (isNonNullableNull(x[k], ap) && ap.default !== undefined) setOwn(x, k, deepClone(ap.default.value));
        applyDefaultsInPlace(x[k], ap);
      }
    }
  } else if (Array.isArray(x)) {
    for (let i = 0; i < x.length; i++) {
      if (isNonNullableNull(x[i], s.items) && s.items.default !== undefined) x[i] = deepClone(s.items.default.value);
      applyDefaultsInPlace(x[i], s.items);
    }
  }
}

/** A defaulted copy of `obj`; the input is not modified. */
export function applyDefaults(schema: SchemaNode, obj: unknown): unknown {
  const copy = deepClone(obj);
  applyDefaultsInPlace(copy, schema);
  return copy;
}
