// One copy of what repeats in the cache: 10,000 TrainJobs, JobSets and Jobs of a few runtimes repeat
// the same namespaces, kinds, condition types and reasons, managers, container names, and whole
// parts once reduced (a JobSet's replicated jobs as the decisions read them, a TrainJob's read
// spec, a Job's `spec: {suspend: true}`), and a JSON parse makes a copy of each occurrence. So
// strings and subtrees are hash-consed: equal ones are the same (frozen) value. Safe because the
// cache is read-only (informer.ts freezes what it stores) and nothing reads identity below an
// object's top level (which is never shared: a stored object is always its own). The tables are
// bounded (names and uids never repeat): two generations, the older dropped when the newer fills,
// so what keeps repeating stays; a miss only costs sharing, never correctness. A subtree is found
// by a hash of its canonical text and compared whole on a hit (a collision is a miss), so the
// table holds no texts. Returns a copy: the input is never changed.
import { isDeepStrictEqual } from 'node:util';

/** Entries per generation. */
const MAX_STRINGS = 8192;
const MAX_SUBTREES = 8192;
/**
 * Canonical text per generation of subtrees: 8192 subtrees of up to MAX_KEY characters that do not
 * repeat (standalone mode's whole TrainJobs with long args) would otherwise stay ~25 MiB after
 * their objects are gone; with this bound the two generations hold a few MiB at most.
 */
const MAX_SUBTREE_TEXT = 1024 * 1024;
/** Longer strings and subtrees rarely repeat (messages, digests, whole pod templates): kept as they are. */
const MAX_STRING = 128;
const MAX_KEY = 2048;

export class Generations<V> {
  readonly #max: number;
  readonly #maxWeight: number;
  #young = new Map<string, V>();
  #youngWeight = 0;
  #old = new Map<string, V>();

  /** At most `max` entries and `maxWeight` of weight (each entry's as given to get) per generation. */
  constructor(max: number, maxWeight = Infinity) {
    this.#max = max;
    this.#maxWeight = maxWeight;
  }

  /** Entries held, both generations. */
  get size(): number {
    return this.#young.size + this.#old.size;
  }

  /** The value known for `key` (when `same` as `value`), else `value`, now known. */
  get(key: string, value: V, same: (a: V, b: V) => boolean = (a, b) => a === b, weight = 1): V {
    const known = this.#young.get(key) ?? this.#old.get(key);
    if (known !== undefined && (known === value || same(known, value))) {
      this.#remember(key, known, weight);
      return known;
    }
    this.#remember(key, value, weight);
    return value;
  }

  #remember(key: string, value: V, weight: number) {
    if (this.#young.get(key) === value) return;
    if (this.#young.size >= this.#max || this.#youngWeight + weight > this.#maxWeight) {
      this.#old = this.#young;
      this.#young = new Map();
      this.#youngWeight = 0;
    }
    this.#young.set(key, value);
    this.#youngWeight += weight;
  }
}

const strings = new Generations<string>(MAX_STRINGS);
const subtrees = new Generations<object>(MAX_SUBTREES, MAX_SUBTREE_TEXT);

type Consed = { value: unknown; key: string | undefined };

/** The value, shared, and its canonical text (undefined: too large to share). */
function consed(value: unknown): Consed {
  if (typeof value === 'string')
    return { value: value.length > MAX_STRING ? value : strings.get(value, value), key: JSON.stringify(value) };
  if (typeof value === 'bigint') return { value, key: `${value}n` };
  if (typeof value !== 'object' || value === null) return { value, key: JSON.stringify(value) ?? String(value) };
  if (Array.isArray(value))
    return shared(
      value.map(consed),
      (parts) => `[${parts.join(',')}]`,
      (vs) => vs,
    );
  // Only what a JSON parse makes (a Date in a test's object stays as it is).
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return { value, key: undefined };
  const keys = Object.keys(value).map((k) => strings.get(k, k));
  const entries = keys.map((k) => {
    const c = consed((value as Record<string, unknown>)[k]);
    return { value: c.value, key: c.key === undefined ? undefined : `${JSON.stringify(k)}:${c.key}` };
  });
  return shared(
    entries,
    (parts) => `{${parts.join(',')}}`,
    (vs) => Object.fromEntries(keys.map((k, i) => [k, vs[i]])),
  );
}

/** The list or object built from `parts`, the known equal one when its text is short enough. */
function shared(parts: Consed[], text: (keys: string[]) => string, build: (values: unknown[]) => object): Consed {
  const value = build(parts.map((p) => p.value));
  let size = 2;
  for (const p of parts) size += p.key === undefined ? Infinity : p.key.length + 1;
  if (size > MAX_KEY) return { value, key: undefined };
  const key = text(parts.map((p) => p.key!));
  return { value: subtrees.get(hashOf(key), Object.freeze(value), isDeepStrictEqual, key.length), key };
}

/** Two 32-bit FNV-1a hashes of a text and its length: a short table key (a collision is only a miss). */
function hashOf(text: string): string {
  let a = 0x811c9dc5;
  let b = 0x01000193;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995) ^ (b >>> 15);
  }
  return `${(a >>> 0).toString(36)}.${(b >>> 0).toString(36)}.${text.length.toString(36)}`;
}

/** A copy of a JSON object whose strings and parts are shared with the equal ones before it; its top level its own. */
export function intern<T extends object>(value: T): T {
  if (Array.isArray(value)) return value.map((v) => consed(v).value) as T;
  // Own properties only, a "__proto__" key too (fromEntries defines; an assignment would set the prototype).
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, consed(v).value])) as T;
}
