// JSON.stringify's output, written iteratively: V8's JSON.stringify recurses and overflows the
// stack near 10,000 levels, which the API server's decoder allows. BigInts are written as plain
// integers (as Go writes an int64).

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

export function stringifyJson(value: unknown): string {
  let out = '';
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (v === CLOSE_ARRAY) out += ']';
    else if (v === CLOSE_OBJECT) out += '}';
    else if (v === COMMA) out += ',';
    else if (v instanceof Key) out += `${JSON.stringify(v.name)}:`;
    else if (v === null || typeof v !== 'object') out += skipped(v) ? 'null' : scalar(v);
    else if (typeof (v as { toJSON?: unknown }).toJSON === 'function') out += JSON.stringify(v);
    else if (Array.isArray(v)) {
      out += '[';
      stack.push(CLOSE_ARRAY);
      for (let i = v.length - 1; i >= 0; i--) {
        stack.push(skipped(v[i]) ? null : v[i]);
        if (i > 0) stack.push(COMMA);
      }
    } else {
      out += '{';
      stack.push(CLOSE_OBJECT);
      const o = v as Record<string, unknown>;
      const keys = Object.keys(o).filter((k) => !skipped(o[k]));
      for (let i = keys.length - 1; i >= 0; i--) {
        stack.push(o[keys[i]]);
        stack.push(new Key(keys[i]));
        if (i > 0) stack.push(COMMA);
      }
    }
  }
  return out;
}
