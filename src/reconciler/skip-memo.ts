// What the reconciler last said about each TrainJob it leaves alone (src/rebuild/left-alone.ts),
// so that the reason is logged at info once per change, not at every resync or watch event: a
// TrainJob another controller manages is looked at again each resync, and says why only when its
// uid, its generation (a spec change, such as numNodes) or the reason moved.
//
// Bounded like wait-memo.ts, by the keys that are skipped now: a key is forgotten when its TrainJob
// is gone or acted on again (reconcile.ts). Each key holds a fixed-size digest, not the reason's
// text, and at most `maxKeys` keys are held: past that the key noted longest ago is forgotten,
// and said again (once) at its next look.
import { createHash } from 'node:crypto';

/**
 * How many skipped TrainJobs are remembered at most: each is ~80 bytes of heap beside its key
 * (measured, Node 24), so 50,000 are ~4 MiB.
 */
export const SKIP_MEMO_MAX_KEYS = 50_000;

export class SkipMemo {
  /** Key to the digest of what was said; in the order of the last note, oldest first. */
  readonly #said = new Map<string, string>();
  readonly #maxKeys: number;

  constructor(maxKeys = SKIP_MEMO_MAX_KEYS) {
    this.#maxKeys = maxKeys;
  }

  /**
   * Notes that `key` is left alone for `reason`, its TrainJob at `uid` and `generation`. True when
   * that is news (log it at info): the first time, or when any of the three changed.
   */
  note(key: string, uid: unknown, generation: unknown, reason: string): boolean {
    const said = createHash('sha1')
      .update(JSON.stringify([String(uid), String(generation), reason]))
      .digest('base64');
    const prev = this.#said.get(key);
    this.#said.delete(key);
    this.#said.set(key, said);
    if (this.#said.size > this.#maxKeys) {
      const oldest = this.#said.keys().next();
      if (!oldest.done) this.#said.delete(oldest.value);
    }
    return prev !== said;
  }

  /** The key is no longer left alone (gone, or acted on): a later skip is news again. */
  forget(key: string): void {
    this.#said.delete(key);
  }

  /** Keys remembered. */
  get size(): number {
    return this.#said.size;
  }
}
