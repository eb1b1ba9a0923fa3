// Go's strconv.IsPrint and IsGraphic over the tables of go-isprint-tables.ts (generated from Go's
// strconv/isprint.go by hack/go-isprint.ts): isGoPrint, isGoGraphic, isInGraphicList and bsearch
// follow strconv/quote.go's IsPrint, IsGraphic, isInGraphicList and bsearch line for line (the
// generator refuses a Go whose functions differ from the ones ported here). Go's code, Copyright
// 2009 The Go Authors, under the BSD licence whose text go-isprint-tables.ts carries.
import { isGraphic, isNotPrint16, isNotPrint32, isPrint16, isPrint32 } from './go-isprint-tables.ts';

/** strconv's bsearch: the first i with s[i] >= v, and whether s[i] === v. */
function bsearch(s: readonly number[], v: number): [number, boolean] {
  const n = s.length;
  let i = 0;
  let j = n;
  while (i < j) {
    const h = i + ((j - i) >> 1);
    if (s[h]! < v) {
      i = h + 1;
    } else {
      j = h;
    }
  }
  return [i, i < n && s[i] === v];
}

/** strconv.IsPrint: whether Go's \`%q\` writes the rune (a code point) as it is. */
export function isGoPrint(r: number): boolean {
  // Fast check for Latin-1
  if (r <= 0xff) {
    if (0x20 <= r && r <= 0x7e) {
      // All the ASCII is printable from space through DEL-1.
      return true;
    }
    if (0xa1 <= r && r <= 0xff) {
      // Similarly for ¡ through ÿ...
      return r !== 0xad; // ...except for the bizarre soft hyphen.
    }
    return false;
  }

  // Same algorithm, either on uint16 or uint32 value.
  // First, find first i such that isPrint[i] >= x.
  // This is the index of either the start or end of a pair that might span x.
  // The start is even (isPrint[i&^1]) and the end is odd (isPrint[i|1]).
  // If we find x in a range, make sure x is not in isNotPrint list.

  if (0 <= r && r < 1 << 16) {
    const [rr, isPrint, isNotPrint] = [r, isPrint16, isNotPrint16] as const;
    const [i] = bsearch(isPrint, rr);
    if (i >= isPrint.length || rr < isPrint[i & ~1]! || isPrint[i | 1]! < rr) {
      return false;
    }
    const [, found] = bsearch(isNotPrint, rr);
    return !found;
  }

  const [rr, isPrint, isNotPrint] = [r, isPrint32, isNotPrint32] as const;
  const [i] = bsearch(isPrint, rr);
  if (i >= isPrint.length || rr < isPrint[i & ~1]! || isPrint[i | 1]! < rr) {
    return false;
  }
  if (r >= 0x20000) {
    return true;
  }
  r -= 0x10000;
  const [, found] = bsearch(isNotPrint, r);
  return !found;
}

/** strconv.IsGraphic: printable, or one of the spaces (category Zs) IsPrint leaves out. */
export function isGoGraphic(r: number): boolean {
  if (isGoPrint(r)) {
    return true;
  }
  return isInGraphicList(r);
}

/** strconv's isInGraphicList; called only when isGoPrint is false. */
function isInGraphicList(r: number): boolean {
  // We know r must fit in 16 bits - see makeisprint.go.
  if (r > 0xffff) {
    return false;
  }
  const [, found] = bsearch(isGraphic, r);
  return found;
}
