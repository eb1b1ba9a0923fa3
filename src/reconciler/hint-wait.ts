// Waiting for a hint's change to be stored. The webhook answers before the API server persists the
// change (and a later admission step may still refuse it), so the reconciler waits a bounded time
// until the stored TrainJob has the hint's uid and at least its generation, then queues it; a hint
// for an object that never was stored is dropped.
import type { TrainJob } from '../api/objects.ts';
import type { Hint } from '../handoff/hint.ts';

/** The stored object is the one the hint names, at least as new as the admitted change. */
export function hintSatisfied(hint: Hint, stored: TrainJob | undefined): boolean {
  if (!stored || stored.metadata.uid !== hint.uid) return false;
  return hint.generation === null || (stored.metadata.generation ?? 0) >= hint.generation;
}

export interface AwaitOptions {
  timeoutMs: number;
  /** First poll delay; doubles up to maxIntervalMs. */
  intervalMs?: number;
  maxIntervalMs?: number;
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
}

/**
 * Polls `read` (a GET of the TrainJob: undefined when not found) until the hint is satisfied or
 * the time is up. Read errors count as "not yet". Returns whether it was persisted in time.
 */
export async function awaitPersisted(
  hint: Hint,
  read: () => Promise<TrainJob | undefined>,
  opts: AwaitOptions,
): Promise<boolean> {
  const sleep = opts.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const now = opts.now ?? Date.now;
  const deadline = now() + opts.timeoutMs;
  let interval = opts.intervalMs ?? 100;
  for (;;) {
    try {
      if (hintSatisfied(hint, await read())) return true;
    } catch {
      // not yet
    }
    const left = deadline - now();
    if (left <= 0) return false;
    await sleep(Math.min(interval, left));
    interval = Math.min(interval * 2, opts.maxIntervalMs ?? 1_000);
  }
}
