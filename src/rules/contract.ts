// The contract between the HTTP edge (src/webhook/) and the pure decision code (src/rules/).
import type { FieldError } from '../field/errors.ts';
import type { TrainerLine } from '../api/trainer-line.ts';

export type Operation = 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';

/** The parts of an AdmissionRequest the decision needs (objects already parsed losslessly). */
export interface AdmissionInput {
  uid: string;
  operation: Operation;
  namespace?: string;
  name?: string;
  object?: unknown;
  oldObject?: unknown;
  dryRun: boolean;
  /**
   * Set only when the caller proved it is the API server (`serve --client-ca`: a client
   * certificate verified in the TLS handshake): only then may a count change's cluster reads
   * start before the rules decide.
   */
  callerAuthenticated?: true;
  /**
   * Called once the rules allow a count change, before its reads: moves what the request holds
   * of the decision budget to the count-change reads' own (decision-budget.ts). False when that
   * is full: the change is refused for now without reading. Not called when the reads started
   * before the rules decided (an authenticated caller).
   */
  holdWhileReading?: () => boolean;
  /**
   * Set only by the scale subresource path: oldObject is the TrainJob the webhook itself has just
   * read and found to be the one the review was made from (stored-version.ts), so a count change
   * is not gated on reading it again (ScaleChange.oldObjectStored).
   */
  oldObjectStored?: true;
}

/** What the validating webhook decided: every violated rule, and warnings for allowed changes. */
export interface Decision {
  causes: FieldError[];
  warnings: string[];
  /**
   * Set when the refusal is transient (no reconciler leads, a read failed): it clears by itself,
   * and the answer is 503 ServiceUnavailable.
   */
  transient?: true;
  /** How long the decision waited on the cluster reads of a numNodes change once the rules had decided (ms). */
  readWaitMs?: number;
}

/** A numNodes change the rule table allows, to be judged against the cluster. */
export interface ScaleChange {
  namespace: string;
  name: string;
  /** The Trainer line of the CRD in force, whose rules the judgment follows. */
  trainer: TrainerLine;
  /** The TrainJob as it would be stored. */
  object: unknown;
  /**
   * The stored TrainJob as the review sent it: for a caller not known to be the API server the
   * change is judged only when its uid is the stored one (scale-check.ts).
   */
  oldObject?: unknown;
  /** oldObject is the TrainJob the webhook read itself (AdmissionInput.oldObjectStored): no read again. */
  oldObjectStored?: true;
  /**
   * The caller proved it is the API server (AdmissionInput.callerAuthenticated): only then does
   * the answer name what the reads found beyond the TrainJob (other objects, counts); otherwise
   * it says so in general words and the details go to the webhook's log.
   */
  callerAuthenticated?: true;
}

/** The cluster's judgment: causes refuse the change (for now when `transient`). */
export interface ScaleCheckResult {
  causes: FieldError[];
  warnings: string[];
  transient?: true;
}

/** Whose cluster state a numNodes change is judged by: the TrainJob, as it would be stored. */
export type ScaleTarget = Pick<ScaleChange, 'namespace' | 'name' | 'object' | 'callerAuthenticated'>;

/**
 * Judges an allowed numNodes change against the cluster. Implemented by `scaleChecker` in
 * src/scale/reads/scale-check.ts. `readAhead`, when there, starts the reads for a TrainJob before
 * the rules have decided (so the reads overlap the decision) and returns the judgment that uses
 * them; it must judge a change of that target exactly as the check itself would. The validator
 * uses it only for an authenticated caller (`AdmissionInput.callerAuthenticated`).
 */
export type ScaleCheck = ((change: ScaleChange) => Promise<ScaleCheckResult>) & {
  readAhead?: (target: ScaleTarget) => (trainer: ScaleChange['trainer']) => Promise<ScaleCheckResult>;
};

/** Built once at start-up (rules compiled, CRD schema loaded); decides one request at a time. */
export interface Validator {
  validate(input: AdmissionInput): Promise<Decision>;
  /** One line for start-up logs: which CRD schema and rules are in force. */
  describe(): string;
}
