// One copy of each repeated string in the cache: 10,000 TrainJobs, JobSets and Jobs repeat the same
// namespaces, kinds, API versions, condition types and reasons, managers and container names, and
// a JSON parse makes a string of each occurrence. Like client-go's string interning of object
// keys. The table is bounded (names and uids never repeat): when full it starts over, which only
// costs sharing, never correctness. Returns a copy: the input is never changed.
const MAX_ENTRIES = 8192;
/** Longer strings rarely repeat (messages, digests); they are kept as they are. */
const MAX_LENGTH = 128;

let table = new Map<string, string>();

function internString(s: string): string {
  if (s.length > MAX_LENGTH) return s;
  const known = table.get(s);
  if (known !== undefined) return known;
  if (table.size >= MAX_ENTRIES) table = new Map();
  table.set(s, s);
  return s;
}

/** A copy of a JSON value whose strings are the table's. */
export function intern(value: unknown): unknown {
  if (typeof value === 'string') return internString(value);
  if (Array.isArray(value)) return value.map(intern);
  if (typeof value !== 'object' || value === null) return value;
  // Only what a JSON parse makes (a Date in a test's object stays as it is).
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = intern(v);
  return out;
}
