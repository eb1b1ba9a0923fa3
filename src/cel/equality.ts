// CEL equality over the values src/cel/values.ts builds: ints (BigInt) equal doubles of the same
// value (heterogeneous equality), lists in order, Sets (list-type set/map) regardless of order.

function isPlainMap(v: object): v is Record<string, unknown> {
  const proto = Object.getPrototypeOf(v);
  return proto === null || proto === Object.prototype;
}

// eslint-disable-next-line complexity -- one case per CEL value kind (number, set, list, bytes, map, optional)
export function celEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a === 'bigint' || typeof a === 'number') {
    // eslint-disable-next-line eqeqeq -- CEL compares int and double by value
    return (typeof b === 'bigint' || typeof b === 'number') && a == b;
  }
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (a instanceof Set || b instanceof Set) return setEqual(a, b);
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((x, i) => celEqual(x, b[i]));
  }
  if (a instanceof Uint8Array && b instanceof Uint8Array) {
    return a.length === b.length && a.every((x, i) => x === b[i]);
  }
  if (a instanceof Map || b instanceof Map) return mapEqual(toEntries(a), toEntries(b));
  if (isPlainMap(a) && isPlainMap(b)) return mapEqual(toEntries(a), toEntries(b));
  if (typeof (a as { hasValue?: unknown }).hasValue === 'function') return optionalEqual(a, b);
  return false;
}

function setEqual(a: object, b: object): boolean {
  const xs = [...(a as Iterable<unknown>)];
  const ys = [...(b as Iterable<unknown>)];
  if (xs.length !== ys.length) return false;
  const used = new Array<boolean>(ys.length).fill(false);
  // Elements are interned, so the identity check usually hits at once; fall back to deep equality.
  return xs.every((x) => {
    const i = ys.findIndex((y, j) => !used[j] && (x === y || celEqual(x, y)));
    if (i < 0) return false;
    used[i] = true;
    return true;
  });
}

function toEntries(v: object): Map<unknown, unknown> {
  return v instanceof Map ? v : new Map(Object.entries(v));
}

function mapEqual(a: Map<unknown, unknown>, b: Map<unknown, unknown>): boolean {
  if (a.size !== b.size) return false;
  for (const [k, v] of a) {
    if (!b.has(k) || !celEqual(v, b.get(k))) return false;
  }
  return true;
}

interface OptionalLike {
  hasValue(): boolean;
  value(): unknown;
}

/** cel-go defines optional == optional: both empty, or both present with equal values. */
export function optionalEqual(a: unknown, b: unknown): boolean {
  const x = a as OptionalLike;
  const y = b as OptionalLike;
  if (x.hasValue() !== y.hasValue()) return false;
  return !x.hasValue() || celEqual(x.value(), y.value());
}
