// The validating webhook: CREATE and UPDATE go to the Validator (every violated rule becomes a
// cause of the denial); DELETE and CONNECT are allowed without asking it. An admitted, non-dry-run
// CREATE/UPDATE is handed on to the reconciler as a hint, fire-and-forget.
import type { ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
import type { Validator } from '../rules/contract.ts';
import { hintOf, type Hint } from '../handoff/hint.ts';
import type { HandoffSender } from './handoff-sender.ts';
import { isObject } from '../json/object.ts';
import { admissionInput } from './envelope.ts';
import type { AdmissionReviewRequest } from './envelope.ts';
import { admissionRoute } from './route.ts';
import type { EdgeDeps, Outcome } from './route.ts';
import { denialStatus, transientStatus } from './status.ts';

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
}

export function registerValidateRoute(app: FastifyInstance, deps: ValidateDeps): void {
  admissionRoute(app, VALIDATE_PATH, 'validate', (req, res) => validate(req, res, deps), deps);
}

async function validate(req: AdmissionReviewRequest, res: ServerResponse, deps: ValidateDeps): Promise<Outcome> {
  if (req.operation !== 'CREATE' && req.operation !== 'UPDATE') return { parts: { allowed: true } };

  const hold = deps.holdWhileReading;
  const decision = await deps.validator.validate({
    ...admissionInput(req),
    ...(deps.callerAuthenticated?.(res) ? { callerAuthenticated: true as const } : {}),
    // Only an UPDATE may change numNodes, and only a count change reads the cluster.
    ...(hold && req.operation === 'UPDATE' ? { holdWhileReading: () => hold(res) } : {}),
  });
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
  if (!req.dryRun) deps.handoff.send(hintFor(req));
  return { parts: { allowed: true, warnings: decision.warnings }, readWaitMs: decision.readWaitMs };
}

/** The stored identity of the TrainJob (uid and generation are set before validating admission). */
function hintFor(req: AdmissionReviewRequest): Hint {
  return hintOf(req.namespace ?? '', req.name, isObject(req.object?.metadata) ? req.object.metadata : {});
}
