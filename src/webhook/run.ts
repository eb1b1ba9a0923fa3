// `serve` put together: certificates, the admission and ops servers, hand-off, certificate
// reload, and a graceful shutdown.
import type { FastifyInstance } from 'fastify';
import type { Server as TlsServer } from 'node:tls';
import type { Validator } from '../rules/contract.ts';
import { buildAdmissionServer } from './server.ts';
import type { DrainTiming } from './connection-drain.ts';
import type { ServeConfig } from './config.ts';
import { createHandoffSender, noHandoff, type HandoffSender } from './handoff-sender.ts';
import { listenOn } from '../process/listen.ts';
import type { Logger } from '../observability/logger.ts';
import { createMetrics } from '../observability/metrics.ts';
import type { WebhookMetrics } from '../observability/metrics.ts';
import { buildOpsServer } from '../observability/ops-server.ts';
import type { Readiness } from '../observability/ops-server.ts';
import { readKeyPair, summarizeCert } from '../certs/keypair.ts';
import type { KeyPair } from '../certs/keypair.ts';
import { watchCertificates } from '../certs/reloader.ts';
import { replaceServingCertificate } from '../certs/serving-options.ts';
import { ensureSelfSignedCert } from '../certs/selfsigned.ts';

export interface ServeDeps {
  validator: Validator;
  logger: Logger;
  /** Defaults to a fresh registry with process metrics. */
  metrics?: WebhookMetrics;
  /** How idle keep-alive connections are closed on shutdown; defaults to DEFAULT_DRAIN_TIMING. */
  drain?: DrainTiming;
  /**
   * Settles once the serving certificate is in --cert-dir (--cert-rotation). Until then the ops
   * port already answers (/healthz 200, /readyz 503 "waiting for the serving certificate"), so a
   * slow API server or a missing right never fails the liveness probe into CrashLoopBackOff.
   */
  certificateReady?: Promise<void>;
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

  let state: 'certificate' | 'starting' | 'serving' | 'closing' = deps.certificateReady ? 'certificate' : 'starting';
  const reasons = { certificate: 'waiting for the serving certificate', starting: 'admission server is starting', closing: 'shutting down' } as const;
  const readiness: Readiness = { notReadyReason: () => (state === 'serving' ? undefined : reasons[state]) };
  const ops = await buildOpsServer({ metrics, logger, readiness });
  const opsUrl = await listenOps(ops, config, logger);

  const handoff: HandoffSender = config.handoff
    ? createHandoffSender({ url: config.handoff.url, timeoutMs: config.handoff.timeoutMs, logger, metrics })
    : noHandoff;
  let admission: FastifyInstance;
  let admissionUrl: string;
  let pair: KeyPair;
  try {
    await deps.certificateReady;
    state = 'starting';
    pair = await loadServingCert(config, logger);
    admission = await buildAdmissionServer({ tls: pair, drain: deps.drain }, { validator: deps.validator, logger, metrics, handoff });
    admissionUrl = await listenOn(admission, config.host, config.port);
  } catch (err) {
    await ops.close();
    throw err;
  }
  const reloader = watchCertificates({
    dir: config.tls.dir,
    current: pair,
    apply: (p) => replaceServingCertificate(admission.server as unknown as TlsServer, p),
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
    return await listenOn(ops, config.host, config.opsPort);
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
