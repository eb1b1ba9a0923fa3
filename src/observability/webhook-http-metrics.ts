// controller-runtime's webhook instrumentation (promhttp's InstrumentHandlerDuration, Counter and
// InFlight around each webhook handler) as Fastify hooks: every HTTP request to one of the given
// admission paths is counted by status code, timed, and counted in flight, whatever its outcome
// (an in-band answer, a 400, a 413, a 500).
import type {
  FastifyInstance,
  FastifyRequest,
  onRequestAbortHookHandler,
  onRequestHookHandler,
  onResponseHookHandler,
  RouteOptions,
} from 'fastify';
import type { WebhookMetrics } from './metrics.ts';

/** Call before the routes are added: the hooks are attached to the routes of `paths` only. */
export function instrumentWebhookPaths(app: FastifyInstance, metrics: WebhookMetrics, paths: readonly string[]): void {
  const cr = metrics.controllerRuntime;
  const known = new Set(paths);
  for (const webhook of paths) {
    // As controller-runtime does: the likeliest codes exist from the start, at 0.
    cr.requests.inc({ webhook, code: '200' }, 0);
    cr.requests.inc({ webhook, code: '500' }, 0);
    cr.inFlight.set({ webhook }, 0);
  }
  // When each request started (performance.now()); present while it is in flight.
  const started = new WeakMap<FastifyRequest, number>();

  // Route-level hooks, made once per route with the webhook's labels: nothing runs for other
  // URLs (404s), and no request asks which route it matched. Callback-style: no promise per hook.
  app.addHook('onRoute', (route: RouteOptions) => {
    if (!known.has(route.url)) return;
    const webhook = { webhook: route.url };
    const finish = (request: FastifyRequest): number | undefined => {
      const at = started.get(request);
      if (at === undefined) return undefined;
      started.delete(request);
      cr.inFlight.dec(webhook);
      return at;
    };
    const onRequest: onRequestHookHandler = (request, _reply, done) => {
      const at = performance.now();
      started.set(request, at);
      metrics.stages.begin(request, at);
      cr.inFlight.inc(webhook);
      done();
    };
    const onResponse: onResponseHookHandler = (request, reply, done) => {
      const at = finish(request);
      if (at !== undefined) {
        const now = performance.now();
        metrics.stages.end(request, now);
        cr.requests.inc({ webhook: route.url, code: String(reply.statusCode) });
        cr.latency.observe(webhook, (now - at) / 1000);
      }
      done();
    };
    // A client that goes away before the answer leaves the in-flight count too (promhttp's
    // deferred decrement); it is not counted by code, as no status was written.
    const onRequestAbort: onRequestAbortHookHandler = (request, done) => {
      finish(request);
      done();
    };
    route.onRequest = [...asList(route.onRequest), onRequest];
    route.onResponse = [...asList(route.onResponse), onResponse];
    route.onRequestAbort = [...asList(route.onRequestAbort), onRequestAbort];
  });
}

const asList = <T>(hooks: T | T[] | undefined): T[] =>
  hooks === undefined ? [] : Array.isArray(hooks) ? hooks : [hooks];
