// Hand-off hints from the webhook: `{namespace, name, uid, generation}` for an admitted change. A
// hint is only a nudge. The webhook answers before the API server persists the change (and a
// later admission step may still refuse it), so the reconciler waits a bounded time until the
// stored TrainJob has that uid and at least that generation, then queues it; a hint for an object
// that never was stored is dropped. It then acts on what is stored, never on the hint.
import type { TrainJob } from '../api/objects.ts';

export interface Hint {
  namespace: string;
  name: string;
  uid: string;
  /** The generation the admitted object will be stored with; null when unknown. */
  generation: number | null;
}

export type HintParse = { ok: true; hint: Hint } | { ok: false; error: string };

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const UID = /^[A-Za-z0-9][A-Za-z0-9-]{0,127}$/;

export function parseHint(body: unknown): HintParse {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return { ok: false, error: 'a hint is a JSON object {namespace, name, uid, generation}' };
  const { namespace, name, uid, generation } = body as Record<string, unknown>;
  const errors: string[] = [];
  if (typeof namespace !== 'string' || namespace.length > 63 || !DNS_LABEL.test(namespace)) errors.push('namespace must be a DNS label');
  if (typeof name !== 'string' || name.length > 253 || !DNS_SUBDOMAIN.test(name)) errors.push('name must be a DNS subdomain');
  if (typeof uid !== 'string' || !UID.test(uid)) errors.push('uid must be an object uid');
  let gen: number | null = null;
  if (generation !== undefined && generation !== null) {
    const n = typeof generation === 'bigint' ? Number(generation) : generation;
    if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 1) errors.push('generation must be a positive integer or null');
    else gen = n;
  }
  if (errors.length) return { ok: false, error: errors.join('; ') };
  return { ok: true, hint: { namespace: namespace as string, name: name as string, uid: uid as string, generation: gen } };
}

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
export async function awaitPersisted(hint: Hint, read: () => Promise<TrainJob | undefined>, opts: AwaitOptions): Promise<boolean> {
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
