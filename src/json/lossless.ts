// Lossless JSON: integers beyond 2^53 become BigInt (activeDeadlineSeconds is int64), read from
// each number's own source text via Node 24's JSON.parse reviver context.

const INTEGER = /^-?\d+$/;

interface ReviverContext {
  source?: string;
}

function revive(this: unknown, _key: string, value: unknown, context?: ReviverContext): unknown {
  if (typeof value === 'number' && !Number.isSafeInteger(value) && context?.source && INTEGER.test(context.source)) {
    return BigInt(context.source);
  }
  return value;
}

/** 16 digits in a row: the shortest text that can hold an integer beyond 2^53 (9007199254740993). */
const LONG_DIGITS = /\d{16}/;

/** JSON.parse, except integers outside the safe range come back as exact BigInts. */
export function parseJsonLossless(text: string): unknown {
  // The reviver costs ~4x a plain parse; without a 16-digit run no number can lose precision.
  if (!LONG_DIGITS.test(text)) return JSON.parse(text);
  return JSON.parse(text, revive as (this: unknown, key: string, value: unknown) => unknown);
}

/** JSON.stringify that writes BigInts as plain JSON integers. */
export function stringifyJsonLossless(value: unknown, space?: number): string {
  const marker = '\u0000bigint:';
  const text = JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? marker + v.toString() : v), space);
  return text.replace(/"\\u0000bigint:(-?\d+)"/g, '$1');
}
