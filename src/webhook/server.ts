// The admission server: HTTPS, the two webhook routes, and limits that fit the API server.
import Fastify, { LogController } from 'fastify';
import type { FastifyBaseLogger, FastifyError, FastifyInstance } from 'fastify';
import { lazySchemaCompilers } from '../observability/schema-compilers.ts';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import type { Server as TlsServer } from 'node:tls';
import type { Validator } from '../rules/contract.ts';
import { trackConnections } from './connection-drain.ts';
import type { DrainTiming } from './connection-drain.ts';
import { noHandoff } from './handoff-sender.ts';
import type { HandoffSender } from './handoff-sender.ts';
import type { Logger } from '../observability/logger.ts';
import { LazyRequestLogger } from '../observability/request-logger.ts';
import type { WebhookMetrics } from '../observability/metrics.ts';
import { instrumentWebhookPaths } from '../observability/webhook-http-metrics.ts';
import type { KeyPair } from '../certs/keypair.ts';
import { serverTlsOptions } from '../certs/serving-options.ts';
import { ClientTrust, verifiedCaller, watchHandshakes } from './client-auth.ts';
import { useLosslessJsonBodies } from './json-body.ts';
import { boundBodiesInFlight, ByteBudget, MAX_SIZE_BODIES_IN_FLIGHT } from './body-budget.ts';
import { countChangeReadsBudget, DecisionBudget, moveHeld } from './decision-budget.ts';
import { MUTATE_PATH, registerMutateRoute } from './mutate.ts';
import { VALIDATE_PATH, registerValidateRoute } from './validate.ts';
import type { TrainJobReader } from '../scale/reads/trainjob-read.ts';

/**
 * controller-runtime's limit: an UPDATE carries two objects of up to 3 MiB (etcd's 1.5 MiB
 * request limit, doubled for JSON) plus under 1 MiB of envelope.
 */
export const ADMISSION_BODY_LIMIT = 7 * 1024 * 1024;

/** Aligned with controller-runtime's webhook server; Fastify's defaults would never time out a request. */
export const ADMISSION_TIMEOUTS = {
  /** Whole request received within this (controller-runtime: ReadHeaderTimeout 32 s). */
  requestTimeout: 32_000,
  /** Socket inactivity while a request is open: past the API server's 30 s maximum webhook timeout. */
  connectionTimeout: 35_000,
  /** Idle keep-alive connections (controller-runtime: IdleTimeout 90 s, like Go's DefaultTransport). */
  keepAliveTimeout: 90_000,
};

export interface AdmissionServerConfig {
  tls: KeyPair;
  /**
   * --client-ca: a client certificate chaining to `ca` is required to complete a handshake
   * (and, with `names`, must name one of them); a request over such a connection counts as the
   * API server's (AdmissionInput.callerAuthenticated).
   */
  clientAuth?: { ca: Buffer; names?: readonly string[]; trust?: ClientTrust };
  bodyLimit?: number;
  /** Request body bytes held at once (body-budget.ts); defaults to two maximum-size bodies. */
  bodyBudget?: ByteBudget;
  /** What the decisions under way may hold at once, by weight (decision-budget.ts). */
  decisionBudget?: DecisionBudget;
  /** What waits on count-change reads may hold at once, apart from the decision budget. */
  countChangeBudget?: DecisionBudget;
  /** How idle keep-alive connections are closed on shutdown (see connection-drain.ts). */
  drain?: DrainTiming;
}

export interface AdmissionServerDeps {
  validator: Validator;
  logger: Logger;
  metrics: WebhookMetrics;
  handoff?: HandoffSender;
  /** Reads the TrainJob a scale subresource write changes (scale-subresource.ts); undefined offline. */
  readTrainJob?: TrainJobReader;
  /** Clock for the mutating webhook's defaulting. */
  now?: () => Date;
}

// eslint-disable-next-line max-lines-per-function -- the server's options, hooks and routes, in order
export async function buildAdmissionServer(
  config: AdmissionServerConfig,
  deps: AdmissionServerDeps,
): Promise<FastifyInstance> {
  const bodyLimit = config.bodyLimit ?? ADMISSION_BODY_LIMIT;
  const app = Fastify({
    schemaController: lazySchemaCompilers(),
    https: serverTlsOptions({ pair: config.tls, clientCa: config.clientAuth?.ca }),
    loggerInstance: deps.logger.child({ server: 'admission' }) as FastifyBaseLogger,
    // One line per admission request is logged by the routes themselves, with the uid as reqId.
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'httpReqId' }),
    // request.log serves only refusals and failures: its child logger is made when first used.
    childLoggerFactory: (logger, bindings, options) =>
      new LazyRequestLogger(logger as Logger, bindings, options) as unknown as FastifyBaseLogger,
    bodyLimit,
    ...ADMISSION_TIMEOUTS,
    // While closing, requests on open connections are still answered (with Connection: close):
    // a 503 would fail the API server's webhook call for nothing.
    return503OnClosing: false,
    // Idle keep-alive connections are closed by the drain below, not cut at once.
    forceCloseConnections: false,
  });
  // Node requires headersTimeout <= requestTimeout.
  app.server.headersTimeout = ADMISSION_TIMEOUTS.requestTimeout;

  // On close: idle connections get a grace period, then a clean close; answers close their
  // connection (the drain marks those in flight and those received while closing), since the
  // API server keeps idle connections for 90 s and would hold the shutdown open.
  const drain = trackConnections(app.server as unknown as HttpsServer, config.drain);
  app.addHook('preClose', async () => {
    drain.start();
  });

  const trust = config.clientAuth ? (config.clientAuth.trust ?? new ClientTrust()) : undefined;
  watchHandshakes(app.server as unknown as TlsServer, {
    logger: deps.logger.child({ server: 'admission' }),
    metrics: deps.metrics,
    names: config.clientAuth?.names,
    ...(trust ? { trust } : {}),
  });
  if (trust) {
    // A connection verified under a client CA bundle no longer in force: closed when idle (the
    // API server retries on a fresh connection), or after the response it is sending.
    const answering = new Set<ServerResponse>();
    app.server.prependListener('request', (_req: IncomingMessage, res: ServerResponse) => {
      answering.add(res);
      res.once('close', () => answering.delete(res));
    });
    trust.onRenew(() => {
      app.server.closeIdleConnections();
      for (const res of answering) {
        if (!res.headersSent) res.setHeader('connection', 'close');
        else res.once('finish', () => res.socket?.end());
      }
    });
  }

  useLosslessJsonBodies(app, config.decisionBudget ?? new DecisionBudget());
  boundBodiesInFlight(app, config.bodyBudget ?? new ByteBudget(MAX_SIZE_BODIES_IN_FLIGHT * bodyLimit), bodyLimit);
  instrumentWebhookPaths(app, deps.metrics, [VALIDATE_PATH, MUTATE_PATH]);
  const edge = { logger: deps.logger, metrics: deps.metrics };
  const countChanges = config.countChangeBudget ?? countChangeReadsBudget();
  registerValidateRoute(app, {
    ...edge,
    ...{ validator: deps.validator, readTrainJob: deps.readTrainJob },
    handoff: deps.handoff ?? noHandoff,
    holdWhileReading: (res) => moveHeld(res, countChanges),
    // Without --client-ca no connection is verified, so no caller counts as authenticated.
    ...(trust ? { callerAuthenticated: (res: ServerResponse) => verifiedCaller(res.socket, trust) } : {}),
  });
  registerMutateRoute(app, { ...edge, now: deps.now ?? (() => new Date()) });

  app.setNotFoundHandler((req, reply) => {
    deps.metrics.rejected.inc({ code: '404' });
    reply.code(404).send({
      error: `${req.method} ${req.url} not found: this port serves POST ${VALIDATE_PATH} and POST ${MUTATE_PATH}`,
    });
  });
  app.setErrorHandler((err: FastifyError, req, reply) => {
    const code = err.statusCode && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 500;
    deps.metrics.rejected.inc({ code: String(code) });
    if (code === 500) {
      // Logged in full here; the client only learns that it was not its fault.
      req.log.error({ err }, 'request failed');
      return reply.code(500).send({ error: 'internal error while handling the request; see the webhook logs' });
    }
    let error = err.message;
    if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      error = `request body is too large: the limit is ${bodyLimit} bytes (${(bodyLimit / 1048576).toFixed(0)} MiB, an UPDATE with two 3 MiB objects)`;
    } else if (err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
      error = `unsupported Content-Type ${JSON.stringify(req.headers['content-type'] ?? '')}: send the AdmissionReview as application/json`;
    }
    // A shed request (decision-budget.ts): the API server's client retries a 429 after Retry-After.
    if (code === 429) reply.header('retry-after', '1');
    req.log.warn({ code, error }, 'request refused');
    return reply.code(code).send({ error });
  });
  return app;
}
