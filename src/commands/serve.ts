// `trainjob-webhook serve`: flags parsed once, the policy built (CRD from --crd, from the API
// server and followed, or the table alone), then the HTTPS admission server and the ops server.
import { parseServeArgs, ConfigError, SERVE_USAGE, type ServeConfig } from '../webhook/config.ts';
import { createLogger, type Logger } from '../observability/logger.ts';
import { createMetrics, type WebhookMetrics } from '../observability/metrics.ts';
import { installProcessHandlers } from '../process/signals.ts';
import { startServe } from '../webhook/run.ts';
import { createValidator } from '../rules/validator.ts';
import { TRAINJOB_CRD } from '../api/names.ts';
import { EMBEDDED_CRD_SOURCE, loadEmbeddedPolicy, loadPolicyFromFile, policyFromCrd, uncoveredTrainerFieldsOf } from '../rules/crd-policy.ts';
import { buildPolicy, type Policy } from '../rules/policy.ts';
import type { CommandIo } from './io.ts';
import { InputError } from '../io/read-object.ts';
import type { CertRotation } from '../certs/rotator.ts';
import type { ApiClient } from '../cluster/api-request.ts';

/**
 * What reads the cluster, loaded only when cluster access is configured. None of it loads
 * @kubernetes/client-node (~0.9 s and ~80 MiB at import): connect.ts does, for a kubeconfig user
 * only client-node implements (exec, auth-provider).
 */
async function loadClusterModules() {
  const [connect, errors, jobsets, follower] = await Promise.all([
    import('../cluster/connect.ts'),
    import('../cluster/errors.ts'),
    import('../webhook/jobset-read.ts'),
    import('../webhook/crd-follower.ts'),
  ]);
  return { ...connect, ...errors, ...jobsets, ...follower };
}
type ClusterModules = Awaited<ReturnType<typeof loadClusterModules>>;

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
async function startRotation(config: ServeConfig, api: ApiClient | undefined, logger: Logger): Promise<CertRotation | undefined> {
  const r = config.certRotation;
  if (!r || !api) return undefined;
  const { kubernetesCertStore, startCertRotation, ROTATION_DEFAULTS } = await loadRotationModules();
  const webhookConfigs = [
    { kind: 'validating' as const, name: r.validatingWebhookConfig },
    { kind: 'mutating' as const, name: r.mutatingWebhookConfig },
  ];
  const store = kubernetesCertStore(api, { namespace: r.namespace, name: r.secretName }, webhookConfigs);
  const rotation = startCertRotation({ ...ROTATION_DEFAULTS, hosts: r.hosts, webhookConfigs, certDir: config.tls.dir }, store, logger.child({ component: 'cert-rotation' }));
  logger.info({ secret: `${r.namespace}/${r.secretName}`, hosts: r.hosts, dir: config.tls.dir }, 'certificate rotation started; waiting for the serving certificate');
  return rotation;
}

interface PolicySource {
  get(): Policy;
  source: string;
  stop(): void;
}

/**
 * Publishes what the policy now in force checks: whether a CRD is in force at all (0: the rule
 * table alone), whether it still has upstream's blanket spec.trainer rule, its spec.trainer
 * fields no CRD rule covers (the drift check), and the CRD rules this engine could not compile
 * (left out; the API server still runs them), each logged.
 */
function reportPolicy(policy: Policy, metrics: WebhookMetrics, logger: Logger, source: string): void {
  metrics.crdInForce.set(policy.crd ? 1 : 0);
  if (policy.crd) metrics.crdBlanketTrainerRule.set(policy.crd.blanketTrainerRule ? 1 : 0);
  if (policy.crd) {
    const uncovered = uncoveredTrainerFieldsOf(policy.crd.checks);
    metrics.trainerFieldsUncovered.set(uncovered.length);
    if (uncovered.length > 0) {
      logger.warn(
        { crd: source, fields: uncovered.map((f) => `spec.trainer.${f}`) },
        `spec.trainer fields the TrainJob CRD's rules do not cover (a later Trainer added them; the applied CRD patch does not name them): the API server lets them change, this webhook still refuses; generate the patch for this CRD (trainjob-webhook rules --crd <that CRD> --format crd-patch) and apply it`,
      );
    }
  }
  const uncompilable = policy.crd?.uncompilable ?? [];
  metrics.crdRulesUncompilable.set(uncompilable.filter((u) => u.part === 'rule').length);
  for (const u of uncompilable) {
    const what =
      u.part === 'rule'
        ? 'a rule of the TrainJob CRD does not compile here: this webhook skips it (the API server still enforces it)'
        : "a rule's messageExpression does not compile here: the rule runs, and its failures carry its static message";
    logger.warn({ crd: TRAINJOB_CRD, location: u.rule.location || '<root>', rule: u.rule.rule, messageExpression: u.rule.messageExpression, error: u.error }, what);
  }
}

async function clusterPolicy(api: ApiClient, cluster: ClusterModules, logger: Logger, metrics: WebhookMetrics): Promise<PolicySource> {
  const { readCrd, followCrd, describeError } = cluster;
  let policy = buildPolicy();
  let source = `the API server (${TRAINJOB_CRD})`;
  let adopted = false;
  let adoptedVersion: string | undefined;
  const adopt = (crd: unknown, why: string): void => {
    const rv = (crd as { metadata?: { resourceVersion?: string } } | null)?.metadata?.resourceVersion;
    // The watch starts with the version the first read already adopted: nothing to redo or re-log.
    if (rv !== undefined && rv === adoptedVersion) return;
    try {
      // A rule this engine cannot compile is skipped and reported (reportPolicy), never a
      // reason to fall back to the table alone.
      policy = policyFromCrd(crd);
      adopted = true;
      adoptedVersion = rv;
      reportPolicy(policy, metrics, logger, TRAINJOB_CRD);
      logger.info({ crd: TRAINJOB_CRD, resourceVersion: rv, blanketTrainerRule: policy.crd?.blanketTrainerRule, crdRules: policy.crd?.rules.length }, why);
      if (policy.crd?.blanketTrainerRule) {
        logger.warn({ crd: TRAINJOB_CRD }, 'the TrainJob CRD has the blanket spec.trainer rule again (a Trainer upgrade?): the API server refuses every numNodes change before this webhook runs; re-apply the CRD patch');
      }
    } catch (err) {
      const kept = adopted ? 'the previous CRD stays in force' : 'only the rule table runs until a usable version arrives';
      logger.error({ crd: TRAINJOB_CRD, error: (err as Error).message }, `TrainJob CRD not usable; ${kept}`);
    }
  };
  try {
    adopt(await readCrd(api), 'TrainJob CRD read from the API server');
  } catch (err) {
    logger.error({ crd: TRAINJOB_CRD, error: describeError(err) }, 'could not read the TrainJob CRD; the rule table alone runs until it can be read (retrying through the watch)');
  }
  if (!adopted) {
    source = `the API server (${TRAINJOB_CRD}), not yet usable: the rule table alone runs until it is`;
    reportPolicy(policy, metrics, logger, TRAINJOB_CRD);
  }
  const stop = followCrd(api, {
    onChange: (crd) => adopt(crd, adopted ? 'TrainJob CRD changed' : 'TrainJob CRD adopted from the watch'),
    onError: (message) => logger.warn({ crd: TRAINJOB_CRD }, message),
  });
  return { get: () => policy, source, stop };
}

async function policySource(config: ServeConfig, api: ApiClient | undefined, cluster: ClusterModules | undefined, logger: Logger, metrics: WebhookMetrics): Promise<PolicySource> {
  const fixed = (policy: Policy, source: string): PolicySource => {
    reportPolicy(policy, metrics, logger, source);
    return { get: () => policy, source, stop: () => {} };
  };
  switch (config.crd.mode) {
    case 'file':
      return fixed(await loadPolicyFromFile(config.crd.path), config.crd.path);
    case 'embedded':
      return fixed(await loadEmbeddedPolicy(), EMBEDDED_CRD_SOURCE);
    case 'table-only':
      return fixed(buildPolicy(), '--table-only');
    case 'cluster':
      if (api && cluster) return clusterPolicy(api, cluster, logger, metrics);
      return fixed(await loadEmbeddedPolicy(), EMBEDDED_CRD_SOURCE);
  }
}

/** What a user gave that cannot be used (a missing file, a bad CRD or kubeconfig, a busy port): a message, not a stack. */
function isStartUpInputError(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  const name = (err as Error | null)?.name;
  return name === 'CrdLoadError' || err instanceof InputError || ['ENOENT', 'EACCES', 'EISDIR', 'ENOTDIR', 'EADDRINUSE', 'EADDRNOTAVAIL', 'ERR_OSSL_PEM_NO_START_LINE'].includes(code ?? '') || /^--[a-z-]+ /.test((err as Error | null)?.message ?? '');
}

export async function serveCommand(args: string[], io: CommandIo): Promise<number> {
  let config: ServeConfig;
  try {
    config = parseServeArgs(args);
  } catch (err) {
    if (err instanceof ConfigError) {
      io.err(`serve: ${err.message}\n\n${SERVE_USAGE}`);
      return 2;
    }
    throw err;
  }
  const logger = createLogger(config.logLevel);
  const metrics = createMetrics({ defaultMetrics: true });
  let policies: PolicySource | undefined;
  let rotation: CertRotation | undefined;
  let handle: Awaited<ReturnType<typeof startServe>>;
  try {
    const cluster = config.cluster.mode === 'none' ? undefined : await loadClusterModules();
    const connection = await cluster?.connectCluster(config.cluster);
    if (connection && connection.via !== 'direct') logger.info({ via: connection.via }, 'API server credentials through @kubernetes/client-node');
    const api = connection?.client;
    rotation = await startRotation(config, api, logger);
    policies = await policySource(config, api, cluster, logger, metrics);
    const validator = createValidator({
      policy: policies.get,
      readJobSet: api && cluster ? cluster.jobSetReader(api) : undefined,
      crdSource: policies.source,
    });
    handle = await startServe(config, { validator, logger, metrics, certificateReady: rotation?.ready });
  } catch (err) {
    policies?.stop();
    rotation?.stop();
    if (!isStartUpInputError(err)) throw err;
    io.err(`serve: cannot start: ${(err as Error).message.split('\n')[0]}`);
    return 2;
  }
  // Runs until a signal closes it; then the command ends with 0 once in-flight requests drained.
  return new Promise<number>((resolve) => {
    installProcessHandlers(
      {
        close: async () => {
          policies.stop();
          rotation?.stop();
          await handle.close();
          resolve(0);
        },
      },
      { logger, timeoutMs: config.shutdownTimeoutMs },
    );
  });
}
