// Upstream Trainer's defaulting (TrainJobDefaulter.Default in kubeflow/trainer
// pkg/webhooks/trainjob_webhook.go), as a minimal JSONPatch over `spec.runtimePatches[].time`:
// - CREATE: every patch without a time gets now;
// - UPDATE: a patch whose old version (matched by `manager`) is equal apart from `time` gets the
//   old time back; any other patch keeps the time it carries, or gets now when it has none.
// Only `time` fields are touched. The one `remove`: a patch unchanged since an old version that
// had no time loses a time the update tried to give it, as upstream's `patch.Time = old.Time` does.
import { isObject } from '../json/object.ts';
import type { Operation } from '../rules/contract.ts';

export type TimePatchOp = { op: 'add' | 'replace'; path: string; value: string } | { op: 'remove'; path: string };

/** metav1.Time's JSON form: RFC 3339 in UTC with whole seconds (`2026-01-02T03:04:05Z`). */
export function metav1Time(now: Date): string {
  return now.toISOString().replace(/\.\d+Z$/, 'Z');
}

export function defaultRuntimePatchTimes(
  operation: Operation,
  object: unknown,
  oldObject: unknown,
  now: Date,
): TimePatchOp[] {
  if (operation !== 'CREATE' && operation !== 'UPDATE') return [];
  const patches = runtimePatches(object);
  const stamp = metav1Time(now);
  // Last one wins for a repeated manager, like upstream's map.
  const oldByManager = new Map<string, Record<string, unknown>>();
  if (operation === 'UPDATE') {
    for (const old of runtimePatches(oldObject)) if (old) oldByManager.set(managerOf(old), old);
  }

  const ops: TimePatchOp[] = [];
  patches.forEach((patch, i) => {
    if (!patch) return; // not an object: the schema check reports it
    const current = patch.time ?? undefined;
    const old = oldByManager.get(managerOf(patch));
    let wanted: unknown;
    if (old && equalApartFromTime(old, patch)) {
      // A metav1.Time is a string: an old time of another type (Go could not decode it) is left
      // alone, never copied into the patch (a bigint or a deep value cannot even be serialised).
      if (old.time !== undefined && old.time !== null && typeof old.time !== 'string') return;
      wanted = old.time ?? undefined;
    } else wanted = current ?? stamp;
    if (equalNilAsEmpty(wanted, current)) return;
    const path = `/spec/runtimePatches/${i}/time`;
    if (wanted === undefined) ops.push({ op: 'remove', path });
    else ops.push({ op: 'time' in patch ? 'replace' : 'add', path, value: wanted as string });
  });
  return ops;
}

function runtimePatches(obj: unknown): (Record<string, unknown> | undefined)[] {
  const list = asRecord(asRecord(obj)?.spec)?.runtimePatches;
  return Array.isArray(list) ? list.map(asRecord) : [];
}

/** Go decodes a missing manager as "". */
function managerOf(patch: Record<string, unknown>): string {
  return typeof patch.manager === 'string' ? patch.manager : '';
}

function equalApartFromTime(a: Record<string, unknown>, b: Record<string, unknown>): boolean {
  const { time: _a, ...restA } = a;
  const { time: _b, ...restB } = b;
  return equalNilAsEmpty(restA, restB);
}

/**
 * equality.Semantic.DeepEqual on decoded JSON: an absent field equals null, and an empty list
 * equals an absent one (Go's nil and empty slices compare equal). Empty objects are not treated
 * as absent: without the Go types a map cannot be told from a struct pointer.
 */
// eslint-disable-next-line complexity -- Semantic.DeepEqual's nil-as-empty cases in one explicit-stack loop
export function equalNilAsEmpty(a: unknown, b: unknown): boolean {
  // Iterative: a value of the wrong type can nest as deep as the decoder allows.
  const pairs: Array<[unknown, unknown]> = [[a, b]];
  while (pairs.length > 0) {
    const [x, y] = pairs.pop()!;
    if (isEmpty(x) && isEmpty(y)) continue;
    if (Array.isArray(x) || Array.isArray(y)) {
      if (!Array.isArray(x) || !Array.isArray(y) || x.length !== y.length) return false;
      for (let i = 0; i < x.length; i++) pairs.push([x[i], y[i]]);
      continue;
    }
    const rx = asRecord(x);
    const ry = asRecord(y);
    if (rx || ry) {
      if (!rx || !ry) return false;
      for (const k of new Set([...Object.keys(rx), ...Object.keys(ry)])) pairs.push([rx[k], ry[k]]);
      continue;
    }
    if (x !== y) return false;
  }
  return true;
}

function isEmpty(v: unknown): boolean {
  return v === undefined || v === null || (Array.isArray(v) && v.length === 0);
}

function asRecord(v: unknown): Record<string, unknown> | undefined {
  return isObject(v) ? v : undefined;
}
