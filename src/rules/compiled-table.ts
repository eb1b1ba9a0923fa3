// The rule table compiled once at start-up and run over an update. A row that does not compile
// stops start-up with the row's id and the position in its CEL.
import type { Environment } from '@marcbachmann/cel-js';
import { compileRule, CelCompileError, type CompiledRule } from '../cel/compile.ts';
import { locate, type Located } from '../cel/locate.ts';
import type { RuleRun } from '../cel/run-rules.ts';
import type { Correlation, SchemaNode } from '../crd/index.ts';
import { isObject } from '../json/object.ts';
import { MAX_DYN_DEPTH } from '../cel/values.ts';
import { fieldError, type FieldError } from '../field/errors.ts';
import { NAMED_TRAINER_FIELDS, RULES, type RuleRow } from './table.ts';

export interface CompiledRow {
  row: RuleRow;
  compiled: CompiledRule;
  /** The row's one field below its scope, found once (every row but the per-unnamed-field one). */
  target?: Target;
}

export class RuleTableError extends Error {}

export function compileTable(env: Environment, rows: readonly RuleRow[] = RULES): CompiledRow[] {
  return rows.map((row) => {
    try {
      return {
        row,
        compiled: compileRule(env, row.rule),
        target: row.perUnnamedTrainerField ? undefined : fieldTarget(row),
      };
    } catch (err) {
      if (err instanceof CelCompileError) throw new RuleTableError(`rule ${row.id}: ${err.message}`);
      throw err;
    }
  });
}

const NAMED = new Set<string>(NAMED_TRAINER_FIELDS);

/** spec.trainer fields present before or after that the table does not name. */
function unnamedTrainerFields(at: Located): string[] {
  const named = NAMED;
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
  for (const name of relative.split('.').filter(Boolean))
    v = isObject(v) && Object.hasOwn(v, name) ? v[name] : undefined;
  return v ?? null;
}

function violation(row: RuleRow, field: string, newValue: unknown): FieldError {
  const base =
    row.reason === 'FieldValueForbidden'
      ? fieldError.forbidden(field, row.message)
      : fieldError.invalid(field, newValue, row.message);
  return { ...base, origin: row.id };
}

/**
 * Every row of the table allows an update that leaves its field as it was: its rule is
 * `U || ...` (or `U` alone), where U says the field is unchanged (test/rules/table-fast-path.test.ts
 * checks each row's text). So a row whose field is unchanged passes without CEL: converting the
 * objects and evaluating ~16 rules was most of the table's cost, and most updates touch one field.
 *
 * "Unchanged" here is stricter than U: both absent, or both present and equal as JSON (lists in
 * order, numbers of the same JS type). Undefined when only CEL can tell: a step that is not an
 * object (has() on it is an error), or a value nested deeper than CEL converts (MAX_DYN_DEPTH).
 */
export function fieldUnchanged(value: unknown, oldValue: unknown, steps: readonly string[]): boolean | undefined {
  const a = valueAt(value, steps);
  const b = valueAt(oldValue, steps);
  if (a === NOT_AN_OBJECT || b === NOT_AN_OBJECT) return undefined;
  if (a === undefined || b === undefined) return a === b;
  return jsonEqual(a, b, MAX_DYN_DEPTH);
}

const NOT_AN_OBJECT = Symbol('not an object');

function valueAt(value: unknown, steps: readonly string[]): unknown {
  let v = value;
  for (const step of steps) {
    if (v === undefined) return undefined;
    if (!isObject(v)) return NOT_AN_OBJECT;
    v = Object.hasOwn(v, step) ? v[step] : undefined;
  }
  return v;
}

/** JSON equality, iterative; undefined past `maxDepth` levels or on a number beside a bigint. */
// eslint-disable-next-line complexity -- JSON equality in one loop over an explicit, depth-capped stack
function jsonEqual(a: unknown, b: unknown, maxDepth: number): boolean | undefined {
  const stack: Array<[unknown, unknown, number]> = [[a, b, 0]];
  while (stack.length > 0) {
    const [x, y, depth] = stack.pop()!;
    if (x === y) continue;
    if (typeof x !== typeof y)
      return (typeof x === 'number' || typeof x === 'bigint') && (typeof y === 'number' || typeof y === 'bigint')
        ? undefined
        : false;
    if (x === null || y === null || typeof x !== 'object') return false;
    if (depth >= maxDepth) return undefined;
    if (Array.isArray(x)) {
      if (!Array.isArray(y) || x.length !== y.length) return false;
      for (let i = 0; i < x.length; i++) stack.push([x[i], y[i], depth + 1]);
      continue;
    }
    if (Array.isArray(y)) return false;
    const xo = x as Record<string, unknown>;
    const yo = y as Record<string, unknown>;
    const keys = Object.keys(xo);
    if (keys.length !== Object.keys(yo).length) return false;
    for (const k of keys) {
      if (!Object.hasOwn(yo, k)) return false;
      stack.push([xo[k], yo[k], depth + 1]);
    }
  }
  return true;
}

interface Target {
  bindings: Record<string, unknown> | undefined;
  /** The field below the scope, as written after the scope's path (`.trainer.image`). */
  relative: string;
  /** The same as steps (a key of the per-field rows may hold dots). */
  steps: string[];
}

function fieldTarget(row: RuleRow): Target {
  const relative = row.field.slice(row.scope.length);
  return { bindings: undefined, relative, steps: relative.split('.').filter(Boolean) };
}

function targetsOf({ row, target }: CompiledRow, at: Located): readonly Target[] {
  if (target !== undefined) return [target];
  if (row.perUnnamedTrainerField)
    return unnamedTrainerFields(at).map((key) => ({
      bindings: { key },
      relative: `.trainer.${key}`,
      steps: ['trainer', key],
    }));
  return [fieldTarget(row)];
}

/**
 * Runs every row over an update; returns each violation with the field it blames. A row whose
 * field the update leaves unchanged passes at once (see fieldUnchanged), where CEL would run it
 * (a transition rule needs an old value: without one CEL skips it, and so does this).
 */
export function runTable(
  rows: readonly CompiledRow[],
  run: RuleRun,
  root: SchemaNode,
  obj: unknown,
  correlation: Correlation,
  options: { fastPath?: boolean } = {},
): FieldError[] {
  const fastPath = options.fastPath ?? true;
  const errors: FieldError[] = [];
  // Most rows share their scope (spec): find its values once.
  const located = new Map<string, Located[]>();
  for (const compiledRow of rows) {
    const { row, compiled } = compiledRow;
    let ats = located.get(row.scope);
    if (ats === undefined) located.set(row.scope, (ats = locate(root, row.scope, obj, correlation)));
    for (const at of ats) {
      const hasOld = at.oldValue !== undefined && at.oldValue !== null;
      for (const { bindings, relative, steps } of targetsOf(compiledRow, at)) {
        if (fastPath && hasOld && fieldUnchanged(at.value, at.oldValue, steps) === true) continue;
        const outcome = run.evaluate({ compiled, bindings }, at);
        const field = at.path + relative;
        if (outcome.kind === 'failed') errors.push(violation(row, field, valueBelow(at.value, relative)));
        if (outcome.kind === 'error')
          errors.push({ ...fieldError.invalid(field, valueBelow(at.value, relative), outcome.detail), origin: row.id });
      }
    }
  }
  return errors;
}
