// The policy in force for `serve`: the rule table with the CRD from --crd, the embedded default,
// none (--table-only), or the API server's TrainJob CRD, read at start and followed (a Trainer
// upgrade that puts the blanket spec.trainer rule back is noticed and reported). With the API
// server's CRD the decision's scope is the table: that API server has checked the whole object
// against this very CRD before it calls the webhook. A CRD from a file or the embedded one is
// checked whole, so an answer given without the API server is the API server's.
import { TRAINJOB_CRD } from '../api/names.ts';
import type { ApiClient } from '../cluster/api-request.ts';
import type { describeError } from '../cluster/errors.ts';
import type { Logger } from '../observability/logger.ts';
import type { WebhookMetrics } from '../observability/metrics.ts';
import {
  EMBEDDED_CRD_SOURCE,
  loadEmbeddedPolicy,
  loadPolicyFromFile,
  policyFromCrd,
  uncoveredTrainerFieldsOf,
} from '../rules/crd-policy.ts';
import { buildPolicy, type Policy } from '../rules/policy.ts';
import type { DecisionScope } from '../rules/decide.ts';
import type { ServeConfig } from './config.ts';
import type { followCrd, readCrd } from './crd-follower.ts';

/** The cluster reads the followed CRD takes, loaded by the caller only with cluster access. */
export interface CrdReading {
  readCrd: typeof readCrd;
  followCrd: typeof followCrd;
  describeError: typeof describeError;
}

export interface PolicySource {
  get(): Policy;
  source: string;
  /** What the decisions check: 'table' with the API server's CRD, 'whole-object' otherwise. */
  scope: DecisionScope;
  stop(): void;
}

/**
 * Publishes what the policy now in force checks: the Trainer line its rules follow, whether a CRD
 * is in force at all (0: the rule table alone), whether it still has upstream's blanket
 * spec.trainer rule, its spec.trainer fields no CRD rule covers (the drift check), and the CRD
 * rules this engine could not compile (left out; the API server still runs them), each logged.
 */
function reportPolicy(policy: Policy, metrics: WebhookMetrics, logger: Logger, source: string): void {
  metrics.crdInForce.set(policy.crd ? 1 : 0);
  // The Trainer line the rules follow (finished-for-good, the scale judgment), found by feature.
  metrics.trainerLine.reset();
  metrics.trainerLine.set({ line: policy.line.line.id }, 1);
  const line = { crd: source, line: policy.line.line.id, fingerprint: policy.line.fingerprint };
  if (policy.line.line.id === 'unknown')
    logger.warn({ ...line, resembles: policy.line.resembles }, policy.line.summary);
  else logger.info(line, `Trainer line: ${policy.line.summary}`);
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
    logger.warn(
      {
        crd: TRAINJOB_CRD,
        location: u.rule.location || '<root>',
        rule: u.rule.rule,
        messageExpression: u.rule.messageExpression,
        error: u.error,
      },
      what,
    );
  }
}

async function clusterPolicy(
  api: ApiClient,
  cluster: CrdReading,
  logger: Logger,
  metrics: WebhookMetrics,
): Promise<PolicySource> {
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
      logger.info(
        {
          crd: TRAINJOB_CRD,
          resourceVersion: rv,
          blanketTrainerRule: policy.crd?.blanketTrainerRule,
          crdRules: policy.crd?.rules.length,
        },
        why,
      );
      if (policy.crd?.blanketTrainerRule) {
        logger.warn(
          { crd: TRAINJOB_CRD },
          'the TrainJob CRD has the blanket spec.trainer rule again (a Trainer upgrade?): the API server refuses every numNodes change before this webhook runs; re-apply the CRD patch',
        );
      }
    } catch (err) {
      const kept = adopted
        ? 'the previous CRD stays in force'
        : 'only the rule table runs until a usable version arrives';
      logger.error({ crd: TRAINJOB_CRD, error: (err as Error).message }, `TrainJob CRD not usable; ${kept}`);
    }
  };
  try {
    adopt(await readCrd(api), 'TrainJob CRD read from the API server');
  } catch (err) {
    logger.error(
      { crd: TRAINJOB_CRD, error: describeError(err) },
      'could not read the TrainJob CRD; the rule table alone runs until it can be read (retrying through the watch)',
    );
  }
  if (!adopted) {
    source = `the API server (${TRAINJOB_CRD}), not yet usable: the rule table alone runs until it is`;
    reportPolicy(policy, metrics, logger, TRAINJOB_CRD);
  }
  const stop = followCrd(api, {
    onChange: (crd) => adopt(crd, adopted ? 'TrainJob CRD changed' : 'TrainJob CRD adopted from the watch'),
    onError: (message) => logger.warn({ crd: TRAINJOB_CRD }, message),
  });
  return { get: () => policy, source, scope: 'table', stop };
}

/** The policy in force: from --crd, embedded, the rule table alone, or the API server's CRD followed. */
export async function policySource(
  config: ServeConfig,
  api: ApiClient | undefined,
  cluster: CrdReading | undefined,
  logger: Logger,
  metrics: WebhookMetrics,
): Promise<PolicySource> {
  const fixed = (policy: Policy, source: string): PolicySource => {
    reportPolicy(policy, metrics, logger, source);
    return { get: () => policy, source, scope: 'whole-object', stop: () => {} };
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
