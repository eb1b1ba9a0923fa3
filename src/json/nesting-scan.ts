// How deep JSON text nests, read from the text before it is parsed. JSON.parse builds every level
// before the depth can be checked: 7 MiB of `[` took ~190 MiB of heap and 0.8 s to refuse. This
// scan holds nothing but a counter, so text nesting deeper than allowed is refused at the cost of
// reading it once (string contents are skipped with indexOf).

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_ARRAY = 0x5b;
const OPEN_OBJECT = 0x7b;
const CLOSE_ARRAY = 0x5d;
const CLOSE_OBJECT = 0x7d;

/**
 * The position of the first bracket that opens level `maxDepth + 1`, or -1 when the text nests
 * no deeper than `maxDepth` (the root array or object is level 1, as in `nestsDeeperThan`).
 * Brackets inside strings do not count; text that is not JSON is scanned all the same (the parser
 * then says what is wrong with it).
 */
export function deeperThanAt(text: string, maxDepth: number): number {
  let depth = 0;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      i = stringEnd(text, i);
    } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (++depth > maxDepth) return i;
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) {
      depth--;
    }
  }
  return -1;
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
