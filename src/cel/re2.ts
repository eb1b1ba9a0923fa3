// CEL's matches() is RE2: RE2 syntax (no lookaround or backreferences, `(?i)` flags) and linear
// time on any input. re2js is a pure-JS port of RE2, so hostile patterns cannot backtrack.
import { RE2JS } from 're2js';

export class RegexError extends Error {}

const CACHE_LIMIT = 256;
const compiled = new Map<string, RE2JS>();

function compile(pattern: string): RE2JS {
  let re = compiled.get(pattern);
  if (re) return re;
  try {
    re = RE2JS.compile(pattern);
  } catch (err) {
    throw new RegexError(`invalid regular expression ${JSON.stringify(pattern)}: ${(err as Error).message}`);
  }
  if (compiled.size >= CACHE_LIMIT) compiled.delete(compiled.keys().next().value as string);
  compiled.set(pattern, re);
  return re;
}

/** True when the pattern matches anywhere in the string (RE2 PartialMatch, as cel-go does). */
export function re2Matches(text: string, pattern: string): boolean {
  return compile(pattern).matcher(text).find();
}

/** Throws RegexError for a pattern RE2 rejects; used to check constant patterns at start-up. */
export function checkRe2Pattern(pattern: string): void {
  compile(pattern);
}
