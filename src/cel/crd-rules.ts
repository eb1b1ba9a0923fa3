// The CRD's own x-kubernetes-validations, compiled once and run like the API server runs them,
// with the API server's error shape: `<path>: Invalid value: "<schema type>": <message>`.
import type { Environment } from '@marcbachmann/cel-js';
import { fieldError, type FieldError } from '../field/errors.ts';
import { compileRule, CelCompileError, type CompiledRule } from './compile.ts';
import { locate, parseLocation, schemaAt, type Located } from './locate.ts';
import { CostMeter, PER_CALL_COST_LIMIT } from './cost.ts';
import { BUDGET_EXHAUSTED, type RuleRun } from './run-rules.ts';
import { toCelValue, type CelSchema } from './values.ts';

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

function failure(rule: CompiledCrdRule, path: string, type: string, message: string): FieldError {
  const origin = `crd:${rule.location || '<root>'}#${rule.index}`;
  switch (rule.reason) {
    case 'FieldValueForbidden':
      return { ...fieldError.forbidden(path, message), origin };
    case 'FieldValueRequired':
      return { ...fieldError.required(path, message), origin };
    case 'FieldValueDuplicate':
      return { ...fieldError.duplicate(path, type), detail: message, origin };
    default:
      return { ...fieldError.invalid(path, type, message), origin };
  }
}

/** The root of a CR is `<nil>` in the API server's messages (a nil field.Path). */
export const ROOT_PATH = '<nil>';

export function runCrdRules(rules: CompiledCrdRule[], run: RuleRun, schema: CelSchema, obj: unknown, oldObj: unknown): FieldError[] {
  const errors: FieldError[] = [];
  for (const rule of rules) {
    const located = locate(rule.segments, { path: '', value: obj, oldValue: oldObj, schema });
    for (const at of located) {
      const outcome = run.evaluate({ compiled: rule.compiled, optionalOldSelf: rule.optionalOldSelf }, at);
      const type = schemaType(at.schema ?? schemaAt(schema, rule.segments));
      const path = at.path || ROOT_PATH;
      if (outcome.kind === 'error') errors.push({ ...fieldError.invalid(path, type, outcome.detail), origin: `crd:${rule.location || '<root>'}#${rule.index}` });
      if (outcome.kind === 'failed') {
        const message = messageFor(rule, run, at) ?? rule.message ?? `failed rule: ${rule.rule}`;
        errors.push(failure(rule, withFieldPath(at.path, rule.fieldPath) || ROOT_PATH, type, message));
      }
    }
    if (run.exhausted) {
      errors.push(fieldError.invalid(ROOT_PATH, 'object', BUDGET_EXHAUSTED));
      break;
    }
  }
  return errors;
}

/** messageExpression's result when it gives a usable one-line string, else the plain message is used. */
function messageFor(rule: CompiledCrdRule, run: RuleRun, at: Located): string | undefined {
  if (!rule.compiledMessage) return undefined;
  try {
    const self = toCelValue(at.value, at.schema, run.pool);
    const oldSelf = at.oldValue === undefined ? undefined : toCelValue(at.oldValue, at.schema, run.pool);
    const text = rule.compiledMessage.evaluate({ self, oldSelf }, new CostMeter(PER_CALL_COST_LIMIT));
    return typeof text === 'string' && text.trim() && !text.includes('\n') ? text : undefined;
  } catch {
    return undefined;
  }
}
