// The operations port: plain HTTP, health and metrics only. It never serves admission and the
// admission port never serves these, so probes and scrapes need no TLS and cannot reach a webhook.
import Fastify, { LogController } from 'fastify';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { lazySchemaCompilers } from './schema-compilers.ts';
import type { Logger } from './logger.ts';
import type { WebhookMetrics } from './metrics.ts';

export interface Readiness {
  /** Undefined when ready; otherwise why not (shown by /readyz). */
  notReadyReason(): string | undefined;
}

export interface OpsServerDeps {
  /** Only the registry is served; the reconciler passes its own. */
  metrics: Pick<WebhookMetrics, 'registry'>;
  logger: Logger;
  readiness: Readiness;
}

export async function buildOpsServer(deps: OpsServerDeps): Promise<FastifyInstance> {
  const app = Fastify({
    schemaController: lazySchemaCompilers(),
    loggerInstance: deps.logger.child({ server: 'ops' }) as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    requestTimeout: 10_000,
    connectionTimeout: 30_000,
    keepAliveTimeout: 30_000,
    return503OnClosing: true,
  });

  // Liveness: the process answers. Readiness: the admission server listens and is not draining.
  app.get('/healthz', async (_req, reply) => reply.type('text/plain').send('ok'));
  app.get('/readyz', async (_req, reply) => {
    const reason = deps.readiness.notReadyReason();
    if (reason === undefined) return reply.type('text/plain').send('ok');
    return reply.code(503).type('text/plain').send(`not ready: ${reason}`);
  });
  app.get('/metrics', async (_req, reply) => {
    const text = await deps.metrics.registry.metrics();
    return reply.type(deps.metrics.registry.contentType).send(text);
  });
  app.setNotFoundHandler((req, reply) => {
    reply
      .code(404)
      .send({ error: `${req.method} ${req.url} not found: this port serves /healthz, /readyz and /metrics` });
  });
  app.setErrorHandler((err, req, reply) => {
    req.log.error({ err: { message: (err as Error).message } }, 'ops request failed');
    reply.code(500).send({ error: 'internal error' });
  });
  return app;
}
