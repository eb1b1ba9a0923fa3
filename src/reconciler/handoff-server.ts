// The receiving end of the webhook's `--handoff` hints: plain HTTP on a loopback address only
// (the webhook container of the same pod is the one sender), `POST /hints` with one small JSON
// hint, answered 202 at once; the waiting for the change to be stored happens afterwards.
import Fastify, { LogController } from 'fastify';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { lazySchemaCompilers } from '../observability/schema-compilers.ts';
import type { Logger } from '../observability/logger.ts';
import { parseHint, type Hint } from '../handoff/hint.ts';
import type { ReconcilerMetrics } from './metrics.ts';

export const HINTS_PATH = '/hints';
/** A hint is ~200 bytes; anything much larger is not one. */
const BODY_LIMIT = 4096;

export interface HandoffServerDeps {
  logger: Logger;
  metrics: ReconcilerMetrics;
  onHint(hint: Hint): void;
}

export function isLoopback(address: string | undefined): boolean {
  return !!address && (address === '::1' || address.startsWith('127.') || address.startsWith('::ffff:127.'));
}

export async function buildHandoffServer(deps: HandoffServerDeps): Promise<FastifyInstance> {
  const app = Fastify({
    schemaController: lazySchemaCompilers(),
    loggerInstance: deps.logger.child({ server: 'handoff' }) as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: BODY_LIMIT,
    requestTimeout: 5_000,
    return503OnClosing: true,
  });
  app.addHook('onRequest', async (req, reply) => {
    // Bound to loopback already; refuse anything else in case of a misconfigured bind.
    if (!isLoopback(req.socket.remoteAddress))
      return reply.code(403).send({ error: 'hints are accepted from loopback only' });
  });
  app.post(HINTS_PATH, async (req, reply) => {
    const parsed = parseHint(req.body);
    if (!parsed.ok) {
      deps.metrics.hints.inc({ result: 'invalid' });
      return reply.code(400).send({ error: `not a hint: ${parsed.error}` });
    }
    deps.metrics.hints.inc({ result: 'received' });
    deps.onHint(parsed.hint);
    return reply.code(202).send({ accepted: true });
  });
  app.setNotFoundHandler((req, reply) =>
    reply.code(404).send({ error: `${req.method} ${req.url} not found: POST hints to ${HINTS_PATH}` }),
  );
  app.setErrorHandler((err, _req, reply) => {
    const code = (err as { statusCode?: number }).statusCode ?? 500;
    if (code < 500) deps.metrics.hints.inc({ result: 'invalid' });
    reply.code(code).send({ error: code < 500 ? `not a hint: ${(err as Error).message}` : 'internal error' });
  });
  return app;
}
