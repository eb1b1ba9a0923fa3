// What JSON text holds, read from the text before it is parsed: how deep it nests and how many
// values it has. JSON.parse builds every level before the depth can be checked (7 MiB of `[` took
// ~190 MiB of heap and 0.8 s to refuse), and what a decision holds grows with the values, not the
// bytes (a 0.9 MiB list of 300,000 `{}` held ~65 MB while decided). The scan holds two counters;
// string contents are skipped with indexOf.

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_ARRAY = 0x5b;
const OPEN_OBJECT = 0x7b;
const CLOSE_ARRAY = 0x5d;
const CLOSE_OBJECT = 0x7d;
const COMMA = 0x2c;
const COLON = 0x3a;

export interface TextShape {
  /** The position of the first bracket that opens level `maxDepth + 1`; -1 when none does. */
  tooDeepAt: number;
  /** Brackets that open, commas and colons outside strings: about one per value (to that point). */
  tokens: number;
}

/**
 * Reads `text` once. The root array or object is level 1 (as in `nestsDeeperThan`); brackets
 * inside strings do not count; text that is not JSON is scanned all the same (the parser then
 * says what is wrong with it). Stops at the first bracket too deep.
 */
export function scanJsonText(text: string, maxDepth: number): TextShape {
  let depth = 0;
  let tokens = 0;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      i = stringEnd(text, i);
    } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      tokens++;
      if (++depth > maxDepth) return { tooDeepAt: i, tokens };
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) {
      depth--;
    } else if (c === COMMA || c === COLON) {
      tokens++;
    }
  }
  return { tooDeepAt: -1, tokens };
}

/** The index of the quote that closes the string opened at `open` (the text's end when none does). */
function stringEnd(text: string, open: number): number {
  let at = open;
  for (;;) {
    at = text.indexOf('"', at + 1);
    if (at === -1) return text.length;
    // A quote after an odd run of backslashes is escaped.
    let slashes = 0;
    while (text.charCodeAt(at - 1 - slashes) === BACKSLASH) slashes++;
    if (slashes % 2 === 0) return at;
  }
}
