// Turns a JSON object into the values CEL rules see in the API server, typed by the schema:
// `type: integer` becomes a CEL int (BigInt) and `type: number` a double even when it holds 2.0;
// list-type set and map lists become Sets, so that equality ignores their order; elements are
// interned by content, so old and new values share identical elements. Conversion recurses only
// along the schema (finite); values outside it are converted iteratively, at any depth.
// toCelView converts only what a rule reads (src/cel/reads.ts).
import { isObject } from '../json/object.ts';
import { WHOLE, type Reads } from './reads.ts';

/** The structural-schema keywords typing depends on (a subset of JSONSchemaProps). */
export interface CelSchema {
  type?: string;
  format?: string;
  properties?: Record<string, CelSchema>;
  items?: CelSchema;
  additionalProperties?: CelSchema | boolean;
  nullable?: boolean;
  'x-kubernetes-list-type'?: string;
  'x-kubernetes-list-map-keys'?: string[];
  'x-kubernetes-int-or-string'?: boolean;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-embedded-resource'?: boolean;
}

/**
 * One request's conversions: equal elements of set and map lists are interned (the same
 * reference, which is how the CEL library compares Set members), and each (value, schema) pair
 * is converted once, so rules at the root, at spec and below share their subtrees.
 */
export class InternPool {
  // Plain Maps: a pool lives for one request, and WeakMaps cost the garbage collector more.
  readonly #byKey = new Map<string, unknown>();
  readonly #keys = new Map<object, string>();
  readonly #converted = new Map<object, Map<CelSchema | undefined, unknown>>();
  readonly #views = new Map<object, Map<Reads, unknown>>();

  /** A view (toCelView) of a value for one shape of reads, made once per request. */
  view(value: object, reads: Reads, make: () => unknown): unknown {
    let byReads = this.#views.get(value);
    if (byReads === undefined) this.#views.set(value, (byReads = new Map()));
    let view = byReads.get(reads);
    if (view === undefined && !byReads.has(reads)) byReads.set(reads, (view = make()));
    return view;
  }

  intern(value: unknown): unknown {
    if (value === null || typeof value !== 'object') return value;
    const key = this.keyOf(value);
    const known = this.#byKey.get(key);
    if (known !== undefined) return known;
    this.#byKey.set(key, value);
    return value;
  }

  /** canonicalKey, remembered for containers (nested set elements are keyed once, not per level). */
  keyOf(value: object): string {
    let key = this.#keys.get(value);
    if (key === undefined) {
      key = canonicalKey(value, this.#keys);
      this.#keys.set(value, key);
    }
    return key;
  }

  converted(value: object, schema: CelSchema | undefined): unknown {
    return this.#converted.get(value)?.get(schema);
  }

  remember(value: object, schema: CelSchema | undefined, converted: unknown): unknown {
    let bySchema = this.#converted.get(value);
    if (bySchema === undefined) this.#converted.set(value, (bySchema = new Map()));
    bySchema.set(schema, converted);
    return converted;
  }
}

const TWO_63 = 2 ** 63;

let tooDeepKeys = 0;

function scalarKey(v: unknown): string {
  if (v === null || v === undefined) return 'z';
  // Never equal to anything: a rule cannot compare it either.
  if (v instanceof TooDeep) return `T${++tooDeepKeys}`;
  switch (typeof v) {
    case 'boolean':
      return v ? 'b1' : 'b0';
    case 'bigint':
      return `n${v}`;
    case 'number':
      return Number.isInteger(v) && Math.abs(v) < TWO_63 ? `n${BigInt(v)}` : `d${v}`;
    case 'string':
      // Length-prefixed: as unambiguous as quoting, without scanning for characters to escape.
      return `s${v.length}:${v}`;
    default:
      return `?${String(v)}`;
  }
}

/** A map name in a key, length-prefixed like strings. */
function nameKey(name: string): string {
  return `${name.length}:${name}`;
}

/** The key of a map whose values are all scalars (most list items), built in one pass; else undefined. */
function flatMapKey(value: object): string | undefined {
  if (value instanceof Set || Array.isArray(value)) return undefined;
  const map = value as Record<string, unknown>;
  const names = Object.keys(map);
  if (names.length > 1) names.sort();
  let out = '{';
  for (let i = 0; i < names.length; i++) {
    const v = map[names[i]];
    if (v !== null && typeof v === 'object' && !(v instanceof TooDeep)) return undefined;
    out += `${i > 0 ? ',' : ''}${nameKey(names[i])}:${scalarKey(v)}`;
  }
  return `${out}}`;
}

/** A container whose key is being built: its children in key order, and their keys so far. */
interface KeyFrame {
  value: object;
  children: unknown[];
  /** Map keys, sorted (maps only). */
  names: string[] | undefined;
  parts: string[];
}

function keyFrame(value: object): KeyFrame {
  if (value instanceof Set) return { value, children: [...value], names: undefined, parts: [] };
  if (Array.isArray(value)) return { value, children: value, names: undefined, parts: [] };
  const names = Object.keys(value).sort();
  return { value, children: names.map((k) => (value as Record<string, unknown>)[k]), names, parts: [] };
}

function closeKey(f: KeyFrame): string {
  if (f.value instanceof Set) return `S{${f.parts.sort().join(',')}}`;
  if (f.names === undefined) return `[${f.parts.join(',')}]`;
  let out = '{';
  for (let i = 0; i < f.names.length; i++) out += `${i > 0 ? ',' : ''}${nameKey(f.names[i])}:${f.parts[i]}`;
  return `${out}}`;
}

/**
 * A string that is equal for values CEL considers equal (order-free for Sets and maps).
 * Iterative: dynamic values below a schema can nest as deep as the decoder allows.
 */
export function canonicalKey(v: unknown, known?: Map<object, string>): string {
  if (v === null || typeof v !== 'object' || v instanceof TooDeep) return scalarKey(v);
  const flat = flatMapKey(v);
  if (flat !== undefined) return flat;
  const stack: KeyFrame[] = [keyFrame(v)];
  for (;;) {
    const top = stack[stack.length - 1];
    if (top.parts.length < top.children.length) {
      const child = top.children[top.parts.length];
      if (child === null || typeof child !== 'object' || child instanceof TooDeep) top.parts.push(scalarKey(child));
      else {
        const cached = known?.get(child);
        if (cached !== undefined) top.parts.push(cached);
        else stack.push(keyFrame(child));
      }
      continue;
    }
    stack.pop();
    const key = closeKey(top);
    if (stack.length === 0) return key;
    known?.set(top.value, key);
    stack[stack.length - 1].parts.push(key);
  }
}

function newMap(): Record<string, unknown> {
  return Object.create(null) as Record<string, unknown>;
}

/** A JSON container's empty CEL counterpart: an array, or a map without a prototype. */
function emptyLike(value: object): unknown[] | Record<string, unknown> {
  return Array.isArray(value) ? new Array<unknown>(value.length) : newMap();
}

/**
 * How deep an untyped value reaches CEL. The CEL library recurses through values (type checks,
 * equality) and overflows the stack near 10,000 levels; below a schema, only values of the wrong
 * type (which the API server cannot convert either: "invalid data") or under
 * x-kubernetes-preserve-unknown-fields (none in a TrainJob) nest that deep.
 */
export const MAX_DYN_DEPTH = 1_000;
const TOO_DEEP = `a value nested deeper than ${MAX_DYN_DEPTH} levels`;

/**
 * What stands for the part of an untyped value below MAX_DYN_DEPTH: a rule that touches it fails
 * to evaluate with "Unsupported type: a value nested deeper than 1000 levels" (the library names
 * a value by its class), where the API server fails with "invalid data".
 */
export const TooDeep = { [TOO_DEEP]: class {} }[TOO_DEEP];

/**
 * Untyped values (preserve-unknown-fields, or a value of the wrong type for its schema):
 * integral JSON numbers are ints, as in unstructured Go. Iterative, for any depth.
 */
function toDyn(value: unknown): unknown {
  if (typeof value === 'number') return Number.isInteger(value) ? BigInt(value) : value;
  if (value === null || typeof value !== 'object') return value;
  const root = emptyLike(value);
  const stack: Array<[object, unknown[] | Record<string, unknown>, number]> = [[value, root, 1]];
  while (stack.length > 0) {
    const [src, dst, depth] = stack.pop()!;
    const step = (v: unknown): unknown => {
      if (typeof v === 'number') return Number.isInteger(v) ? BigInt(v) : v;
      if (v === null || typeof v !== 'object') return v;
      if (depth >= MAX_DYN_DEPTH) return new TooDeep();
      const copy = emptyLike(v);
      stack.push([v, copy, depth + 1]);
      return copy;
    };
    if (Array.isArray(src)) {
      const out = dst as unknown[];
      for (let i = 0; i < src.length; i++) out[i] = step(src[i]);
    } else {
      const out = dst as Record<string, unknown>;
      for (const [k, v] of Object.entries(src)) out[k] = step(v);
    }
  }
  return root;
}

function toInteger(value: unknown): unknown {
  if (typeof value === 'number' && Number.isInteger(value)) return BigInt(value);
  return value;
}

/**
 * A map whose list fields convert when a rule first reads them (then stay converted): a rule
 * reads a few fields, and a long list it never reads (60,000 env entries beside the numNodes a
 * table row reads) cost most of a decision to convert and intern. Only lists get accessors:
 * giving every converted map its own accessors made V8 keep ~146 MiB of heap (bench/PROFILE.md).
 * The CEL library reads maps through own enumerable keys, so accessors serve it.
 */
function toObject(
  value: Record<string, unknown>,
  schema: CelSchema,
  pool: InternPool,
  skip?: string,
): Record<string, unknown> {
  const out = newMap();
  const additional = typeof schema.additionalProperties === 'object' ? schema.additionalProperties : undefined;
  for (const [k, v] of Object.entries(value)) {
    if (k === skip) {
      out[k] = null; // keeps the key's place; the caller fills it in
      continue;
    }
    const propSchema = schema.properties?.[k] ?? additional;
    if (!Array.isArray(v) || v.length < LAZY_LIST_LENGTH) {
      out[k] = propSchema ? toCelValue(v, propSchema, pool) : toDyn(v);
      continue;
    }
    Object.defineProperty(out, k, {
      enumerable: true,
      configurable: true,
      get() {
        const converted = propSchema ? toCelValue(v, propSchema, pool) : toDyn(v);
        Object.defineProperty(out, k, { value: converted, enumerable: true, configurable: true, writable: true });
        return converted;
      },
    });
  }
  return out;
}

/** Lists this long convert on first read; shorter ones at once (an accessor costs more than they do). */
const LAZY_LIST_LENGTH = 64;

/** Converts one JSON value under its schema (undefined schema: dynamic typing). */
export function toCelValue(value: unknown, schema: CelSchema | undefined, pool: InternPool): unknown {
  if (value === null || value === undefined) return null;
  if (typeof value !== 'object') return convertScalar(value, schema);
  const done = pool.converted(value, schema);
  return done !== undefined ? done : pool.remember(value, schema, convertContainer(value, schema, pool));
}

/** A list item: not remembered (rules sit on fields, and a long list would fill the pool). */
function toCelItem(value: unknown, schema: CelSchema | undefined, pool: InternPool): unknown {
  if (value === null || value === undefined) return null;
  if (typeof value !== 'object') return convertScalar(value, schema);
  return pool.converted(value, schema) ?? convertContainer(value, schema, pool);
}

function convertScalar(value: unknown, schema: CelSchema | undefined): unknown {
  if (!schema) return toDyn(value);
  if (schema['x-kubernetes-int-or-string'] || schema.type === 'integer') return toInteger(value);
  if (schema.type === 'number') return typeof value === 'bigint' ? Number(value) : value;
  return schema.type === undefined || schema.type === 'array' || schema.type === 'object' ? toDyn(value) : value;
}

/**
 * Recurses only where the schema goes (its depth is finite). A container where the schema wants
 * something else (a type error, ratcheted when unchanged) is converted untyped, iteratively.
 */
function convertContainer(value: object, schema: CelSchema | undefined, pool: InternPool): unknown {
  if (schema?.type === 'array' && !schema['x-kubernetes-int-or-string'] && Array.isArray(value)) {
    const items = value.map((x) => toCelItem(x, schema.items, pool));
    const listType = schema['x-kubernetes-list-type'];
    if (listType === 'set' || listType === 'map') return new Set(items.map((x) => pool.intern(x)));
    return items;
  }
  if (schema?.type === 'object' && !schema['x-kubernetes-int-or-string'] && !Array.isArray(value)) {
    return toObject(value as Record<string, unknown>, schema, pool);
  }
  return toDyn(value);
}

/**
 * The root object read whole by a rule at the root. The API server narrows the root's metadata to
 * `name` and `generateName` in the *schema* (model.WithTypeAndObjectMeta), so a rule can select no
 * other field of it (refused when the rule compiles), but the *value* stays the whole map: size()
 * and equality (unstructuredMap.Size/Equal in k8s.io/apiserver/pkg/cel/common) see every key, so
 * `self == oldSelf` and `self.metadata == oldSelf.metadata` fail when a label or the generation
 * changed. Metadata read whole is therefore converted whole, for self and oldSelf alike.
 */
export function toCelRoot(obj: Record<string, unknown>, schema: CelSchema, pool: InternPool): Record<string, unknown> {
  const meta = obj.metadata;
  if (!meta || typeof meta !== 'object' || Array.isArray(meta)) return toObject(obj, schema, pool);
  const out = toObject(obj, schema, pool, 'metadata');
  out.metadata = wholeMetadata(meta as Record<string, unknown>);
  return out;
}

/**
 * The root's metadata where a rule only selects its declared fields: name and generateName
 * (strings: ObjectMeta is typed).
 */
function visibleMetadata(m: Record<string, unknown>): Record<string, unknown> {
  const visible = newMap();
  if (typeof m.name === 'string') visible.name = m.name;
  if (typeof m.generateName === 'string') visible.generateName = m.generateName;
  return visible;
}

/**
 * The root's metadata read whole: every key (for size() and equality), name and generateName as
 * visibleMetadata has them.
 */
function wholeMetadata(m: Record<string, unknown>): Record<string, unknown> {
  const whole = toDyn(m) as Record<string, unknown>;
  delete whole.name;
  delete whole.generateName;
  return Object.assign(whole, visibleMetadata(m));
}

/** A root rule's reads of metadata that CEL answers from the two declared fields alone. */
function selectsDeclaredOnly(reads: Reads): boolean {
  if (reads === WHOLE) return false;
  for (const [k, below] of reads) if ((k !== 'name' && k !== 'generateName') || below !== WHOLE) return false;
  return true;
}

/** A schema whose value toObject converts (a typed object): only there can a view select fields. */
function isObjectSchema(schema: CelSchema | undefined): schema is CelSchema {
  return schema?.type === 'object' && !schema['x-kubernetes-int-or-string'];
}

/**
 * The part of a value a rule reads (src/cel/reads.ts), as toCelValue would convert it: along each
 * chain of selections, a map of the selected fields that exist (in the value's key order), and at
 * each chain's end the field converted whole. Where the value is not a typed object (a list, a
 * scalar, a value of the wrong type, an untyped value), it is converted whole: a view differs from
 * the whole value only in keys no selection names. `root`: the object at the root of a CRD, whose
 * metadata's fields CEL can select are name and generateName alone, but which is the whole map
 * where it is read whole (toCelRoot).
 */
export function toCelView(
  value: unknown,
  schema: CelSchema | undefined,
  reads: Reads,
  pool: InternPool,
  root = false,
): unknown {
  if (value === null || typeof value !== 'object') return toCelValue(value, schema, pool);
  if (reads === WHOLE || Array.isArray(value) || !isObjectSchema(schema)) {
    if (!root || Array.isArray(value)) return toCelValue(value, schema, pool);
    return pool.view(value, WHOLE, () => toCelRoot(value as Record<string, unknown>, schema ?? {}, pool));
  }
  return pool.view(value, reads, () => {
    const obj = value as Record<string, unknown>;
    const out = newMap();
    const additional = typeof schema.additionalProperties === 'object' ? schema.additionalProperties : undefined;
    const meta = obj.metadata;
    const restrictMeta = root && isObject(meta);
    for (const k of Object.keys(obj)) {
      const below = reads.get(k);
      if (below === undefined) continue;
      if (restrictMeta && k === 'metadata') {
        // A selection of another field is refused when the API server compiles the rule; here it sees the whole map.
        out[k] = selectsDeclaredOnly(below)
          ? visibleMetadata(meta as Record<string, unknown>)
          : wholeMetadata(meta as Record<string, unknown>);
        continue;
      }
      const propSchema = schema.properties?.[k] ?? additional;
      out[k] = propSchema ? toCelView(obj[k], propSchema, below, pool) : toDyn(obj[k]);
    }
    return out;
  });
}
