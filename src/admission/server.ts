// The admission server (HTTPS, the two webhook routes, limits that fit the API server) and
// `serve` put together: certificates, ops port, hand-off, reload, graceful shutdown.
import Fastify, { LogController } from 'fastify';
import type { FastifyBaseLogger, FastifyError, FastifyInstance } from 'fastify';
import type { Server as HttpsServer } from 'node:https';
import type { Validator } from './admission/types.ts';
import type { ServeConfig } from './config/serve.ts';
import { trackConnections } from './connection-drain.ts';
import type { DrainTiming } from './connection-drain.ts';
import { createHandoffSender, noHandoff } from './handoff/sender.ts';
import type { HandoffSender } from './handoff/sender.ts';
import type { Logger } from './observability/logger.ts';
import { createMetrics } from './observability/metrics.ts';
import type { WebhookMetrics } from './observability/metrics.ts';
import { buildOpsServer } from './observability/ops-server.ts';
import { instrumentWebhookPaths } from './observability/webhook-http-metrics.ts';
import type { Readiness } from './observability/ops-server.ts';
import { readKeyPair, summarizeCert } from './tls/keypair.ts';
import type { KeyPair } from './tls/keypair.ts';
import { watchCertificates } from './tls/reloader.ts';
import { ensureSelfSignedCert } from './tls/selfsigned.ts';
import { useLosslessJsonBodies } from './webhooks/json-body.ts';
import { MUTATE_PATH, registerMutateRoute } from './webhooks/mutate.ts';
import { VALIDATE_PATH, registerValidateRoute } from './webhooks/validate.ts';

export { buildOpsServer } from './observability/ops-server.ts';
export type { Readiness } from './observability/ops-server.ts';

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
  bodyLimit?: number;
  /** How idle keep-alive connections are closed on shutdown (see connection-drain.ts). */
  drain?: DrainTiming;
}

export interface AdmissionServerDeps {
  validator: Validator;
  logger: Logger;
  metrics: WebhookMetrics;
  handoff?: HandoffSender;
  /** Clock for the mutating webhook's defaulting. */
  now?: () => Date;
}

export async function buildAdmissionServer(config: AdmissionServerConfig, deps: AdmissionServerDeps): Promise<FastifyInstance> {
  const bodyLimit = config.bodyLimit ?? ADMISSION_BODY_LIMIT;
  const app = Fastify({
    https: { cert: config.tls.cert, key: config.tls.key, minVersion: 'TLSv1.2' },
    loggerInstance: deps.logger.child({ server: 'admission' }) as FastifyBaseLogger,
    // One line per admission request is logged by the routes themselves, with the uid as reqId.
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'httpReqId' }),
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
  // connection (Fastify marks those received while closing; this marks those already in flight),
  // since the API server keeps idle connections for 90 s and would hold the shutdown open.
  const drain = trackConnections(app.server as unknown as HttpsServer, config.drain);
  app.addHook('preClose', async () => {
    drain.start();
  });
  app.addHook('onSend', async (_req, reply, payload) => {
    if (drain.draining) reply.header('connection', 'close');
    return payload;
  });

  useLosslessJsonBodies(app);
  instrumentWebhookPaths(app, deps.metrics, [VALIDATE_PATH, MUTATE_PATH]);
  const edge = { logger: deps.logger, metrics: deps.metrics };
  registerValidateRoute(app, { ...edge, validator: deps.validator, handoff: deps.handoff ?? noHandoff });
  registerMutateRoute(app, { ...edge, now: deps.now ?? (() => new Date()) });

  app.setNotFoundHandler((req, reply) => {
    deps.metrics.rejected.inc({ code: '404' });
    reply.code(404).send({ error: `${req.method} ${req.url} not found: this port serves POST ${VALIDATE_PATH} and POST ${MUTATE_PATH}` });
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
    req.log.warn({ code, error }, 'request refused');
    return reply.code(code).send({ error });
  });
  return app;
}

export interface ServeDeps {
  validator: Validator;
  logger: Logger;
  /** Defaults to a fresh registry with process metrics. */
  metrics?: WebhookMetrics;
  /** How idle keep-alive connections are closed on shutdown; defaults to DEFAULT_DRAIN_TIMING. */
  drain?: DrainTiming;
}

export interface ServeHandle {
  admission: FastifyInstance;
  ops: FastifyInstance;
  metrics: WebhookMetrics;
  /** `https://host:port` and `http://host:port` actually bound (port 0 resolved). */
  admissionUrl: string;
  opsUrl: string;
  /** Stops taking requests, drains in-flight ones and pending hints, then closes everything. */
  close(): Promise<void>;
}

/** Starts `serve`: certificate, admission and ops servers, reload and hand-off. */
export async function startServe(config: ServeConfig, deps: ServeDeps): Promise<ServeHandle> {
  const { logger } = deps;
  const metrics = deps.metrics ?? createMetrics({ defaultMetrics: true });
  const pair = await loadServingCert(config, logger);

  const handoff = config.handoff
    ? createHandoffSender({ url: config.handoff.url, timeoutMs: config.handoff.timeoutMs, logger, metrics })
    : noHandoff;
  let state: 'starting' | 'serving' | 'closing' = 'starting';
  const readiness: Readiness = {
    notReadyReason: () => (state === 'serving' ? undefined : state === 'starting' ? 'admission server is starting' : 'shutting down'),
  };

  const admission = await buildAdmissionServer({ tls: pair, drain: deps.drain }, { validator: deps.validator, logger, metrics, handoff });
  const ops = await buildOpsServer({ metrics, logger, readiness });
  const opsUrl = await listenOps(ops, config, logger);
  let admissionUrl: string;
  try {
    admissionUrl = await admission.listen({ host: config.host, port: config.port });
  } catch (err) {
    await ops.close();
    throw err;
  }
  const reloader = watchCertificates({
    dir: config.tls.dir,
    current: pair,
    apply: (p) => (admission.server as unknown as { setSecureContext(o: KeyPair): void }).setSecureContext(p),
    logger,
    metrics,
  });
  state = 'serving';
  logger.info(
    {
      admission: admissionUrl,
      ops: opsUrl,
      validator: deps.validator.describe(),
      cluster: config.cluster.mode,
      handoff: config.handoff?.url.href ?? 'off',
    },
    'serving',
  );

  let closing: Promise<void> | undefined;
  return {
    admission,
    ops,
    metrics,
    admissionUrl,
    opsUrl,
    close() {
      closing ??= (async () => {
        state = 'closing';
        logger.info('shutting down: draining in-flight admission requests');
        reloader.close();
        await admission.close();
        await handoff.idle();
        await ops.close();
        logger.info('shut down');
      })();
      return closing;
    },
  };
}

/**
 * The ops port. Only the default one may be busy (e.g. a second webhook started by hand with just
 * --port): admission is the main job, so it then runs without health and metrics, and says so.
 */
async function listenOps(ops: FastifyInstance, config: ServeConfig, logger: Logger): Promise<string> {
  try {
    return await ops.listen({ host: config.host, port: config.opsPort });
  } catch (err) {
    if (config.opsPortExplicit || (err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
    logger.warn({ opsPort: config.opsPort }, `the default ops port ${config.opsPort} is in use: health and metrics are not served; pass --ops-port to choose one`);
    return 'none';
  }
}

async function loadServingCert(config: ServeConfig, logger: Logger): Promise<KeyPair> {
  if (config.tls.mode === 'files') {
    try {
      const pair = await readKeyPair(config.tls.dir);
      logger.info({ dir: config.tls.dir, ...summarizeCert(pair.cert) }, 'serving certificate loaded');
      return pair;
    } catch (err) {
      throw new Error(`--cert-dir ${config.tls.dir}: ${(err as Error).message}`);
    }
  }
  const cert = await ensureSelfSignedCert(config.tls.dir);
  const msg = cert.generated ? `self-signed certificate generated (${cert.reason})` : 'self-signed certificate reused';
  logger.info({ dir: config.tls.dir, caFile: `${config.tls.dir}/ca.crt`, ...summarizeCert(cert.cert) }, msg);
  return { cert: cert.cert, key: cert.key };
}

export interface ProcessHandlerOptions {
  logger: Logger;
  /** After this, a shutdown that has not finished exits the process with code 1. */
  timeoutMs: number;
  signals?: NodeJS.Signals[];
  /** Ends the process (tests pass their own). */
  exit?: (code: number) => void;
}

/**
 * SIGTERM/SIGINT drain and close `handle`, then the process ends with its exit code (0 unless
 * set). A second signal, or a drain slower than `timeoutMs`, exits at once with code 1. Once
 * closed, the process does not wait for stray handles (a client library's leaked sockets kept
 * `serve` alive beside a real API server): it exits as soon as the event loop has had a turn to
 * finish what is under way. Unhandled rejections are logged instead of killing the process
 * mid-request.
 */
export function installProcessHandlers(handle: Pick<ServeHandle, 'close'>, options: ProcessHandlerOptions): () => void {
  const { logger } = options;
  const exit = options.exit ?? ((code: number) => process.exit(code));
  const signals = options.signals ?? ['SIGTERM', 'SIGINT'];
  let received = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (received) {
      logger.warn({ signal }, 'second signal: exiting without waiting');
      exit(1);
      return;
    }
    received = true;
    logger.info({ signal }, 'signal received');
    const force = setTimeout(() => {
      logger.error({ timeoutMs: options.timeoutMs }, 'shutdown did not finish in time: exiting');
      exit(1);
    }, options.timeoutMs);
    force.unref();
    handle.close().then(
      () => {
        clearTimeout(force);
        // Unref'd: a process with nothing left running ends on its own first.
        setTimeout(() => exit(typeof process.exitCode === 'number' ? process.exitCode : 0), CLOSED_EXIT_DELAY_MS).unref();
      },
      (err: unknown) => {
        logger.error({ error: (err as Error).message }, 'shutdown failed');
        exit(1);
      },
    );
  };
  const onRejection = (reason: unknown) => {
    logger.error({ error: reason instanceof Error ? reason.message : String(reason) }, 'unhandled promise rejection');
  };
  for (const s of signals) process.on(s, onSignal);
  process.on('unhandledRejection', onRejection);
  return () => {
    for (const s of signals) process.off(s, onSignal);
    process.off('unhandledRejection', onRejection);
  };
}

/** After a completed shutdown, the turn the process gets to end by itself before it is ended. */
const CLOSED_EXIT_DELAY_MS = 100;
