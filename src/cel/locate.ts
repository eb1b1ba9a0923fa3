// Finds the values a rule applies to: every concrete path matching a schema location such as
// `spec.runtimePatches[*].manager`, each with the old value it correlates with, the way the API
// server correlates old and new for transition rules and ratcheting: through object fields and
// map keys, through list-type=map lists by their keys, through set lists by value; never
// through atomic lists.
import type { CelSchema } from './values.ts';
import { canonicalKey } from './values.ts';

export interface Located {
  /** Kubernetes field path, e.g. `spec.runtimePatches[0].manager` ('' for the root). */
  path: string;
  value: unknown;
  /** The correlated old value; `undefined` when there is none (absent or not correlatable). */
  oldValue: unknown;
  schema: CelSchema | undefined;
}

/** `spec.runtimePatches[*].manager` → ['spec', 'runtimePatches', '*', 'manager']. */
export function parseLocation(location: string): string[] {
  if (location === '') return [];
  return location.replace(/\[\*\]/g, '.*').split('.').filter((s) => s !== '');
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function child(path: string, name: string): string {
  return path ? `${path}.${name}` : name;
}

function mapListKey(item: unknown, keys: readonly string[]): string | undefined {
  if (!isObject(item)) return undefined;
  return canonicalKey(keys.map((k) => item[k] ?? null));
}

/** The old list element a new one correlates with, if the list type allows correlation. */
function correlateItem(item: unknown, oldList: unknown, schema: CelSchema | undefined): unknown {
  if (!Array.isArray(oldList) || !schema) return undefined;
  const listType = schema['x-kubernetes-list-type'];
  if (listType === 'map') {
    const keys = schema['x-kubernetes-list-map-keys'] ?? [];
    const key = mapListKey(item, keys);
    if (key === undefined) return undefined;
    return oldList.find((o) => mapListKey(o, keys) === key);
  }
  if (listType === 'set') {
    const key = canonicalKey(item);
    return oldList.find((o) => canonicalKey(o) === key);
  }
  return undefined;
}

function childSchema(schema: CelSchema | undefined, name: string): CelSchema | undefined {
  if (!schema) return undefined;
  if (schema.properties?.[name]) return schema.properties[name];
  return typeof schema.additionalProperties === 'object' ? schema.additionalProperties : undefined;
}

/** Every value at `segments` below `start`, with its correlated old value. */
export function locate(segments: readonly string[], start: Located): Located[] {
  let current: Located[] = [start];
  for (const segment of segments) {
    const next: Located[] = [];
    for (const at of current) {
      if (segment === '*' && Array.isArray(at.value)) {
        at.value.forEach((item, i) => {
          next.push({ path: `${at.path}[${i}]`, value: item, oldValue: correlateItem(item, at.oldValue, at.schema), schema: at.schema?.items });
        });
      } else if (segment === '*' && isObject(at.value)) {
        for (const [key, value] of Object.entries(at.value)) {
          const oldValue = isObject(at.oldValue) ? at.oldValue[key] : undefined;
          next.push({ path: `${at.path}[${key}]`, value, oldValue, schema: childSchema(at.schema, key) });
        }
      } else if (segment !== '*' && isObject(at.value) && Object.hasOwn(at.value, segment)) {
        const oldValue = isObject(at.oldValue) && Object.hasOwn(at.oldValue, segment) ? at.oldValue[segment] : undefined;
        next.push({ path: child(at.path, segment), value: at.value[segment], oldValue, schema: childSchema(at.schema, segment) });
      }
    }
    current = next;
  }
  return current.filter((at) => at.value !== undefined && at.value !== null);
}

/** The schema at a location (for typing values), following properties, items and additionalProperties. */
export function schemaAt(root: CelSchema | undefined, segments: readonly string[]): CelSchema | undefined {
  let s = root;
  for (const segment of segments) {
    if (!s) return undefined;
    s = segment === '*' ? (s.items ?? (typeof s.additionalProperties === 'object' ? s.additionalProperties : undefined)) : childSchema(s, segment);
  }
  return s;
}
