// The envelope of a review whose text cannot be parsed whole (it nests deeper than the parser's
// limit): its top-level apiVersion and kind, and request.uid and request.operation, read from the
// text without parsing the rest. With them, the review is answered in-band, as controller-runtime
// answers every error. Linear in the text, iterative (no recursion: nesting costs nothing), and
// only those four values are built; any text it cannot read at those two levels gives undefined.

export interface ScannedEnvelope {
  apiVersion?: unknown;
  kind?: unknown;
  uid?: unknown;
  operation?: unknown;
}

const WS = new Set([0x20, 0x09, 0x0a, 0x0d]);
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

class Unreadable extends Error {}

/** Reads the envelope's fields; undefined when the text is not a JSON object at those levels. */
export function scanEnvelope(text: string): ScannedEnvelope | undefined {
  try {
    return new Scanner(text).envelope();
  } catch (err) {
    if (err instanceof Unreadable || err instanceof SyntaxError) return undefined;
    throw err;
  }
}

class Scanner {
  #at = 0;
  readonly #text: string;
  constructor(text: string) {
    this.#text = text;
  }

  envelope(): ScannedEnvelope {
    const out: ScannedEnvelope = {};
    this.#object((key) => {
      if (key === 'apiVersion' || key === 'kind') out[key] = this.#scalarOrSkip();
      else if (key === 'request' && this.#peek() === 0x7b) {
        // The last `request` wins, as in JSON.parse: what an earlier one said goes.
        delete out.uid;
        delete out.operation;
        this.#object((inner) => {
          if (inner === 'uid' || inner === 'operation') out[inner] = this.#scalarOrSkip();
          else this.#skipValue();
        });
      } else {
        if (key === 'request') {
          delete out.uid;
          delete out.operation;
        }
        this.#skipValue();
      }
    });
    return out;
  }

  #peek(): number {
    this.#ws();
    return this.#text.charCodeAt(this.#at);
  }

  #ws(): void {
    while (WS.has(this.#text.charCodeAt(this.#at))) this.#at++;
  }

  #expect(c: number): void {
    if (this.#peek() !== c) throw new Unreadable();
    this.#at++;
  }

  /** An object at this point: each member's key handed to `member`, which reads or skips its value. */
  #object(member: (key: string) => void): void {
    this.#expect(0x7b);
    if (this.#peek() === 0x7d) {
      this.#at++;
      return;
    }
    for (;;) {
      const key = this.#string();
      this.#expect(0x3a);
      member(key);
      const c = this.#peek();
      this.#at++;
      if (c === 0x7d) return;
      if (c !== 0x2c) throw new Unreadable();
    }
  }

  /** A string or scalar token's value (JSON.parse checks it); a container is skipped, an empty list standing for it. */
  #scalarOrSkip(): unknown {
    const c = this.#peek();
    if (c === QUOTE) return this.#string();
    if (c === 0x7b || c === 0x5b) {
      this.#skipValue();
      return [];
    }
    const start = this.#at;
    this.#skipValue();
    return JSON.parse(this.#text.slice(start, this.#at)) as unknown;
  }

  #string(): string {
    if (this.#peek() !== QUOTE) throw new Unreadable();
    const start = this.#at;
    this.#at = this.#stringEnd(start) + 1;
    return JSON.parse(this.#text.slice(start, this.#at)) as string;
  }

  /** The index of the quote closing the string opened at `open`. */
  #stringEnd(open: number): number {
    let at = open;
    for (;;) {
      at = this.#text.indexOf('"', at + 1);
      if (at === -1) throw new Unreadable();
      let slashes = 0;
      while (this.#text.charCodeAt(at - 1 - slashes) === BACKSLASH) slashes++;
      if (slashes % 2 === 0) return at;
    }
  }

  /** Moves past one value: a container by counting its brackets (strings skipped whole), a scalar to its end. */
  #skipValue(): void {
    const c = this.#peek();
    if (c === QUOTE) {
      this.#at = this.#stringEnd(this.#at) + 1;
      return;
    }
    if (c === 0x7b || c === 0x5b) {
      let depth = 0;
      const n = this.#text.length;
      for (; this.#at < n; this.#at++) {
        const d = this.#text.charCodeAt(this.#at);
        if (d === QUOTE) this.#at = this.#stringEnd(this.#at);
        else if (d === 0x7b || d === 0x5b) depth++;
        else if ((d === 0x7d || d === 0x5d) && --depth === 0) {
          this.#at++;
          return;
        }
      }
      throw new Unreadable();
    }
    // A number, true, false or null: up to the next delimiter.
    const start = this.#at;
    while (this.#at < this.#text.length && !/[\s,}\]]/.test(this.#text[this.#at])) this.#at++;
    if (this.#at === start) throw new Unreadable();
  }
}
