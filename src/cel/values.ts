// Turns a JSON object into the values CEL rules see in the API server, typed by the schema:
// `type: integer` becomes a CEL int (BigInt) and `type: number` a double even when it holds 2.0;
// list-type set and map lists become Sets, so that equality ignores their order; elements are
// interned by content, so old and new values share identical elements.

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

/** Shared by the conversions of one request's objects, so equal elements are the same reference. */
export class InternPool {
  readonly #byKey = new Map<string, unknown>();

  intern(value: unknown): unknown {
    if (value === null || typeof value !== 'object') return value;
    const key = canonicalKey(value);
    const known = this.#byKey.get(key);
    if (known !== undefined) return known;
    this.#byKey.set(key, value);
    return value;
  }
}

const TWO_63 = 2 ** 63;

/** A string that is equal for values CEL considers equal (order-free for Sets and maps). */
export function canonicalKey(v: unknown): string {
  if (v === null || v === undefined) return 'z';
  switch (typeof v) {
    case 'boolean':
      return v ? 'b1' : 'b0';
    case 'bigint':
      return `n${v}`;
    case 'number':
      return Number.isInteger(v) && Math.abs(v) < TWO_63 ? `n${BigInt(v)}` : `d${v}`;
    case 'string':
      return `s${JSON.stringify(v)}`;
    case 'object':
      if (v instanceof Set) return `S{${[...v].map(canonicalKey).sort().join(',')}}`;
      if (Array.isArray(v)) return `[${v.map(canonicalKey).join(',')}]`;
      return `{${Object.keys(v)
        .sort()
        .map((k) => `${JSON.stringify(k)}:${canonicalKey((v as Record<string, unknown>)[k])}`)
        .join(',')}}`;
    default:
      return `?${String(v)}`;
  }
}

function newMap(): Record<string, unknown> {
  return Object.create(null) as Record<string, unknown>;
}

/** Untyped values (preserve-unknown-fields): integral JSON numbers are ints, as in unstructured Go. */
function toDyn(value: unknown, pool: InternPool): unknown {
  if (typeof value === 'number') return Number.isInteger(value) ? BigInt(value) : value;
  if (Array.isArray(value)) return value.map((x) => toDyn(x, pool));
  if (value !== null && typeof value === 'object') {
    const out = newMap();
    for (const [k, v] of Object.entries(value)) out[k] = toDyn(v, pool);
    return out;
  }
  return value;
}

function toInteger(value: unknown): unknown {
  if (typeof value === 'number' && Number.isInteger(value)) return BigInt(value);
  return value;
}

function toObject(value: Record<string, unknown>, schema: CelSchema, pool: InternPool): Record<string, unknown> {
  const out = newMap();
  const additional = typeof schema.additionalProperties === 'object' ? schema.additionalProperties : undefined;
  for (const [k, v] of Object.entries(value)) {
    const propSchema = schema.properties?.[k] ?? additional;
    if (propSchema) out[k] = toCelValue(v, propSchema, pool);
    else out[k] = toDyn(v, pool);
  }
  return out;
}

/** Converts one JSON value under its schema (undefined schema: dynamic typing). */
export function toCelValue(value: unknown, schema: CelSchema | undefined, pool: InternPool): unknown {
  if (value === null || value === undefined) return null;
  if (!schema) return toDyn(value, pool);
  if (schema['x-kubernetes-int-or-string']) return toInteger(value);
  switch (schema.type) {
    case 'integer':
      return toInteger(value);
    case 'number':
      return typeof value === 'bigint' ? Number(value) : value;
    case 'array': {
      if (!Array.isArray(value)) return toDyn(value, pool);
      const items = value.map((x) => toCelValue(x, schema.items, pool));
      const listType = schema['x-kubernetes-list-type'];
      if (listType === 'set' || listType === 'map') return new Set(items.map((x) => pool.intern(x)));
      return items;
    }
    case 'object':
      if (typeof value !== 'object' || Array.isArray(value)) return toDyn(value, pool);
      return toObject(value as Record<string, unknown>, schema, pool);
    case undefined:
      return toDyn(value, pool);
    default:
      return value;
  }
}

/**
 * The root object as a rule at the root sees it: the API server exposes only `name` and
 * `generateName` of `metadata` to CEL.
 */
export function toCelRoot(obj: Record<string, unknown>, schema: CelSchema, pool: InternPool): Record<string, unknown> {
  const out = toObject(obj, schema, pool);
  const meta = obj.metadata;
  if (meta && typeof meta === 'object' && !Array.isArray(meta)) {
    const m = meta as Record<string, unknown>;
    const visible = newMap();
    if (typeof m.name === 'string') visible.name = m.name;
    if (typeof m.generateName === 'string') visible.generateName = m.generateName;
    out.metadata = visible;
  }
  return out;
}
