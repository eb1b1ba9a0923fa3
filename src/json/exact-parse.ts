// A JSON parser that keeps integers beyond 2^53 exact (as BigInt) and never recurses: nesting is
// bounded only by `maxDepth`, like Go's decoder. JSON.parse with a reviver would do the first,
// but V8 revives recursively and overflows the stack near 3,000 levels. It accepts exactly what
// JSON.parse accepts and builds the same values (`__proto__` stays an own key; duplicate keys:
// the last value wins, in the first one's place).

/** Go's `exceeded max depth`: the text nests arrays and objects deeper than allowed. */
export class JsonDepthError extends SyntaxError {
  override name = 'JsonDepthError';
  readonly maxDepth: number;
  constructor(maxDepth: number, position?: number) {
    const at = position === undefined ? '' : ` (at position ${position})`;
    super(`exceeded max depth: arrays and objects nested more than ${maxDepth} levels${at}`);
    this.maxDepth = maxDepth;
  }
}

const NUMBER = /-?(?:0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/y;

interface Frame {
  container: unknown[] | Record<string, unknown>;
  /** The member being read, for objects. */
  key: string;
}

function unexpected(text: string, i: number): SyntaxError {
  if (i >= text.length) return new SyntaxError('Unexpected end of JSON input');
  return new SyntaxError(`Unexpected token ${JSON.stringify(text[i])} in JSON at position ${i}`);
}

function skipSpace(text: string, i: number): number {
  for (;;) {
    const c = text.charCodeAt(i);
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return i;
    i++;
  }
}

/** The string starting at the quote at `i`, and the position after its closing quote. */
function readString(text: string, i: number): [string, number] {
  const start = i;
  let escaped = false;
  for (i++; ; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) break;
    if (Number.isNaN(c)) throw new SyntaxError(`Unterminated string in JSON at position ${start}`);
    if (c < 0x20) throw unexpected(text, i);
    if (c === 0x5c) {
      escaped = true;
      i++;
    }
  }
  // Escapes are rare: JSON.parse decodes (and checks) the one string that has them.
  const value = escaped ? (JSON.parse(text.slice(start, i + 1)) as string) : text.slice(start + 1, i);
  return [value, i + 1];
}

function readNumber(text: string, i: number): [number | bigint, number] {
  NUMBER.lastIndex = i;
  const m = NUMBER.exec(text);
  if (m === null) throw unexpected(text, i);
  const source = m[0];
  const n = Number(source);
  // An integer literal Number cannot hold exactly; a fraction or exponent makes a double, as in Go.
  const exact = m[1] === undefined && m[2] === undefined && !Number.isSafeInteger(n) ? BigInt(source) : n;
  return [exact, i + source.length];
}

function readKey(text: string, i: number): [string, number] {
  i = skipSpace(text, i);
  if (text.charCodeAt(i) !== 0x22) throw unexpected(text, i);
  const [key, after] = readString(text, i);
  const colon = skipSpace(text, after);
  if (text.charCodeAt(colon) !== 0x3a) throw unexpected(text, colon);
  return [key, colon + 1];
}

function setMember(o: Record<string, unknown>, key: string, value: unknown): void {
  // JSON.parse defines `__proto__` as an own property; assigning it would set the prototype.
  if (key === '__proto__')
    Object.defineProperty(o, key, { value, writable: true, enumerable: true, configurable: true });
  else o[key] = value;
}

const LITERALS: ReadonlyArray<[string, unknown]> = [
  ['true', true],
  ['false', false],
  ['null', null],
];

// eslint-disable-next-line complexity -- the parser's single loop over an explicit stack (no recursion)
export function parseJsonExact(text: string, maxDepth: number): unknown {
  const stack: Frame[] = [];
  let i = 0;
  for (;;) {
    // Read one value at i: a scalar, an empty container, or the opening of a non-empty one.
    i = skipSpace(text, i);
    const c = text.charCodeAt(i);
    let value: unknown;
    if (c === 0x7b || c === 0x5b) {
      if (stack.length >= maxDepth) throw new JsonDepthError(maxDepth, i);
      const isArray = c === 0x5b;
      const after = skipSpace(text, i + 1);
      if (text.charCodeAt(after) === (isArray ? 0x5d : 0x7d)) {
        value = isArray ? [] : {};
        i = after + 1;
      } else if (isArray) {
        stack.push({ container: [], key: '' });
        i = after;
        continue;
      } else {
        const [key, next] = readKey(text, after);
        stack.push({ container: {}, key });
        i = next;
        continue;
      }
    } else if (c === 0x22) {
      [value, i] = readString(text, i);
    } else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      [value, i] = readNumber(text, i);
    } else {
      const literal = LITERALS.find(([word]) => text.startsWith(word, i));
      if (literal === undefined) throw unexpected(text, i);
      value = literal[1];
      i += literal[0].length;
    }

    // Store the value in its container; close every container that ends here.
    for (;;) {
      const top = stack[stack.length - 1];
      if (top === undefined) {
        i = skipSpace(text, i);
        if (i < text.length) throw unexpected(text, i);
        return value;
      }
      const isArray = Array.isArray(top.container);
      if (isArray) (top.container as unknown[]).push(value);
      else setMember(top.container as Record<string, unknown>, top.key, value);
      i = skipSpace(text, i);
      const d = text.charCodeAt(i);
      if (d === 0x2c) {
        if (isArray) i++;
        else [top.key, i] = readKey(text, i + 1);
        break;
      }
      if (d !== (isArray ? 0x5d : 0x7d)) throw unexpected(text, i);
      i++;
      stack.pop();
      value = top.container;
    }
  }
}

/** Whether a parsed value nests arrays and objects deeper than `maxDepth` (iterative, allocation-light). */
export function nestsDeeperThan(value: unknown, maxDepth: number): boolean {
  if (value === null || typeof value !== 'object') return false;
  const containers: object[] = [value];
  const depths: number[] = [1];
  while (containers.length > 0) {
    const v = containers.pop() as Record<string, unknown>;
    const depth = depths.pop()!;
    if (depth > maxDepth) return true;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const child: unknown = v[i];
        if (child !== null && typeof child === 'object') {
          containers.push(child);
          depths.push(depth + 1);
        }
      }
    } else {
      for (const key in v) {
        const child = v[key];
        if (child !== null && typeof child === 'object') {
          containers.push(child);
          depths.push(depth + 1);
        }
      }
    }
  }
  return false;
}
