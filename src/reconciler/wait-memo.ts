// How long each TrainJob has been waiting, and on what: a rebuild that waits for something slow (a
// pod stuck Terminating on an unreachable node, a foreign finalizer) is logged once per change of
// what it waits for, and polled less often the longer it waits, so that a stuck job costs neither a
// log line nor live reads every few seconds. Short waits, the usual case, keep the quick poll.
export const WAIT_POLL = {
  /** Waits shorter than this keep the caller's poll interval. */
  quickForMs: 30_000,
  /** A long wait is polled every tenth of its age, at most this far apart. */
  maxDelayMs: 60_000,
};

export class WaitMemo {
  private readonly waits = new Map<string, { sinceMs: number; detail: string }>();

  /** Records that `key` waits on `detail`; says whether that is news (log it) and when to look again. */
  note(key: string, detail: string, nowMs: number, pollMs: number): { news: boolean; delayMs: number } {
    const prev = this.waits.get(key);
    const sinceMs = prev?.sinceMs ?? nowMs;
    this.waits.set(key, { sinceMs, detail });
    const age = nowMs - sinceMs;
    const delayMs =
      age < WAIT_POLL.quickForMs ? pollMs : Math.min(WAIT_POLL.maxDelayMs, Math.max(pollMs, Math.round(age / 10)));
    return { news: prev?.detail !== detail, delayMs };
  }

  /** The key no longer waits (acted, current, gone). */
  clear(key: string): void {
    this.waits.delete(key);
  }
}
