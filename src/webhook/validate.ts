// The validating webhook: CREATE and UPDATE go to the Validator (every violated rule becomes a
// cause of the denial); DELETE and CONNECT are allowed without asking it. An admitted, non-dry-run
// CREATE/UPDATE is handed on to the reconciler as a hint, fire-and-forget. A write to the scale
// subresource is judged as the numNodes update it makes (scale-subresource.ts).
import type { ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
import type { Validator } from '../rules/contract.ts';
import { hintOf, type Hint } from '../handoff/hint.ts';
import type { HandoffSender } from './handoff-sender.ts';
import { isObject } from '../json/object.ts';
import { admissionInput } from './envelope.ts';
import type { AdmissionReviewRequest } from './envelope.ts';
import { clip } from '../observability/logger.ts';
import { admissionRoute } from './route.ts';
import type { EdgeDeps, Outcome } from './route.ts';
import { denialStatus, transientStatus } from './status.ts';
import type { Decision } from '../rules/contract.ts';
import type { TrainJobReader } from '../scale/reads/trainjob-read.ts';
import { scaleRequestOf, validateScale } from './scale-subresource.ts';

export const VALIDATE_PATH = '/validate-trainer-kubeflow-org-v1alpha1-trainjob';

export interface ValidateDeps extends EdgeDeps {
  validator: Validator;
  handoff: HandoffSender;
  /**
   * Moves what a request holds of the decision budget to the count-change reads' budget
   * (decision-budget.ts moveHeld): false when that is full.
   */
  holdWhileReading?: (res: ServerResponse) => boolean;
  /** Whether the request came from the API server, proved by its client certificate (--client-ca). */
  callerAuthenticated?: (res: ServerResponse) => boolean;
  /** Reads the TrainJob a scale subresource write changes; undefined without cluster access. */
  readTrainJob?: TrainJobReader;
}

export function registerValidateRoute(app: FastifyInstance, deps: ValidateDeps): void {
  admissionRoute(app, VALIDATE_PATH, 'validate', (req, res) => validate(req, res, deps), deps);
}

async function validate(req: AdmissionReviewRequest, res: ServerResponse, deps: ValidateDeps): Promise<Outcome> {
  if (scaleRequestOf(req)) {
    const hold = deps.holdWhileReading;
    return validateScale<Outcome>(req, {
      readTrainJob: deps.readTrainJob,
      // The TrainJob read waits on the count-change reads' budget, as the count change's reads do.
      ...(hold ? { holdWhileReading: () => hold(res) } : {}),
      ...(deps.callerAuthenticated?.(res) ? { callerAuthenticated: true } : {}),
      withheld: (details) =>
        deps.logger.info(
          {
            component: 'scale-subresource',
            namespace: clip(details.namespace),
            name: clip(details.name),
            detail: details.detail,
          },
          'scale answered in general words (the caller is not known to be the API server); why it was not judged',
        ),
      allowed: (warnings) => ({ parts: { allowed: true, ...(warnings ? { warnings } : {}) } }),
      // oldObject is the TrainJob just read and gated by its uid: the count change does not read it again.
      validate: (object, oldObject) =>
        decideOn(req, res, deps, { object, oldObject, operation: 'UPDATE', oldObjectStored: true }),
      answer: (decision, judged) => outcomeOf(req, decision, deps, judged),
    });
  }
  if (req.operation !== 'CREATE' && req.operation !== 'UPDATE') return { parts: { allowed: true } };
  return outcomeOf(req, await decideOn(req, res, deps), deps, req.object);
}

/** The Validator's decision on the request, or on the objects given instead (a scale's TrainJobs). */
function decideOn(
  req: AdmissionReviewRequest,
  res: ServerResponse,
  deps: ValidateDeps,
  instead: { object: unknown; oldObject: unknown; operation: 'UPDATE'; oldObjectStored: true } | undefined = undefined,
): Promise<Decision> {
  const hold = deps.holdWhileReading;
  const operation = instead?.operation ?? req.operation;
  return deps.validator.validate({
    ...admissionInput(req),
    ...instead,
    ...(deps.callerAuthenticated?.(res) ? { callerAuthenticated: true as const } : {}),
    // Only an UPDATE may change numNodes, and only a count change reads the cluster.
    ...(hold && operation === 'UPDATE' ? { holdWhileReading: () => hold(res) } : {}),
  });
}

/** The answer for a decision; an admitted, non-dry-run one hands `judged` (the TrainJob) on as a hint. */
function outcomeOf(req: AdmissionReviewRequest, decision: Decision, deps: ValidateDeps, judged: unknown): Outcome {
  if (decision.causes.length > 0) {
    return {
      parts: {
        allowed: false,
        status: decision.transient
          ? transientStatus(req.name, decision.causes)
          : denialStatus(req.name, decision.causes),
        warnings: decision.warnings,
      },
      rules: [...new Set(decision.causes.map((c) => c.origin ?? c.field))],
      readWaitMs: decision.readWaitMs,
    };
  }
  // A dry run is decided exactly the same, but nothing is handed on (sideEffects: NoneOnDryRun).
  if (!req.dryRun) deps.handoff.send(hintFor(req, judged));
  return { parts: { allowed: true, warnings: decision.warnings }, readWaitMs: decision.readWaitMs };
}

/** The stored identity of the TrainJob (uid and generation are set before validating admission). */
function hintFor(req: AdmissionReviewRequest, judged: unknown): Hint {
  const meta = isObject(judged) && isObject(judged.metadata) ? judged.metadata : {};
  return hintOf(req.namespace ?? '', req.name, meta);
}
