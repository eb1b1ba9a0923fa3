// The CRD's own x-kubernetes-validations (found by src/crd), compiled once and run like the API
// server 1.35 runs them, with its error shape: the value for scalars
// (`spec.trainer.numProcPerNode: Invalid value: 0: ...`), none for objects and arrays
// (`spec.trainer: Invalid value: field is immutable`), `<nil>` for the root.
import type { Environment } from '@marcbachmann/cel-js';
import { errorString, fieldError, OMIT_VALUE, type FieldError } from '../field/errors.ts';
import { compileRule, CelCompileError, type CompiledRule } from './compile.ts';
import { locate, type Located } from './locate.ts';
import type { CelRule, Correlation, SchemaNode } from '../crd/index.ts';
import { CostMeter, PER_CALL_COST_LIMIT } from './cost.ts';
import { BUDGET_EXHAUSTED, type RuleRun } from './run-rules.ts';
import type { CelSchema } from './values.ts';

export interface CompiledCrdRule {
  rule: CelRule;
  compiled: CompiledRule;
  compiledMessage?: CompiledRule;
}

/**
 * A CRD rule (or its messageExpression) this engine could not compile, and why. A CRD the API
 * server stores has rules it compiled, so this is usually a CEL library the engine lacks
 * (Kubernetes' url, ip, cidr, quantity, format...), not bad input.
 */
export interface UncompilableRule {
  rule: CelRule;
  /**
   * 'rule': the rule is left out; 'messageExpression': the rule runs, failures use `message` (as
   * the API server does when a message expression fails).
   */
  part: 'rule' | 'messageExpression';
  error: string;
}

const where = (r: CelRule): string =>
  `${r.location || '<root>'}${r.branch ? ` ${r.branch}` : ''} x-kubernetes-validations[${r.index}]`;

function tryCompile(env: Environment, expression: string): CompiledRule | CelCompileError {
  try {
    return compileRule(env, expression);
  } catch (err) {
    if (err instanceof CelCompileError) return err;
    throw err;
  }
}

/**
 * Compiles every rule it can and reports the rest, naming each by its location: never a reason
 * to drop the whole CRD (the API server still enforces, before any webhook, every rule it stored).
 */
export function compileCrdRules(
  env: Environment,
  rules: readonly CelRule[],
): { compiled: CompiledCrdRule[]; uncompilable: UncompilableRule[] } {
  const compiled: CompiledCrdRule[] = [];
  const uncompilable: UncompilableRule[] = [];
  for (const r of rules) {
    const rule = tryCompile(env, r.rule);
    if (rule instanceof CelCompileError) {
      uncompilable.push({
        rule: r,
        part: 'rule',
        error: `CRD rule at ${where(r)} (${JSON.stringify(r.rule)}): ${rule.message}`,
      });
      continue;
    }
    const message = r.messageExpression ? tryCompile(env, r.messageExpression) : undefined;
    if (message instanceof CelCompileError) {
      uncompilable.push({
        rule: r,
        part: 'messageExpression',
        error: `messageExpression of the CRD rule at ${where(r)} (${JSON.stringify(r.messageExpression)}): ${message.message}`,
      });
    }
    compiled.push({
      rule: r,
      compiled: rule,
      compiledMessage: message instanceof CelCompileError ? undefined : message,
    });
  }
  return { compiled, uncompilable };
}

/** `.trainer.image` or `['a.b']` appended to a path, as NormalizedRuleFieldPath does. */
function withFieldPath(path: string, fieldPath: string | undefined): string {
  if (!fieldPath) return path;
  const rel = fieldPath.replace(/\['([^']*)'\]/g, '[$1]').replace(/^\./, '');
  if (!path) return rel;
  return rel.startsWith('[') ? path + rel : `${path}.${rel}`;
}

/** fieldErrorForReason in the API server. */
function failure(rule: CelRule, path: string, value: unknown, message: string): FieldError {
  switch (rule.reason) {
    case 'FieldValueForbidden':
      return fieldError.forbidden(path, message);
    case 'FieldValueRequired':
      return fieldError.required(path, message);
    case 'FieldValueDuplicate':
      return fieldError.duplicate(path, value);
    default:
      return fieldError.invalid(path, value, message);
  }
}

/** The root of a CR is `<nil>` in the API server's messages (a nil field.Path). */
export const ROOT_PATH = '<nil>';

export interface CrdRuleResult {
  errors: FieldError[];
  /** Ratcheted errors: the API server returns them as warnings. */
  warnings: string[];
}

/** The value a failed rule reports: the value itself for scalars, omitted for objects and arrays. */
function reportedValue(value: unknown, type: string): unknown {
  return type === 'object' || type === 'array' ? OMIT_VALUE : value;
}

// eslint-disable-next-line complexity -- the API server's loop: budget, errors and ratcheting per value
export function runCrdRules(
  rules: CompiledCrdRule[],
  run: RuleRun,
  root: SchemaNode,
  obj: unknown,
  correlation?: Correlation,
): CrdRuleResult {
  const errors: FieldError[] = [];
  const warnings: string[] = [];
  for (const compiledRule of rules) {
    const { rule } = compiledRule;
    const origin = `crd:${rule.location || '<root>'}#${rule.index}`;
    const errorName = (rule.message ?? '').trim() || rule.rule.trim();
    const type = rule.nodeSchema.type;
    for (const at of locate(root, rule.location, obj, correlation, rule.schema.raw as CelSchema)) {
      const path = at.path || ROOT_PATH;
      if (run.exhausted) {
        errors.push({ ...fieldError.invalid(path, type, BUDGET_EXHAUSTED), origin });
        return { errors, warnings };
      }
      const outcome = run.evaluate(
        { compiled: compiledRule.compiled, optionalOldSelf: rule.optionalOldSelf, errorName },
        at,
      );
      if (outcome.kind === 'error') {
        errors.push({ ...fieldError.invalid(path, type, outcome.detail), origin });
        if (outcome.stop) return { errors, warnings };
      }
      if (outcome.kind === 'failed' || outcome.kind === 'ratcheted') {
        const message =
          messageFor(compiledRule, run, at) ?? (rule.message?.trim() || `failed rule: ${rule.rule.trim()}`);
        const error = failure(
          rule,
          withFieldPath(at.path, rule.fieldPath) || ROOT_PATH,
          reportedValue(at.value, type),
          message,
        );
        if (outcome.kind === 'failed') errors.push({ ...error, origin });
        else warnings.push(errorString(error));
      }
    }
  }
  return { errors, warnings };
}

/** messageExpression's result when it gives a usable one-line string, else the plain message is used. */
function messageFor(rule: CompiledCrdRule, run: RuleRun, at: Located): string | undefined {
  if (!rule.compiledMessage) return undefined;
  try {
    const self = run.convert(at.value, at.schema);
    const oldSelf = at.oldValue === undefined ? undefined : run.convert(at.oldValue, at.schema);
    const text = rule.compiledMessage.evaluate({ self, oldSelf }, new CostMeter(PER_CALL_COST_LIMIT));
    return typeof text === 'string' && text.trim() && !text.includes('\n') ? text : undefined;
  } catch {
    return undefined;
  }
}
