// The rule table compiled once at start-up and run over an update. A row that does not compile
// stops start-up with the row's id and the position in its CEL.
import type { Environment } from '@marcbachmann/cel-js';
import { compileRule, CelCompileError, type CompiledRule } from '../cel/compile.ts';
import { locate, type Located } from '../cel/locate.ts';
import type { RuleRun } from '../cel/run-rules.ts';
import type { Correlation, SchemaNode } from '../crd/index.ts';
import { isObject } from '../json/object.ts';
import { fieldError, type FieldError } from '../field/errors.ts';
import { NAMED_TRAINER_FIELDS, RULES, type RuleRow } from './table.ts';

export interface CompiledRow {
  row: RuleRow;
  compiled: CompiledRule;
}

export class RuleTableError extends Error {}

export function compileTable(env: Environment, rows: readonly RuleRow[] = RULES): CompiledRow[] {
  return rows.map((row) => {
    try {
      return { row, compiled: compileRule(env, row.rule) };
    } catch (err) {
      if (err instanceof CelCompileError) throw new RuleTableError(`rule ${row.id}: ${err.message}`);
      throw err;
    }
  });
}

/** spec.trainer fields present before or after that the table does not name. */
function unnamedTrainerFields(at: Located): string[] {
  const named = new Set<string>(NAMED_TRAINER_FIELDS);
  const keys = new Set<string>();
  for (const spec of [at.value, at.oldValue]) {
    const trainer = isObject(spec) ? spec.trainer : undefined;
    if (isObject(trainer)) for (const k of Object.keys(trainer)) if (!named.has(k)) keys.add(k);
  }
  return [...keys].sort();
}

/** The value under `relative` (e.g. `.trainer.image`) of the located scope value; null when absent. */
function valueBelow(value: unknown, relative: string): unknown {
  let v = value;
  for (const name of relative.split('.').filter(Boolean)) v = isObject(v) && Object.hasOwn(v, name) ? v[name] : undefined;
  return v ?? null;
}

function violation(row: RuleRow, field: string, newValue: unknown): FieldError {
  const base = row.reason === 'FieldValueForbidden' ? fieldError.forbidden(field, row.message) : fieldError.invalid(field, newValue, row.message);
  return { ...base, origin: row.id };
}

/** Runs every row over an update; returns each violation with the field it blames. */
export function runTable(rows: readonly CompiledRow[], run: RuleRun, root: SchemaNode, obj: unknown, correlation: Correlation): FieldError[] {
  const errors: FieldError[] = [];
  for (const { row, compiled } of rows) {
    for (const at of locate(root, row.scope, obj, correlation)) {
      const targets = row.perUnnamedTrainerField
        ? unnamedTrainerFields(at).map((key) => ({ bindings: { key }, relative: `.trainer.${key}` }))
        : [{ bindings: undefined, relative: row.field.slice(row.scope.length) }];
      for (const { bindings, relative } of targets) {
        const outcome = run.evaluate({ compiled, bindings }, at);
        const field = at.path + relative;
        if (outcome.kind === 'failed') errors.push(violation(row, field, valueBelow(at.value, relative)));
        if (outcome.kind === 'error') errors.push({ ...fieldError.invalid(field, valueBelow(at.value, relative), outcome.detail), origin: row.id });
      }
    }
  }
  return errors;
}
