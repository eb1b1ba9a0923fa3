// Which changes of status.trainjobWebhook (the reconciler's own status field, status-field.ts) are
// its own writes coming back and which are someone else's. No decision reads the field, so its own
// write's echo must not be a reconcile (it was one per write: bench:scale's reconciles per created
// TrainJob), but anyone else's change must be (the field is written only when the stored one
// differs, so a field pruned by a status write under a CRD without it, or edited by hand, would
// stay wrong until the ~10 h resync: `kubectl get` columns and the scale subresource's status).
//
// As controller-runtime's expectations: the write is expected before it is sent, matched by the
// TrainJob's uid and the field's digest, and forgotten when the write fails. A reconcile of the
// key that starts before the echo decided from a cache older than it: the echo, when it comes, is
// then `late`, one more reconcile (but no overwrite: it counts toward no warning or delay).
// Two writers that disagree (a second install leading with its own Lease) would each rewrite the
// field on the other's write: a key overwritten again and again waits longer each time (500 ms
// doubling, up to 5 minutes; back to 500 ms after 10 quiet minutes).
import { digest } from './view-digest.ts';

/** What a TrainJob event did to the field: nothing, this process's own write, or someone else's. */
export type FieldEffect = 'same' | 'ours' | 'late' | 'overwritten';

const FIRST_DELAY_MS = 500;
const MAX_DELAY_MS = 5 * 60_000;
/** Overwrites further apart than this start counting again. */
const QUIET_MS = 10 * 60_000;
/** At this many overwrites in a row, say so (once per run of them). */
export const OVERWRITES_WORTH_A_WARNING = 5;

export class StatusFieldEchoes {
  /** key -> `${uid}/${digest}` of the field being written; `late`: a reconcile started since. */
  readonly #expected = new Map<string, { field: string; late: boolean }>();
  /** key -> digest of the field in the last event judged. */
  readonly #seen = new Map<string, string>();
  readonly #overwrites = new Map<string, { count: number; last: number }>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** Before this process writes `field` to the TrainJob of `uid`. */
  expect(key: string, uid: string | undefined, field: unknown): void {
    this.#expected.set(key, { field: `${uid}/${digest(field ?? null)}`, late: false });
  }

  /** A reconcile of the key starts: an echo still to come is then late. */
  reconcileStarts(key: string): void {
    const pending = this.#expected.get(key);
    if (pending) pending.late = true;
  }

  /** The write failed: nothing to expect. */
  writeFailed(key: string): void {
    this.#expected.delete(key);
  }

  /** The TrainJob is gone. */
  drop(key: string): void {
    this.#expected.delete(key);
    this.#seen.delete(key);
    this.#overwrites.delete(key);
  }

  /** One TrainJob event: its uid and stored field. */
  judge(key: string, uid: string | undefined, stored: unknown): FieldEffect {
    const now = digest(stored ?? null);
    const before = this.#seen.get(key);
    this.#seen.set(key, now);
    const pending = this.#expected.get(key);
    if (pending?.field === `${uid}/${now}`) {
      this.#expected.delete(key);
      return pending.late ? 'late' : 'ours';
    }
    if (before === undefined || before === now) return 'same';
    const last = this.#overwrites.get(key);
    const t = this.#now();
    const count = last && t - last.last < QUIET_MS ? last.count + 1 : 1;
    this.#overwrites.set(key, { count, last: t });
    return 'overwritten';
  }

  /** How many times in a row the key's field was overwritten (0: not lately). */
  overwrites(key: string): number {
    const last = this.#overwrites.get(key);
    return last && this.#now() - last.last < QUIET_MS ? last.count : 0;
  }

  /** How long to wait before looking again at a key whose field someone else wrote. */
  delayMs(key: string): number {
    const n = Math.max(1, this.overwrites(key));
    return Math.min(FIRST_DELAY_MS * 2 ** Math.min(n - 1, 20), MAX_DELAY_MS);
  }

  /** Keys with something noted. */
  get size(): number {
    return this.#seen.size;
  }
}
