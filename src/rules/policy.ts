// Everything the decision needs, built once at start-up: the compiled rule table and, when a
// TrainJob CRD is known, its schema checks and its own CEL rules (minus the ones the table
// supersedes and the ones this project generated into the CRD).
import { createCelEnvironment } from '../cel/environment.ts';
import { compileCrdRules, type CompiledCrdRule, type UncompilableRule } from '../cel/crd-rules.ts';
import { compileSchema, type CelRule, type Correlation, type SchemaNode } from '../crd/index.ts';
import type { FieldError } from '../field/errors.ts';
import { compileTable, type CompiledRow } from './compiled-table.ts';
import { isGeneratedRule } from './marker.ts';
import { RULES, rulesFor } from './table.ts';
import type { LineDetection } from '../api/trainer-line-detect.ts';
import { UNKNOWN_TRAINER_LINE } from '../api/trainer-line.ts';
import { TABLE_SCHEMA } from './table-schema.ts';

/** The structural-schema side of the API server (src/crd/). */
export interface SchemaChecks {
  /** The compiled structural schema of the served version. */
  root: SchemaNode;
  /** Every x-kubernetes-validations rule of the CRD, with its location. */
  rules: readonly CelRule[];
  /**
   * What the API server's decoder does to every object, stored ones included: prune unknown fields
   * (with warnings), apply defaults.
   */
  decode(obj: unknown): { object: unknown; warnings: string[] };
  /**
   * Then the registry's PrepareForCreate/PrepareForUpdate (status, generation): what the schema
   * checks and every CEL rule see. `obj` is what decode returned: an update prepares it in place.
   */
  prepare(obj: unknown, oldObj?: unknown): unknown;
  /** Schema and ObjectMeta checks of an admitted CREATE. */
  validate(obj: unknown): FieldError[];
  /** The same for an admitted UPDATE, ratcheted: errors in values it leaves unchanged are not reported. */
  validateUpdate(obj: unknown, oldObj: unknown, correlation: Correlation): FieldError[];
  /** Schema errors after which the API server runs no CEL rule, and the error it reports instead. */
  celBlockedBy(errors: readonly FieldError[]): FieldError | undefined;
  correlate(obj: unknown, oldObj: unknown): Correlation;
}

export interface Policy {
  /**
   * The Trainer line the CRD is (found by feature: src/api/trainer-line-detect.ts), whose rules the
   * table and the scale judgment follow; without a CRD, none is known and the careful rules apply.
   */
  line: LineDetection;
  table: CompiledRow[];
  /** The schema the table's rules are located and typed with: the CRD's, or the table's own. */
  tableRoot: SchemaNode;
  crd?: {
    checks: SchemaChecks;
    rules: CompiledCrdRule[];
    /** Rules the table supersedes or this project generated: not run here. */
    skipped: CelRule[];
    /** Rules (or their message expressions) this engine could not compile: left out and reported. */
    uncompilable: UncompilableRule[];
    blanketTrainerRule: boolean;
  };
}

let tableRoot: SchemaNode | undefined;
const tableSchemaRoot = (): SchemaNode => (tableRoot ??= compileSchema(TABLE_SCHEMA));

const normalize = (rule: string): string => rule.replace(/\s+/g, ' ').trim();

/** The table row that replaces a CRD rule, if any (e.g. upstream's blanket spec.trainer rule). */
export function supersededBy(rule: CelRule): string | undefined {
  const row = RULES.find(
    (r) => r.supersedes && r.supersedes.path === rule.location && normalize(r.supersedes.rule) === normalize(rule.rule),
  );
  return row?.id;
}

/** No CRD in force (`--table-only`, or before one could be read): no line is known. */
export const NO_CRD_LINE: LineDetection = {
  line: UNKNOWN_TRAINER_LINE,
  features: undefined,
  fingerprint: undefined,
  summary:
    'no TrainJob CRD in force, so no Trainer line is known: the most careful rules apply (Failed is terminal; standalone mode builds no JobSet)',
};

export function buildPolicy(checks?: SchemaChecks, line: LineDetection = NO_CRD_LINE): Policy {
  const env = createCelEnvironment();
  const table = compileTable(env, rulesFor(line.line));
  if (!checks) return { line, table, tableRoot: tableSchemaRoot() };
  const all = checks.rules;
  const skipped = all.filter((r) => isGeneratedRule(r.rule) || supersededBy(r));
  const kept = all.filter((r) => !skipped.includes(r));
  const blanketTrainerRule = all.some((r) => r.location === 'spec.trainer' && normalize(r.rule) === 'self == oldSelf');
  const { compiled, uncompilable } = compileCrdRules(env, kept);
  return {
    line,
    table,
    tableRoot: checks.root,
    crd: { checks, rules: compiled, skipped, uncompilable, blanketTrainerRule },
  };
}
