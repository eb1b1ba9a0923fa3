// Lossless JSON: integers beyond 2^53 become BigInt (activeDeadlineSeconds is int64), read from
// each number's own source text; nesting is bounded like Go's decoder.
import { JsonDepthError, nestsDeeperThan, parseJsonExact } from './exact-parse.ts';

export { JsonDepthError } from './exact-parse.ts';

/** Go's encoding/json (and so the API server's decoder) refuses deeper nesting: "exceeded max depth". */
export const GO_MAX_JSON_DEPTH = 10_000;

const isDigit = (c: number): boolean => c >= 0x30 && c <= 0x39;

/**
 * Whether the text has 16 digits in a row: the shortest text that can hold an integer beyond
 * 2^53 (9007199254740993). Any such run covers one of every 16th position, so only those are
 * looked at, and the run around a digit found there is measured: 2-3x faster than /\d{16}/.
 */
export function hasLongDigitRun(text: string): boolean {
  for (let i = 15; i < text.length; i += 16) {
    if (!isDigit(text.charCodeAt(i))) continue;
    let lo = i;
    while (lo > 0 && isDigit(text.charCodeAt(lo - 1))) lo--;
    let hi = i;
    while (hi + 1 < text.length && isDigit(text.charCodeAt(hi + 1))) hi++;
    if (hi - lo + 1 >= 16) return true;
  }
  return false;
}

/**
 * JSON.parse, except integers outside the safe range come back as exact BigInts, and text
 * nesting arrays and objects deeper than `maxDepth` is refused with a JsonDepthError.
 */
export function parseJsonLossless(text: string, maxDepth = GO_MAX_JSON_DEPTH): unknown {
  // Without a 16-digit run no number can lose precision: the native parser (~4x faster) will do.
  if (hasLongDigitRun(text)) return parseJsonExact(text, maxDepth);
  const value: unknown = JSON.parse(text);
  // Text shorter than two brackets a level cannot nest that deep: most bodies skip the walk.
  if (text.length > 2 * maxDepth && nestsDeeperThan(value, maxDepth)) throw new JsonDepthError(maxDepth);
  return value;
}

/** JSON.stringify that writes BigInts as plain JSON integers. */
export function stringifyJsonLossless(value: unknown, space?: number): string {
  const marker = '\u0000bigint:';
  const text = JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? marker + v.toString() : v), space);
  return text.replace(/"\\u0000bigint:(-?\d+)"/g, '$1');
}
