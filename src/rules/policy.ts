// Everything the decision needs, built once at start-up: the compiled rule table and, when a
// TrainJob CRD is known, its schema checks and its own CEL rules (minus the ones the table
// supersedes and the ones this project generated into the CRD).
import { createCelEnvironment } from '../cel/environment.ts';
import { collectCrdRules, compileCrdRules, type CompiledCrdRule, type CrdRule } from '../cel/crd-rules.ts';
import type { CelSchema } from '../cel/values.ts';
import type { FieldError } from '../field/errors.ts';
import { compileTable, type CompiledRow } from './compiled-table.ts';
import { isGeneratedRule } from './marker.ts';
import { RULES } from './table.ts';

/** The structural-schema side of the API server (src/crd/). */
export interface SchemaChecks {
  schema: CelSchema;
  /** What the API server's decoder does first: prune unknown fields (with warnings), apply defaults. */
  decode(obj: unknown): { object: unknown; warnings: string[] };
  validate(obj: unknown): FieldError[];
  /** Ratcheted: errors in values the update leaves unchanged are not reported. */
  validateUpdate(obj: unknown, oldObj: unknown): FieldError[];
  /** Schema errors after which the API server runs no CEL rule, and the error it reports instead. */
  celBlockedBy(errors: readonly FieldError[]): FieldError | undefined;
}

export interface Policy {
  table: CompiledRow[];
  crd?: { checks: SchemaChecks; rules: CompiledCrdRule[]; skipped: CrdRule[]; blanketTrainerRule: boolean };
}

const normalize = (rule: string): string => rule.replace(/\s+/g, ' ').trim();

/** The table row that replaces a CRD rule, if any (e.g. upstream's blanket spec.trainer rule). */
export function supersededBy(rule: CrdRule): string | undefined {
  const row = RULES.find((r) => r.supersedes && r.supersedes.path === rule.location && normalize(r.supersedes.rule) === normalize(rule.rule));
  return row?.id;
}

export function buildPolicy(checks?: SchemaChecks): Policy {
  const env = createCelEnvironment();
  const table = compileTable(env);
  if (!checks) return { table };
  const all = collectCrdRules(checks.schema);
  const skipped = all.filter((r) => isGeneratedRule(r.rule) || supersededBy(r));
  const kept = all.filter((r) => !skipped.includes(r));
  const blanketTrainerRule = all.some((r) => r.location === 'spec.trainer' && normalize(r.rule) === 'self == oldSelf');
  return { table, crd: { checks, rules: compileCrdRules(env, kept), skipped, blanketTrainerRule } };
}
