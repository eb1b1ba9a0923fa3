// The CRD's own x-kubernetes-validations, compiled once and run like the API server runs them,
// with the API server's error shape: `<path>: Invalid value: "<schema type>": <message>`.
import type { Environment } from '@marcbachmann/cel-js';
import { errorString, fieldError, OMIT_VALUE, type FieldError } from '../field/errors.ts';
import { compileRule, CelCompileError, type CompiledRule } from './compile.ts';
import { locate, parseLocation, schemaAt, type Located } from './locate.ts';
import { CostMeter, PER_CALL_COST_LIMIT } from './cost.ts';
import { BUDGET_EXHAUSTED, type RuleRun } from './run-rules.ts';
import type { CelSchema } from './values.ts';

interface XValidation {
  rule?: unknown;
  message?: unknown;
  messageExpression?: unknown;
  reason?: unknown;
  fieldPath?: unknown;
  optionalOldSelf?: unknown;
}

export interface CrdRule {
  /** Schema location, e.g. `spec.runtimePatches[*].manager` ('' is the root). */
  location: string;
  index: number;
  rule: string;
  message?: string;
  messageExpression?: string;
  reason?: string;
  fieldPath?: string;
  optionalOldSelf: boolean;
}

export interface CompiledCrdRule extends CrdRule {
  segments: string[];
  compiled: CompiledRule;
  compiledMessage?: CompiledRule;
}

/** Every x-kubernetes-validations entry in a schema, with its location. */
export function collectCrdRules(schema: CelSchema): CrdRule[] {
  const out: CrdRule[] = [];
  const walk = (node: CelSchema | undefined, location: string): void => {
    if (!node || typeof node !== 'object') return;
    const list = (node as { 'x-kubernetes-validations'?: unknown })['x-kubernetes-validations'];
    if (Array.isArray(list)) {
      list.forEach((v: XValidation, index) => {
        if (typeof v?.rule !== 'string') return;
        out.push({
          location,
          index,
          rule: v.rule,
          message: typeof v.message === 'string' ? v.message : undefined,
          messageExpression: typeof v.messageExpression === 'string' ? v.messageExpression : undefined,
          reason: typeof v.reason === 'string' ? v.reason : undefined,
          fieldPath: typeof v.fieldPath === 'string' ? v.fieldPath : undefined,
          optionalOldSelf: v.optionalOldSelf === true,
        });
      });
    }
    for (const [name, child] of Object.entries(node.properties ?? {})) walk(child, location ? `${location}.${name}` : name);
    if (node.items) walk(node.items, `${location}[*]`);
    if (typeof node.additionalProperties === 'object') walk(node.additionalProperties, `${location}[*]`);
  };
  walk(schema, '');
  return out;
}

export class CrdRuleError extends Error {}

export function compileCrdRules(env: Environment, rules: CrdRule[]): CompiledCrdRule[] {
  return rules.map((r) => {
    try {
      return {
        ...r,
        segments: parseLocation(r.location),
        compiled: compileRule(env, r.rule),
        compiledMessage: r.messageExpression ? compileRule(env, r.messageExpression) : undefined,
      };
    } catch (err) {
      const where = `${r.location || '<root>'} x-kubernetes-validations[${r.index}]`;
      if (err instanceof CelCompileError) throw new CrdRuleError(`CRD rule at ${where} (${JSON.stringify(r.rule)}): ${err.message}`);
      throw err;
    }
  });
}

/** `.trainer.image` or `['a.b']` appended to a path, as NormalizedRuleFieldPath does. */
function withFieldPath(path: string, fieldPath: string | undefined): string {
  if (!fieldPath) return path;
  const rel = fieldPath.replace(/\['([^']*)'\]/g, '[$1]').replace(/^\./, '');
  if (!path) return rel;
  return rel.startsWith('[') ? path + rel : `${path}.${rel}`;
}

function schemaType(schema: CelSchema | undefined): string {
  return schema?.type ?? '';
}

/** fieldErrorForReason in the API server. */
function failure(rule: CompiledCrdRule, path: string, value: unknown, message: string): FieldError {
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

export function runCrdRules(rules: CompiledCrdRule[], run: RuleRun, schema: CelSchema, obj: unknown, oldObj: unknown): CrdRuleResult {
  const errors: FieldError[] = [];
  const warnings: string[] = [];
  for (const rule of rules) {
    const origin = `crd:${rule.location || '<root>'}#${rule.index}`;
    const errorName = (rule.message ?? '').trim() || rule.rule.trim();
    for (const at of locate(rule.segments, { path: '', value: obj, oldValue: oldObj, schema })) {
      const type = schemaType(at.schema ?? schemaAt(schema, rule.segments));
      const path = at.path || ROOT_PATH;
      if (run.exhausted) {
        errors.push({ ...fieldError.invalid(path, type, BUDGET_EXHAUSTED), origin });
        return { errors, warnings };
      }
      const outcome = run.evaluate({ compiled: rule.compiled, optionalOldSelf: rule.optionalOldSelf, errorName }, at);
      if (outcome.kind === 'error') {
        errors.push({ ...fieldError.invalid(path, type, outcome.detail), origin });
        if (outcome.stop) return { errors, warnings };
      }
      if (outcome.kind === 'failed' || outcome.kind === 'ratcheted') {
        const message = messageFor(rule, run, at) ?? (rule.message?.trim() || `failed rule: ${rule.rule.trim()}`);
        const error = failure(rule, withFieldPath(at.path, rule.fieldPath) || ROOT_PATH, reportedValue(at.value, type), message);
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
