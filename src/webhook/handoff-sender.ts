// Hand-off hints to the reconciler sidecar: after an admitted, non-dry-run CREATE/UPDATE the
// webhook tells the reconciler which TrainJob to look at. A hint is only a nudge (the reconciler
// also watches TrainJobs), so it is fire-and-forget: it never delays or fails an admission answer.
import type { Hint } from '../handoff/hint.ts';
import { stringifyJsonLossless } from '../json/lossless.ts';
import type { Logger } from '../observability/logger.ts';
import type { WebhookMetrics } from '../observability/metrics.ts';

export interface HandoffSender {
  /** Starts posting the hint and returns at once; failures are logged and counted, never thrown. */
  send(hint: Hint): void;
  /** Resolves when every hint started so far has finished (tests, graceful shutdown). */
  idle(): Promise<void>;
}

export interface HandoffSenderOptions {
  url: URL;
  timeoutMs: number;
  logger: Logger;
  metrics: WebhookMetrics;
  /** Injectable for tests; defaults to the global fetch. */
  fetch?: typeof fetch;
}

export function createHandoffSender(options: HandoffSenderOptions): HandoffSender {
  const doFetch = options.fetch ?? fetch;
  const inFlight = new Set<Promise<void>>();
  const log = options.logger.child({ handoff: options.url.href });

  async function post(hint: Hint): Promise<void> {
    const started = performance.now();
    try {
      const res = await doFetch(options.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: stringifyJsonLossless(hint),
        signal: AbortSignal.timeout(options.timeoutMs),
      });
      await res.body?.cancel();
      if (!res.ok) throw new Error(`reconciler answered HTTP ${res.status}`);
      options.metrics.handoffHints.inc({ result: 'delivered' });
      log.info({ ...hintFields(hint), latencyMs: elapsed(started) }, 'hand-off hint sent');
    } catch (err) {
      options.metrics.handoffHints.inc({ result: 'failed' });
      log.warn({ ...hintFields(hint), error: describe(err), latencyMs: elapsed(started) }, 'hand-off hint failed');
    }
  }

  return {
    send(hint) {
      const p = post(hint).finally(() => inFlight.delete(p));
      inFlight.add(p);
    },
    async idle() {
      while (inFlight.size > 0) await Promise.all(inFlight);
    },
  };
}

/** A sender for `serve` without `--handoff`: hints go nowhere and nothing is counted. */
export const noHandoff: HandoffSender = {
  send() {},
  async idle() {},
};

function hintFields(hint: Hint) {
  return {
    namespace: hint.namespace,
    name: hint.name,
    uid: hint.uid,
    generation: hint.generation === null ? null : String(hint.generation),
  };
}

function elapsed(started: number): number {
  return Math.round((performance.now() - started) * 100) / 100;
}

function describe(err: unknown): string {
  if (err instanceof Error) {
    if (err.name === 'TimeoutError') return 'timed out';
    const cause = (err as Error & { cause?: unknown }).cause;
    return cause instanceof Error ? `${err.message}: ${cause.message}` : err.message;
  }
  return String(err);
}
