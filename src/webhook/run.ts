// `serve` put together: the cluster connection, certificate rotation, the policy in force, the
// admission and ops servers, hand-off, certificate reload, and a graceful shutdown.
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
import { replaceServingMaterial, type ServingMaterial } from '../certs/serving-options.ts';
import { watchClientCa } from '../certs/client-ca.ts';
import { ClientTrust } from './client-auth.ts';
import { ensureSelfSignedCert } from '../certs/selfsigned.ts';
import type { CertRotation } from '../certs/rotator.ts';
import type { ApiClient } from '../cluster/api-request.ts';
import { createValidator } from '../rules/validator.ts';
import { policySource, type PolicySource } from './policy-source.ts';
import type { TrainJobReader } from '../scale/reads/trainjob-read.ts';

/**
 * What reads the cluster, loaded only when cluster access is configured. None of it loads
 * @kubernetes/client-node (~0.9 s and ~80 MiB at import): connect.ts does, for a kubeconfig user
 * only client-node implements (exec, auth-provider).
 */
async function loadClusterModules() {
  const [connect, errors, jobsets, follower, scale, lease, runtimes, trainJobs, slots] = await Promise.all([
    import('../cluster/connect.ts'),
    import('../cluster/errors.ts'),
    import('../scale/reads/jobset-read.ts'),
    import('./crd-follower.ts'),
    import('../scale/reads/scale-check.ts'),
    import('../scale/reads/lease-watch.ts'),
    import('../scale/reads/runtime-watch.ts'),
    import('../scale/reads/trainjob-read.ts'),
    import('../cluster/slots.ts'),
  ]);
  return { ...connect, ...errors, ...jobsets, ...follower, ...scale, ...lease, ...runtimes, ...trainJobs, ...slots };
}

/** --cert-rotation's modules, only when it is on: they bring @peculiar/x509 (~15 MiB, ~0.15 s at import). */
async function loadRotationModules() {
  const [rotator, store] = await Promise.all([import('../certs/rotator.ts'), import('../certs/store.ts')]);
  return { ...rotator, ...store };
}

/**
 * --cert-rotation: started here; its `ready` settles once the Secret is settled and its files are
 * in the cert dir (the admission server waits for it, the ops port does not); afterwards the
 * server's reloader picks up each renewal from those files.
 */
async function startRotation(
  config: ServeConfig,
  api: ApiClient | undefined,
  logger: Logger,
): Promise<CertRotation | undefined> {
  const r = config.certRotation;
  if (!r || !api) return undefined;
  const { kubernetesCertStore, startCertRotation, ROTATION_DEFAULTS } = await loadRotationModules();
  const webhookConfigs = [
    { kind: 'validating' as const, name: r.validatingWebhookConfig },
    { kind: 'mutating' as const, name: r.mutatingWebhookConfig },
  ];
  const store = kubernetesCertStore(api, { namespace: r.namespace, name: r.secretName }, webhookConfigs);
  const rotation = startCertRotation(
    { ...ROTATION_DEFAULTS, hosts: r.hosts, webhookConfigs, certDir: config.tls.dir },
    store,
    logger.child({ component: 'cert-rotation' }),
  );
  logger.info(
    { secret: `${r.namespace}/${r.secretName}`, hosts: r.hosts, dir: config.tls.dir },
    'certificate rotation started; waiting for the serving certificate',
  );
  return rotation;
}

/** A started `serve`: close() stops following the CRD and rotating, then drains and closes both servers. */
export interface Webhook {
  close(): Promise<void>;
}

/**
 * `serve` as a whole, from its config: connects to the cluster when told to, starts certificate
 * rotation, settles the policy in force, then the servers. Whatever started is stopped again when a
 * later step fails.
 */
export async function startWebhook(config: ServeConfig, logger: Logger, metrics: WebhookMetrics): Promise<Webhook> {
  let policies: PolicySource | undefined;
  let rotation: CertRotation | undefined;
  let watches: JudgmentWatches | undefined;
  /** Stops what runs beside the servers: the CRD follower, the judgment's watches and the rotation. */
  const stopBackground = (): void => {
    policies?.stop();
    watches?.stop();
    rotation?.stop();
  };
  try {
    const cluster = config.cluster.mode === 'none' ? undefined : await loadClusterModules();
    const connection = await cluster?.connectCluster(config.cluster);
    if (connection && connection.via !== 'direct')
      logger.info({ via: connection.via }, 'API server credentials through @kubernetes/client-node');
    const api = connection?.client;
    rotation = await startRotation(config, api, logger);
    policies = await policySource(config, api, cluster, logger, metrics);
    if (api && cluster) watches = startJudgment(config, api, cluster, logger, metrics);
    const validator = createValidator({
      policy: policies.get,
      scaleCheck: watches?.scaleCheck,
      crdSource: policies.source,
      scope: policies.scope,
      onWholeObjectCheck: () => metrics.wholeObjectChecks.inc(),
    });
    const handle = await startServe(config, {
      validator,
      logger,
      metrics,
      certificateReady: rotation?.ready,
      ...(watches ? { readTrainJob: watches.readTrainJob } : {}),
    });
    return {
      close: async () => {
        stopBackground();
        await handle.close();
      },
    };
  } catch (err) {
    stopBackground();
    throw err;
  }
}

type ClusterModules = Awaited<ReturnType<typeof loadClusterModules>>;

/** The count change's judgment against the cluster, and the watches it reads instead of a GET per change. */
interface JudgmentWatches {
  scaleCheck: ReturnType<ClusterModules['scaleChecker']>;
  /** Reads the TrainJob a scale subresource write changes, on its own share of the connections. */
  readTrainJob: ReturnType<ClusterModules['trainJobReader']>;
  /** Stops the watches (the Lease's, the runtimes'), where configured. */
  stop(): void;
}

function startJudgment(
  config: ServeConfig,
  api: ApiClient,
  cluster: ClusterModules,
  logger: Logger,
  metrics: WebhookMetrics,
): JudgmentWatches {
  const leaseRef = config.reconcilerLease;
  const lease = leaseRef?.watch
    ? cluster.watchLease(api, leaseRef, (message) => logger.warn({ component: 'lease-watch' }, message))
    : undefined;
  const runtimes = config.watchRuntimes
    ? cluster.watchRuntimes(api, (message) => logger.warn({ component: 'runtime-watch' }, message))
    : undefined;
  // The count change's reads hold at most COUNT_CHANGE_READ_SLOTS of the API connections; the
  // TrainJob reads (a Scale's, and the check that a caller not known to be the API server sent the
  // stored TrainJob) TRAINJOB_READ_SLOTS others, so a flood of them cannot starve the JobSet reads.
  const reads = cluster.withOwnSlots(api);
  const readTrainJob = cluster.trainJobReader(
    cluster.withOwnSlots(api, new cluster.Slots(cluster.TRAINJOB_READ_SLOTS)),
  );
  return {
    scaleCheck: cluster.scaleChecker(reads, {
      lease: leaseRef,
      watchedLease: lease?.read,
      watchedRuntime: runtimes?.read,
      readJobs: cluster.jobSetReader(reads),
      readTrainJob,
      metrics,
      logger: logger.child({ component: 'count-change' }),
    }),
    readTrainJob,
    stop: () => {
      lease?.stop();
      void runtimes?.stop();
    },
  };
}

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
  /** Reads the TrainJob a scale subresource write changes; undefined without cluster access. */
  readTrainJob?: TrainJobReader;
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
  const reasons = {
    certificate: 'waiting for the serving certificate',
    starting: 'admission server is starting',
    closing: 'shutting down',
  } as const;
  const readiness: Readiness = { notReadyReason: () => (state === 'serving' ? undefined : reasons[state]) };
  const ops = await buildOpsServer({ metrics, logger, readiness });
  const opsUrl = await listenOps(ops, config, logger);

  const handoff: HandoffSender = config.handoff
    ? createHandoffSender({ url: config.handoff.url, timeoutMs: config.handoff.timeoutMs, logger, metrics })
    : noHandoff;
  let admission: FastifyInstance;
  let admissionUrl: string;
  let pair: KeyPair;
  const trust = new ClientTrust();
  try {
    await deps.certificateReady;
    state = 'starting';
    pair = await loadServingCert(config, logger);
    admission = await buildAdmissionServer(
      { tls: pair, drain: deps.drain, ...(config.clientAuth ? { clientAuth: { ...config.clientAuth, trust } } : {}) },
      { validator: deps.validator, logger, metrics, handoff, readTrainJob: deps.readTrainJob },
    );
    admissionUrl = await listenOn(admission, config.host, config.port);
  } catch (err) {
    await ops.close();
    throw err;
  }
  const reloader = followServingMaterial(config, admission, pair, trust, logger, metrics);
  state = 'serving';
  logger.info(
    {
      admission: admissionUrl,
      ops: opsUrl,
      validator: deps.validator.describe(),
      cluster: config.cluster.mode,
      handoff: config.handoff?.url.href ?? 'off',
      clientCa: config.clientAuth
        ? { file: config.clientAuth.caFile, names: config.clientAuth.names ?? 'any' }
        : 'off: any caller that reaches the port is answered',
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
 * Certificate reload: the serving pair from --cert-dir and, with --client-ca, the client CA
 * bundle. Each reload builds the whole secure context again, the two together, so neither drops
 * the other.
 */
function followServingMaterial(
  config: ServeConfig,
  admission: FastifyInstance,
  pair: KeyPair,
  trust: ClientTrust,
  logger: Logger,
  metrics: WebhookMetrics,
): { close(): void } {
  const served: ServingMaterial = { pair, clientCa: config.clientAuth?.ca };
  const serve = (next: ServingMaterial) => {
    replaceServingMaterial(admission.server as unknown as TlsServer, next);
    Object.assign(served, next);
  };
  const reloader = watchCertificates({
    dir: config.tls.dir,
    current: pair,
    apply: (p) => serve({ ...served, pair: p }),
    logger,
    metrics,
  });
  const clientCaWatch = config.clientAuth
    ? watchClientCa({
        file: config.clientAuth.caFile,
        current: config.clientAuth.ca,
        apply: (clientCa) => {
          serve({ ...served, clientCa });
          trust.renew();
        },
        logger,
      })
    : undefined;
  return {
    close() {
      reloader.close();
      clientCaWatch?.close();
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
    logger.warn(
      { opsPort: config.opsPort },
      `the default ops port ${config.opsPort} is in use: health and metrics are not served; pass --ops-port to choose one`,
    );
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
      throw new Error(`--cert-dir ${config.tls.dir}: ${(err as Error).message}`, { cause: err });
    }
  }
  const cert = await ensureSelfSignedCert(config.tls.dir);
  const msg = cert.generated ? `self-signed certificate generated (${cert.reason})` : 'self-signed certificate reused';
  logger.info({ dir: config.tls.dir, caFile: `${config.tls.dir}/ca.crt`, ...summarizeCert(cert.cert) }, msg);
  return { cert: cert.cert, key: cert.key };
}
