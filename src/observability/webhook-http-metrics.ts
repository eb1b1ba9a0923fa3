// controller-runtime's webhook instrumentation (promhttp's InstrumentHandlerDuration, Counter and
// InFlight around each webhook handler) as Fastify hooks: every HTTP request to one of the given
// admission paths is counted by status code, timed, and counted in flight, whatever its outcome
// (an in-band answer, a 400, a 413, a 500).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { WebhookMetrics } from './metrics.ts';

export function instrumentWebhookPaths(app: FastifyInstance, metrics: WebhookMetrics, paths: readonly string[]): void {
  const cr = metrics.controllerRuntime;
  const known = new Set(paths);
  for (const webhook of paths) {
    // As controller-runtime does: the likeliest codes exist from the start, at 0.
    cr.requests.inc({ webhook, code: '200' }, 0);
    cr.requests.inc({ webhook, code: '500' }, 0);
    cr.inFlight.set({ webhook }, 0);
  }
  const started = new WeakMap<FastifyRequest, { webhook: string; at: number }>();
  const finish = (request: FastifyRequest) => {
    const entry = started.get(request);
    if (!entry) return undefined;
    started.delete(request);
    cr.inFlight.dec({ webhook: entry.webhook });
    return entry;
  };

  app.addHook('onRequest', async (request) => {
    // The matched route's path (not the raw URL with a query string); undefined for a 404.
    const webhook = request.routeOptions.url;
    if (webhook === undefined || !known.has(webhook)) return;
    started.set(request, { webhook, at: performance.now() });
    cr.inFlight.inc({ webhook });
  });
  app.addHook('onResponse', async (request, reply) => {
    const entry = finish(request);
    if (!entry) return;
    cr.requests.inc({ webhook: entry.webhook, code: String(reply.statusCode) });
    cr.latency.observe({ webhook: entry.webhook }, (performance.now() - entry.at) / 1000);
  });
  // A client that goes away before the answer leaves the in-flight count too (promhttp's deferred
  // decrement); it is not counted by code, as no status was written.
  app.addHook('onRequestAbort', async (request) => {
    finish(request);
  });
}
