// Prometheus metrics, on a registry of their own (not prom-client's global one) so that several
// servers in one process, as in tests, never collide.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { AdmissionStages } from './admission-stages.ts';

export type AdmissionOutcome = 'allowed' | 'denied' | 'error';

export interface WebhookMetrics {
  registry: Registry;
  /** Admission answers by webhook (validate|mutate), operation and decision. */
  requests: Counter<'webhook' | 'operation' | 'decision'>;
  latency: Histogram<'webhook' | 'operation'>;
  /** Requests refused at the HTTP level (not an AdmissionReview, too large...), by status code. */
  rejected: Counter<'code'>;
  /** Hand-off hints posted to the reconciler, by result (delivered|failed). */
  handoffHints: Counter<'result'>;
  /**
   * numNodes changes the rule table allows, judged against the cluster: admitted, refused (cannot
   * be carried out) or transient (no reconciler leads, a read failed), by reason.
   */
  scaleJudgments: Counter<'result' | 'reason'>;
  /** Where admission requests' time goes inside the webhook, per stage (admission-stages.ts). */
  stages: AdmissionStages;
  /** Certificate reloads, by result (success|failure). */
  certReloads: Counter<'result'>;
  /**
   * TLS handshakes on the admission port that failed, by reason (src/webhook/client-auth.ts):
   * no_client_certificate, untrusted_client_certificate, client_name_not_allowed (--client-ca,
   * --client-name), other.
   */
  tlsHandshakeFailures: Counter<'reason'>;
  /**
   * 1 while the TrainJob CRD in force still has upstream's blanket `spec.trainer` rule (the API
   * server then refuses every numNodes change before this webhook runs: re-apply the CRD patch),
   * 0 when it does not; absent without a CRD. Alert on it after Trainer upgrades.
   */
  crdBlanketTrainerRule: Gauge;
  /** 1 for the Trainer line of the CRD in force (`unknown`: none known, the careful rules). */
  trainerLine: Gauge<'line'>;
  /**
   * CRD rules this engine could not compile and skips (the API server still enforces them); absent
   * without a CRD from the cluster.
   */
  crdRulesUncompilable: Gauge;
  /**
   * 1 while a TrainJob CRD's schema and rules are checked, 0 while only the rule table runs (e.g.
   * the cluster's CRD could not be read yet).
   */
  crdInForce: Gauge;
  /**
   * Decisions that checked the whole object against the CRD's schema and rules, as the API server
   * does first: offline only (review-like answers, --crd, the embedded CRD). Following the
   * cluster's CRD the webhook leaves that check to the API server, and this stays 0.
   */
  wholeObjectChecks: Counter;
  /**
   * spec.trainer fields of the CRD in force that none of its rules cover (a field a later Trainer
   * added, not named by the applied CRD patch): the API server lets them change, this webhook
   * still refuses. Absent without a CRD.
   */
  trainerFieldsUncovered: Gauge;
  /**
   * controller-runtime's webhook series (pkg/webhook/internal/metrics), so dashboards made for
   * Go webhooks work: every HTTP request to an admission path, `webhook` the path, `code` the
   * HTTP status (an in-band denial is a 200; our own series above say allowed/denied/error).
   */
  controllerRuntime: {
    requests: Counter<'webhook' | 'code'>;
    latency: Histogram<'webhook'>;
    inFlight: Gauge<'webhook'>;
  };
}

/** prometheus.ExponentialBuckets(10e-9, 10, 12), as controller-runtime's webhook latency uses. */
export const CONTROLLER_RUNTIME_LATENCY_BUCKETS = Array.from({ length: 12 }, (_, i) =>
  Number((1e-8 * 10 ** i).toPrecision(1)),
);

export interface MetricsOptions {
  /** Process metrics (CPU, memory, event loop): on in `serve`, off in tests. */
  defaultMetrics?: boolean;
}

// eslint-disable-next-line max-lines-per-function -- one declaration per series
export function createMetrics(options: MetricsOptions = {}): WebhookMetrics {
  const registry = new Registry();
  if (options.defaultMetrics) collectDefaultMetrics({ register: registry });
  const registers = [registry];
  return {
    registry,
    requests: new Counter({
      name: 'trainjob_webhook_requests_total',
      help: 'Admission requests answered, by webhook, operation and decision.',
      labelNames: ['webhook', 'operation', 'decision'] as const,
      registers,
    }),
    latency: new Histogram({
      name: 'trainjob_webhook_request_duration_seconds',
      help: 'Time from parsed AdmissionReview to answer, by webhook and operation.',
      labelNames: ['webhook', 'operation'] as const,
      // The API server's webhook timeout is 10 s by default, 30 s at most.
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    }),
    rejected: new Counter({
      name: 'trainjob_webhook_rejected_requests_total',
      help: 'Requests refused before admission (not an AdmissionReview, body too large, ...), by status code: the HTTP status, or 400 for an AdmissionReview refused in-band (HTTP 200; not in requests_total).',
      labelNames: ['code'] as const,
      registers,
    }),
    handoffHints: new Counter({
      name: 'trainjob_webhook_handoff_hints_total',
      help: 'Hand-off hints posted to the reconciler after an admitted, non-dry-run CREATE/UPDATE, by result.',
      labelNames: ['result'] as const,
      registers,
    }),
    scaleJudgments: new Counter({
      name: 'trainjob_webhook_scale_judgments_total',
      help: 'numNodes changes judged against the cluster, by result (admitted|refused|transient) and reason.',
      labelNames: ['result', 'reason'] as const,
      registers,
    }),
    crdBlanketTrainerRule: new Gauge({
      name: 'trainjob_webhook_crd_blanket_trainer_rule',
      help: "1 while the TrainJob CRD still has upstream's blanket spec.trainer rule (numNodes changes are refused before the webhook runs): apply the CRD patch.",
      registers,
    }),
    trainerLine: new Gauge({
      name: 'trainjob_webhook_trainer_line',
      help: '1 for the Trainer line of the TrainJob CRD in force (found by feature), whose rules the webhook follows; line="unknown": none of the known lines, so the most careful rules apply.',
      labelNames: ['line'] as const,
      registers,
    }),
    crdRulesUncompilable: new Gauge({
      name: 'trainjob_webhook_crd_rules_uncompilable',
      help: 'Rules of the TrainJob CRD read from the API server that this webhook cannot compile and skips (the API server still enforces them).',
      registers,
    }),
    trainerFieldsUncovered: new Gauge({
      name: 'trainjob_webhook_trainer_fields_uncovered',
      help: "spec.trainer fields of the TrainJob CRD in force that its rules do not cover (added by a later Trainer, not named by the applied CRD patch): the API server lets them change, the webhook still refuses. The webhook's log names them.",
      registers,
    }),
    crdInForce: new Gauge({
      name: 'trainjob_webhook_crd_in_force',
      help: "1 while a TrainJob CRD is in force (its schema types the rule table; offline its schema and rules are checked too); 0 while the rule table alone runs on its own schema (the cluster's CRD not read or not usable yet).",
      registers,
    }),
    wholeObjectChecks: new Counter({
      name: 'trainjob_webhook_whole_object_checks_total',
      help: "Admission decisions that checked the whole object against the TrainJob CRD's schema and rules, as the API server does first: offline only; 0 while the webhook follows the cluster's CRD (the API server has checked it before calling).",
      registers,
    }),
    stages: new AdmissionStages(registers),
    certReloads: new Counter({
      name: 'trainjob_webhook_cert_reloads_total',
      help: 'Serving certificate reloads after the files changed, by result.',
      labelNames: ['result'] as const,
      registers,
    }),
    tlsHandshakeFailures: new Counter({
      name: 'trainjob_webhook_tls_handshake_failures_total',
      help: 'TLS handshakes on the admission port that failed, by reason (no_client_certificate, untrusted_client_certificate, client_name_not_allowed: --client-ca; other).',
      labelNames: ['reason'] as const,
      registers,
    }),
    controllerRuntime: {
      requests: new Counter({
        name: 'controller_runtime_webhook_requests_total',
        help: 'Total number of admission requests by HTTP status code.',
        labelNames: ['webhook', 'code'] as const,
        registers,
      }),
      latency: new Histogram({
        name: 'controller_runtime_webhook_latency_seconds',
        help: 'Histogram of the latency of processing admission requests',
        labelNames: ['webhook'] as const,
        buckets: CONTROLLER_RUNTIME_LATENCY_BUCKETS,
        registers,
      }),
      inFlight: new Gauge({
        name: 'controller_runtime_webhook_requests_in_flight',
        help: 'Current number of admission requests being served.',
        labelNames: ['webhook'] as const,
        registers,
      }),
    },
  };
}

/** Sum of a counter over all its label values (for tests and start-up summaries). */
export async function counterTotal(counter: Counter<string>): Promise<number> {
  const { values } = await counter.get();
  return values.reduce((sum, v) => sum + v.value, 0);
}
