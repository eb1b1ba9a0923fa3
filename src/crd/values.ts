// JSON values as the API server's Go code sees them. Objects come from the lossless parser
// (integers beyond 2^53 are BigInt), so every helper here accepts bigint where Go has int64,
// and none of them trusts keys: `__proto__` or `constructor` in user data are plain keys.
import { isObject, type JsonObject } from '../json/object.ts';
import { writeJson, type JsonStyle } from '../json/stringify.ts';

/** The Go type a decoded JSON value has in an unstructured object. */
export type JsonKind = 'null' | 'boolean' | 'string' | 'int' | 'float' | 'array' | 'object' | 'invalid';

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/**
 * Go's view of a value: the API server decodes JSON integers into int64 when they fit and into
 * float64 otherwise. The lossless parser gives BigInt for integer literals beyond 2^53, so a
 * plain number that is not a safe integer came from a float literal (1e20, 1.5).
 */
export function kindOf(v: unknown): JsonKind {
  if (v === null) return 'null';
  switch (typeof v) {
    case 'boolean':
      return 'boolean';
    case 'string':
      return 'string';
    case 'number':
      return Number.isSafeInteger(v) ? 'int' : 'float';
    case 'bigint':
      return v >= INT64_MIN && v <= INT64_MAX ? 'int' : 'float';
    case 'object':
      return Array.isArray(v) ? 'array' : 'object';
    default:
      return 'invalid';
  }
}

/** Own, defined property: never reads `constructor`/`toString` from the prototype. */
export function hasOwn(o: JsonObject, key: string): boolean {
  return Object.hasOwn(o, key) && o[key] !== undefined;
}

/** Sets an own data property; a `__proto__` key is defined, so it cannot replace the prototype. */
export function setOwn(o: JsonObject, key: string, value: unknown): void {
  if (key === '__proto__')
    Object.defineProperty(o, key, { value, writable: true, enumerable: true, configurable: true });
  else o[key] = value;
}

/** Keys with a defined value, in insertion order. */
export function ownKeys(o: JsonObject): string[] {
  const keys = Object.keys(o);
  // Parsed JSON holds no undefined: copy only when there is one to leave out.
  for (let i = 0; i < keys.length; i++) if (o[keys[i]] === undefined) return keys.filter((k) => o[k] !== undefined);
  return keys;
}

/** The value as an exact int64 (only call for kind 'int'). */
export function toBigInt(v: unknown): bigint {
  return typeof v === 'bigint' ? v : BigInt(v as number);
}

/** The value as Go's float64 would hold it (only call for kinds 'int' and 'float'). */
export function toFloat(v: unknown): number {
  return typeof v === 'bigint' ? Number(v) : (v as number);
}

/** Deep copy of a JSON value; iterative, so hostile nesting cannot exhaust the stack. */
export function deepClone<T>(value: T): T {
  if (value === null || typeof value !== 'object') return value;
  const root: unknown = Array.isArray(value) ? new Array(value.length) : {};
  const stack: Array<[unknown, unknown]> = [[value, root]];
  while (stack.length > 0) {
    const [src, dst] = stack.pop()!;
    if (Array.isArray(src)) {
      const out = dst as unknown[];
      for (let i = 0; i < src.length; i++) out[i] = cloneStep(src[i], stack);
    } else {
      const out = dst as JsonObject;
      for (const k of Object.keys(src as JsonObject)) {
        const v = (src as JsonObject)[k];
        if (v !== undefined) setOwn(out, k, cloneStep(v, stack));
      }
    }
  }
  return root as T;
}

function cloneStep(v: unknown, stack: Array<[unknown, unknown]>): unknown {
  if (v === null || typeof v !== 'object') return v;
  const copy: unknown = Array.isArray(v) ? new Array(v.length) : {};
  stack.push([v, copy]);
  return copy;
}

function numbersEqual(a: number | bigint, b: number | bigint): boolean {
  if (typeof a === typeof b) return a === b;
  const [n, big] = typeof a === 'number' ? [a, b as bigint] : [b as number, a as bigint];
  return Number.isInteger(n) && BigInt(n) === big;
}

/**
 * Deep equality of JSON values (Go's reflect.DeepEqual on unstructured data): objects by keys,
 * arrays in order, and 5 equals 5n. Iterative.
 */
// eslint-disable-next-line complexity -- reflect.DeepEqual over JSON kinds in one loop over an explicit stack
export function semanticEqual(a: unknown, b: unknown): boolean {
  const stack: Array<[unknown, unknown]> = [[a, b]];
  while (stack.length > 0) {
    const [x, y] = stack.pop()!;
    if (x === y) continue;
    const tx = typeof x;
    const ty = typeof y;
    if ((tx === 'number' || tx === 'bigint') && (ty === 'number' || ty === 'bigint')) {
      if (!numbersEqual(x as number | bigint, y as number | bigint)) return false;
      continue;
    }
    if (x === null || y === null || tx !== 'object' || ty !== 'object') return false;
    if (Array.isArray(x) !== Array.isArray(y)) return false;
    if (Array.isArray(x)) {
      const ya = y as unknown[];
      if (x.length !== ya.length) return false;
      for (let i = 0; i < x.length; i++) stack.push([x[i], ya[i]]);
      continue;
    }
    const xo = x as JsonObject;
    const yo = y as JsonObject;
    const kx = ownKeys(xo);
    if (kx.length !== ownKeys(yo).length) return false;
    for (const k of kx) {
      if (!hasOwn(yo, k)) return false;
      stack.push([xo[k], yo[k]]);
    }
  }
  return true;
}

const CANONICAL: JsonStyle = {
  leaf: (v) => (Array.isArray(v) || isObject(v) ? undefined : scalarJson(v)),
  keys: (o) => ownKeys(o).sort(),
};

/**
 * JSON with object keys sorted, like Go's json.Marshal of a map: equal values give equal
 * strings. Numbers are tagged by Go kind (int 1 and float 1.5 never collide with strings).
 * Iterative, so hostile nesting cannot exhaust the stack.
 */
export function canonicalJson(value: unknown): string {
  return writeJson(value, CANONICAL);
}

function scalarJson(v: unknown): string {
  switch (kindOf(v)) {
    case 'int':
      return toBigInt(v).toString();
    case 'float':
      return `${toFloat(v)}f`;
    case 'string':
      return JSON.stringify(v);
    case 'boolean':
      return String(v);
    case 'null':
      return 'null';
    default:
      return '?';
  }
}
