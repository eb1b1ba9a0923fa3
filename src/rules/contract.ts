// The contract between the HTTP edge (src/webhook/) and the pure decision code (src/rules/).
import type { FieldError } from '../field/errors.ts';

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
}

/** What the validating webhook decided: every violated rule, and warnings for allowed changes. */
export interface Decision {
  causes: FieldError[];
  warnings: string[];
}

/** Built once at start-up (rules compiled, CRD schema loaded); decides one request at a time. */
export interface Validator {
  validate(input: AdmissionInput): Promise<Decision>;
  /** One line for start-up logs: which CRD schema and rules are in force. */
  describe(): string;
}
