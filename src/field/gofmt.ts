// Go's fmt verbs as kube-openapi uses them in its messages (`%q`, `%v` of float64), so the
// texts we build match the API server's byte for byte.

import { isGoPrint } from './go-isprint.ts';

/**
 * Go's `%q` (strconv.Quote, its appendEscapedRune): `"` and `\\` backslashed, the runes
 * strconv.IsPrint accepts kept (Go's tables, not Node's ICU: src/field/go-isprint.ts), the rest
 * escaped. A lone surrogate is U+FFFD, as Go's JSON decoder made it, and U+FFFD is printable.
 */
// eslint-disable-next-line complexity -- one case per escape strconv.Quote writes
export function goQuote(s: string): string {
  let out = '"';
  for (const rune of s) {
    // Go's JSON decoder replaced each lone surrogate with U+FFFD.
    const ch = rune.length === 1 && rune >= '\ud800' && rune <= '\udfff' ? '\ufffd' : rune;
    const cp = ch.codePointAt(0)!;
    if (ch === '"' || ch === '\\') {
      out += `\\${ch}`; // always backslashed
      continue;
    }
    if (isGoPrint(cp)) {
      out += ch;
      continue;
    }
    switch (ch) {
      case '\u0007':
        out += '\\a';
        continue;
      case '\b':
        out += '\\b';
        continue;
      case '\f':
        out += '\\f';
        continue;
      case '\n':
        out += '\\n';
        continue;
      case '\r':
        out += '\\r';
        continue;
      case '\t':
        out += '\\t';
        continue;
      case '\v':
        out += '\\v';
        continue;
    }
    // No rune of a JS string is invalid for utf8.ValidRune (> 0x10FFFF or a surrogate, mapped above).
    if (cp < 0x20 || cp === 0x7f) out += `\\x${cp.toString(16).padStart(2, '0')}`;
    else if (cp < 0x10000) out += `\\u${cp.toString(16).padStart(4, '0')}`;
    else out += `\\U${cp.toString(16).padStart(8, '0')}`;
  }
  return out + '"';
}

/** Go's `%v` of a float64 (strconv 'g', -1): shortest digits, `1e+06` from the sixth power on. */
export function goFloat(f: number): string {
  if (Number.isNaN(f)) return 'NaN';
  if (f === Infinity) return '+Inf';
  if (f === -Infinity) return '-Inf';
  if (f === 0) return Object.is(f, -0) ? '-0' : '0';
  const [mantissa, expText] = f.toExponential().split('e');
  const exp = Number(expText);
  // strconv: %e is used when exp < -4 || exp >= eprec, and eprec is 6 for the shortest form.
  if (exp < -4 || exp >= 6) {
    const sign = exp < 0 ? '-' : '+';
    return `${mantissa}e${sign}${String(Math.abs(exp)).padStart(2, '0')}`;
  }
  return String(f);
}
