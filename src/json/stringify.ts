// JSON written iteratively: V8's JSON.stringify recurses and overflows the stack near 10,000
// levels, which the API server's decoder allows. `stringifyJson` is JSON.stringify's output with
// BigInts as plain integers (as Go writes an int64); `writeJson` takes other styles (the sorted,
// kind-tagged canonical form of src/crd/values.ts).

const CLOSE_ARRAY = Symbol('close-array');
const CLOSE_OBJECT = Symbol('close-object');
const COMMA = Symbol('comma');

class Key {
  readonly name: string;
  constructor(name: string) {
    this.name = name;
  }
}

/** What JSON.stringify leaves out of an object (and writes as null in an array). */
function skipped(v: unknown): boolean {
  return v === undefined || typeof v === 'function' || typeof v === 'symbol';
}

function scalar(v: unknown): string {
  if (typeof v === 'bigint') return v.toString();
  return JSON.stringify(v) ?? 'null';
}

/** How writeJson renders a value: as a leaf (a string), or descended into (undefined). */
export interface JsonStyle {
  leaf(v: unknown): string | undefined;
  /** An object's keys, in the order they are written. */
  keys(o: Record<string, unknown>): string[];
  /** What an array item is written as (JSON.stringify writes skipped values as null). */
  item?(v: unknown): unknown;
}

/** JSON written with an explicit stack, so hostile nesting cannot exhaust the call stack. */
export function writeJson(value: unknown, style: JsonStyle): string {
  let out = '';
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (v === CLOSE_ARRAY) out += ']';
    else if (v === CLOSE_OBJECT) out += '}';
    else if (v === COMMA) out += ',';
    else if (v instanceof Key) out += `${JSON.stringify(v.name)}:`;
    else {
      const leaf = style.leaf(v);
      if (leaf !== undefined) out += leaf;
      else if (Array.isArray(v)) {
        out += '[';
        stack.push(CLOSE_ARRAY);
        for (let i = v.length - 1; i >= 0; i--) {
          stack.push(style.item ? style.item(v[i]) : v[i]);
          // eslint-disable-next-line max-depth -- array items pushed inside writeJson's explicit-stack loop
          if (i > 0) stack.push(COMMA);
        }
      } else {
        out += '{';
        stack.push(CLOSE_OBJECT);
        const o = v as Record<string, unknown>;
        const keys = style.keys(o);
        for (let i = keys.length - 1; i >= 0; i--) {
          stack.push(o[keys[i]]);
          stack.push(new Key(keys[i]));
          // eslint-disable-next-line max-depth -- object members pushed inside writeJson's explicit-stack loop
          if (i > 0) stack.push(COMMA);
        }
      }
    }
  }
  return out;
}

const PLAIN: JsonStyle = {
  leaf: (v) => {
    if (v === null || typeof v !== 'object') return skipped(v) ? 'null' : scalar(v);
    return typeof (v as { toJSON?: unknown }).toJSON === 'function' ? JSON.stringify(v) : undefined;
  },
  keys: (o) => Object.keys(o).filter((k) => !skipped(o[k])),
  item: (v) => (skipped(v) ? null : v),
};

/** JSON.stringify's output, iteratively. */
export function stringifyJson(value: unknown): string {
  return writeJson(value, PLAIN);
}
