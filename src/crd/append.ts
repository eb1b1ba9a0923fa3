// Appending a list of any length. `target.push(...items)` passes every item as an argument and
// throws RangeError ("Maximum call stack size exceeded") past roughly 100,000: a hostile object
// yields that many field errors or unknown-field paths (one per item of a long list).
export function appendAll<T>(target: T[], items: Iterable<T>): T[] {
  for (const item of items) target.push(item);
  return target;
}
