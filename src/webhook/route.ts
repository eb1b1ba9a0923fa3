// What both webhooks share at the edge: parse the envelope (HTTP 400 when it is not an
// AdmissionReview; in-band 400 once its apiVersion, kind and uid are known), refuse requests for
// other kinds in-band, turn a thrown error into an in-band 500 answer (never an HTTP 500), and log
// and count every answer once.
import type { ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { logAdmission } from '../observability/logger.ts';
import type { AdmissionLogEntry, Logger } from '../observability/logger.ts';
import type { WebhookMetrics } from '../observability/metrics.ts';
import { EnvelopeError, answer, parseAdmissionReview, wrongKind } from './envelope.ts';
import type { AdmissionReviewRequest, AnswerParts } from './envelope.ts';
import { badRequestStatus, thrownErrorStatus } from './status.ts';
import { sendJson } from './answer-writer.ts';
import { scaleRequestOf } from './scale-subresource.ts';

export interface EdgeDeps {
  logger: Logger;
  metrics: WebhookMetrics;
}

/** A webhook's answer plus what its log line should say about it. */
export interface Outcome {
  parts: AnswerParts;
  rules?: string[];
  patchOps?: number;
  /** How long the answer waited on cluster reads beyond the decision (ms), for the stage metrics. */
  readWaitMs?: number;
}

/** `res`: the raw response, which holds the request's share of the decision budget until it is done. */
export type Handle = (req: AdmissionReviewRequest, res: ServerResponse) => Promise<Outcome>;
export type WebhookName = AdmissionLogEntry['webhook'];

/**
 * The answer to a request this webhook does not decide, or undefined. A write to a scale
 * subresource carries an autoscaling/v1 Scale, not a TrainJob: the validating route judges it
 * (scale-subresource.ts), and no webhook ever refuses or changes one as a wrong kind. A request
 * for another kind is refused in-band (the configuration's rules are wrong).
 */
function notForThisWebhook(req: AdmissionReviewRequest, webhook: WebhookName): Outcome | undefined {
  if (scaleRequestOf(req) !== undefined) return webhook === 'validate' ? undefined : { parts: { allowed: true } };
  const wrong = wrongKind(req);
  if (wrong === undefined) return undefined;
  return {
    parts: {
      allowed: false,
      status: badRequestStatus(
        `this webhook only admits TrainJobs (trainer.kubeflow.org), got ${wrong}: check the webhook configuration's rules`,
      ),
    },
  };
}

export function admissionRoute(
  app: FastifyInstance,
  path: string,
  webhook: WebhookName,
  handle: Handle,
  deps: EdgeDeps,
): void {
  const stages = deps.metrics.stages;
  app.post(path, async (request, reply) => {
    const started = performance.now();
    stages.lap(request, 'receive', started);
    let req: AdmissionReviewRequest;
    try {
      req = parseAdmissionReview(request.body);
      stages.lap(request, 'envelope');
    } catch (err) {
      if (!(err instanceof EnvelopeError)) throw err;
      deps.metrics.rejected.inc({ code: '400' });
      const message = `not a valid AdmissionReview: ${err.message}`;
      if (err.review) {
        // Its uid is known: answered in-band, as controller-runtime answers every error.
        deps.logger.warn({ webhook, reqId: err.review.uid, error: err.message }, 'AdmissionReview refused in-band');
        return sendJson(reply.code(200), answer(err.review, { allowed: false, status: badRequestStatus(message) }));
      }
      deps.logger.warn({ webhook, error: err.message }, 'not an AdmissionReview');
      return reply.code(400).send({ error: message });
    }

    let outcome: Outcome;
    let error: string | undefined;
    const refused = notForThisWebhook(req, webhook);
    if (refused) {
      outcome = refused;
    } else {
      try {
        outcome = await handle(req, reply.raw);
      } catch (err) {
        // A bug or an unexpected failure while deciding: answer in-band so the API server applies
        // the denial with a clear message (the webhook's failurePolicy never comes into play).
        const status = thrownErrorStatus(err);
        error = status.details?.causes?.[0]?.message;
        outcome = { parts: { allowed: false, status } };
      }
    }
    stages.split(request, 'decide', 'read', outcome.readWaitMs);

    const body = answer(req, outcome.parts);
    const seconds = (performance.now() - started) / 1000;
    const decision = error !== undefined ? 'error' : outcome.parts.allowed ? 'allowed' : 'denied';
    deps.metrics.requests.inc({ webhook, operation: req.operation, decision });
    deps.metrics.latency.observe({ webhook, operation: req.operation }, seconds);
    logAdmission(deps.logger, {
      reqId: req.uid,
      webhook,
      operation: req.operation,
      namespace: req.namespace,
      name: req.name || undefined,
      user: req.username,
      dryRun: req.dryRun,
      decision,
      code: outcome.parts.status?.code,
      rules: outcome.rules,
      warnings: outcome.parts.warnings?.length || undefined,
      patchOps: outcome.patchOps,
      error,
      latencyMs: Math.round(seconds * 1e5) / 100,
    });
    stages.lap(request, 'answer');
    return sendJson(reply.code(200), body);
  });
}
