// UPDATE ratcheting (CRDValidationRatcheting, GA in 1.33, KEP-4008): an error in a value the
// update leaves unchanged is not reported. Old and new values are correlated exactly like
// k8s.io/apiserver/pkg/cel/common/equality.go (CorrelatedObject): through object fields and map
// keys the schema knows, through `x-kubernetes-list-type: map` lists by their keys, and never
// through set or atomic lists (those compare as a whole, in order).
import type { SchemaNode } from './schema.ts';
import type { PathSegment } from './paths.ts';
import { parseFieldPath } from './paths.ts';
import { canonicalJson, hasOwn, kindOf, ownKeys, semanticEqual } from './values.ts';
import { isObject, type JsonObject } from '../json/object.ts';

export { semanticEqual } from './values.ts';

const KEY_DELIMITER = '\u0000';

/** Go's composite key of a map-list item (common/maplist.go); undefined when the item has none. */
function mapListKey(item: JsonObject, keys: readonly string[]): string | undefined {
  const scalar = (v: unknown): string | undefined => {
    const kind = kindOf(v);
    // Only bool, int64, float64 and string are keys; Go keeps int64(1) and float64(1) apart.
    return kind === 'boolean' || kind === 'int' || kind === 'float' || kind === 'string'
      ? `${kind}:${canonicalJson(v)}`
      : undefined;
  };
  if (keys.length === 1) {
    if (!hasOwn(item, keys[0])) return undefined;
    const only = item[keys[0]];
    // The common case, a string key alone: no delimiter follows it, so it needs no quoting.
    return typeof only === 'string' ? `string:${only}` : scalar(only);
  }
  let out = '';
  for (const k of keys) {
    if (!hasOwn(item, k)) return undefined;
    const part = scalar(item[k]);
    if (part === undefined) return undefined;
    out += KEY_DELIMITER + part;
  }
  return out;
}

/** The old items of a map list by key, first occurrence winning (MakeMapList + Get). */
class MapList {
  readonly #byKey = new Map<string, JsonObject>();
  readonly #keys: readonly string[];

  constructor(schema: SchemaNode, items: readonly unknown[]) {
    this.#keys = schema.listMapKeys;
    const usable = schema.type === 'array' && schema.listType === 'map' && schema.listMapKeys.length > 0;
    if (!usable) return;
    for (const item of items) {
      if (!isObject(item)) continue;
      const key = mapListKey(item, this.#keys);
      if (key !== undefined && !this.#byKey.has(key)) this.#byKey.set(key, item);
    }
  }

  get(item: unknown): JsonObject | undefined {
    if (!isObject(item) || this.#keys.length === 0) return undefined;
    const key = mapListKey(item, this.#keys);
    return key === undefined ? undefined : this.#byKey.get(key);
  }
}

/**
 * A node of the new object with the old value it correlates with. `key`/`index` step down;
 * null means "not correlatable" (absent on one side, unknown to the schema, or an item of a
 * set/atomic list). `deepEqual` is CorrelatedObject.CachedDeepEqual.
 */
export class Correlation {
  readonly value: unknown;
  readonly oldValue: unknown;
  readonly schema: SchemaNode | undefined;
  #children = new Map<PathSegment, Correlation | null>();
  #equal: boolean | undefined;
  #mapList: MapList | undefined;
  /** Equality of the new containers already compared, shared by the whole correlation (see correlatedEqual). */
  readonly #known: Map<object, boolean>;

  constructor(value: unknown, oldValue: unknown, schema: SchemaNode | undefined, known = new Map<object, boolean>()) {
    this.value = value;
    this.oldValue = oldValue;
    this.schema = schema;
    this.#known = known;
  }

  key(field: string): Correlation | null {
    if (this.schema === undefined) return null;
    const cached = this.#children.get(field);
    if (cached !== undefined) return cached;
    let child: Correlation | null = null;
    if (isObject(this.value) && isObject(this.oldValue) && hasOwn(this.value, field) && hasOwn(this.oldValue, field)) {
      const schema = this.schema.properties?.get(field) ?? this.schema.additionalProperties;
      if (schema !== undefined) child = new Correlation(this.value[field], this.oldValue[field], schema, this.#known);
    }
    this.#children.set(field, child);
    return child;
  }

  index(i: number): Correlation | null {
    if (this.schema === undefined) return null;
    const cached = this.#children.get(i);
    if (cached !== undefined) return cached;
    let child: Correlation | null = null;
    if (Array.isArray(this.value) && i >= 0 && i < this.value.length) {
      const old = this.#oldItemFor(this.value[i]);
      if (old !== undefined && this.schema.items !== undefined)
        child = new Correlation(this.value[i], old, this.schema.items, this.#known);
    }
    this.#children.set(i, child);
    return child;
  }

  /** Only map lists correlate items; the key index is built on first use, like Go's. */
  #oldItemFor(item: unknown): unknown {
    if (!Array.isArray(this.oldValue) || this.schema?.listType !== 'map') return undefined;
    this.#mapList ??= new MapList(this.schema, this.oldValue);
    return this.#mapList.get(item);
  }

  deepEqual(): boolean {
    if (this.#equal === undefined) this.#equal = this.#computeEqual();
    return this.#equal;
  }

  #computeEqual(): boolean {
    // The same answer without a Correlation per node (most of an update is unchanged, and
    // building a correlated tree to compare it was most of the schema side's cost); the walk
    // below is the reference, kept for the tests (test/crd/ratchet.test.ts compares the two).
    if (this.schema !== undefined && !correlationTreeEquality)
      return correlatedEqual(this.schema, this.value, this.oldValue, this.#known);
    return this.#treeEqual();
  }

  // eslint-disable-next-line complexity -- CachedDeepEqual's cases (nil, list, object, scalar) over Correlations
  #treeEqual(): boolean {
    const nv = this.value ?? null;
    const ov = this.oldValue ?? null;
    if (nv === null && ov === null) return true;
    if (nv === null || ov === null) return false;
    if (Array.isArray(nv) !== Array.isArray(ov) || isObject(nv) !== isObject(ov)) return false;
    if (Array.isArray(nv)) {
      const oldList = ov as unknown[];
      if (nv.length !== oldList.length) return false;
      for (let i = 0; i < nv.length; i++) {
        const child = this.index(i);
        if (child === null) return this.#mapList === undefined ? semanticEqual(oldList, nv) : false;
        if (!child.deepEqual()) return false;
      }
      return true;
    }
    if (isObject(nv)) {
      const keys = ownKeys(nv);
      if (keys.length !== ownKeys(ov as JsonObject).length) return false;
      for (const k of keys) {
        const child = this.key(k);
        if (child === null || !child.deepEqual()) return false;
      }
      return true;
    }
    return semanticEqual(ov, nv);
  }
}

/** Tests only: compare through the tree of Correlations, as before correlatedEqual. */
let correlationTreeEquality = false;
export function useCorrelationTreeEquality(on: boolean): void {
  correlationTreeEquality = on;
}

/**
 * Correlation.deepEqual of a new value and its correlated old value under `schema`
 * (CorrelatedObject.CachedDeepEqual), without building Correlations: object fields correlate by
 * name where the schema knows them (a field it does not know makes the objects unequal), map-list
 * items by key (an item without a key or without an old item makes the lists unequal), and other
 * lists compare as a whole. Recursion follows the schema, whose depth is finite; below it,
 * semanticEqual (iterative).
 *
 * `known` remembers each new container's answer: ratcheting asks again at every level on the way
 * to a change (the parent's comparison walks its children up to the change, then each child is
 * asked on its own). A new container sits at one path of one object, so its correlated old value
 * and schema are always the same and so is the answer.
 */
function correlatedEqual(schema: SchemaNode, value: unknown, oldValue: unknown, known: Map<object, boolean>): boolean {
  const nv = value ?? null;
  const ov = oldValue ?? null;
  if (nv === null && ov === null) return true;
  if (nv === null || ov === null) return false;
  if (typeof nv !== 'object') return correlatedEqualAt(schema, nv, ov, known);
  let equal = known.get(nv);
  if (equal === undefined) known.set(nv, (equal = correlatedEqualAt(schema, nv, ov, known)));
  return equal;
}

// eslint-disable-next-line complexity -- CachedDeepEqual's cases (map list, other list, object, scalar) by schema
function correlatedEqualAt(schema: SchemaNode, nv: unknown, ov: unknown, known: Map<object, boolean>): boolean {
  const newIsArray = Array.isArray(nv);
  if (newIsArray !== Array.isArray(ov) || isObject(nv) !== isObject(ov)) return false;
  if (newIsArray) {
    const list = nv as unknown[];
    const oldList = ov as unknown[];
    if (list.length !== oldList.length) return false;
    if (list.length === 0) return true;
    if (schema.listType !== 'map') return semanticEqual(oldList, list);
    const items = schema.items;
    if (items === undefined) return false;
    const old = new MapList(schema, oldList);
    for (const item of list) {
      const oldItem = old.get(item);
      if (oldItem === undefined || !correlatedEqual(items, item, oldItem, known)) return false;
    }
    return true;
  }
  if (isObject(nv)) {
    const o = ov as JsonObject;
    const keys = ownKeys(nv);
    if (keys.length !== ownKeys(o).length) return false;
    for (const k of keys) {
      if (!hasOwn(o, k)) return false;
      const child = schema.properties?.get(k) ?? schema.additionalProperties;
      if (child === undefined || !correlatedEqual(child, nv[k], o[k], known)) return false;
    }
    return true;
  }
  return semanticEqual(ov, nv);
}

/** The correlation of a whole object, for one UPDATE. */
export function correlate(schema: SchemaNode, newObj: unknown, oldObj: unknown): Correlation {
  return new Correlation(newObj, oldObj, schema);
}

/** The correlation state at a node: the node itself, or the nearest correlatable ancestor. */
export interface RatchetState {
  current: Correlation | null;
  nearest: Correlation | null;
}

/** The state at the root of an UPDATE. */
export function ratchetRoot(root: Correlation): RatchetState {
  return { current: root, nearest: null };
}

/**
 * One step down, as the CEL validator steps (schema/cel/validation.go ratchetingOptions):
 * apiVersion and kind at the root are never correlated (both sides are converted to one version).
 */
export function ratchetStep(state: RatchetState, segment: PathSegment): RatchetState {
  const { current } = state;
  if (current === null) return state;
  if (state.nearest === null && (segment === 'apiVersion' || segment === 'kind'))
    return { current: null, nearest: null };
  const next =
    typeof segment === 'number' && Array.isArray(current.value) ? current.index(segment) : current.key(String(segment));
  return { current: next, nearest: current };
}

/** Errors raised at this node are ratcheted: it, or else its nearest correlatable ancestor, is unchanged. */
export function shouldRatchet(state: RatchetState): boolean {
  if (state.current !== null) return state.current.deepEqual();
  return state.nearest?.deepEqual() ?? false;
}

/** Walks a field path (segments, or a string such as `spec.trainer.env[0]`) from the root. */
export function ratchetStateAt(root: Correlation, path: string | readonly PathSegment[]): RatchetState {
  const segments = typeof path === 'string' ? parseFieldPath(path) : path;
  let state = ratchetRoot(root);
  for (const segment of segments) state = ratchetStep(state, segment);
  return state;
}

/**
 * The old value correlated with the new value at `path`, or `{ correlated: false }` when there
 * is none (absent on either side, or below a set/atomic list item). This is also what a CEL
 * transition rule sees as `oldSelf`.
 */
export function correlatedOld(
  root: Correlation,
  path: string | readonly PathSegment[],
): { correlated: true; oldValue: unknown } | { correlated: false } {
  const { current } = ratchetStateAt(root, path);
  return current === null ? { correlated: false } : { correlated: true, oldValue: current.oldValue };
}
