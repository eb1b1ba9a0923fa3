// Runs compiled rules over one object the way the API server runs a CRD's x-kubernetes-validations:
// transition rules (those using oldSelf) only where an old value correlates, unless
// optionalOldSelf; other rules ratcheted on UPDATE (a failure on an unchanged value is a
// warning); a per-call cost limit and a per-object budget.
import { Optional } from '@marcbachmann/cel-js';
import type { CompiledRule } from './compile.ts';
import { CostLimitError, CostMeter, PER_CALL_COST_LIMIT, PER_OBJECT_COST_BUDGET } from './cost.ts';
import type { Located } from './locate.ts';
import { InternPool, toCelValue, toCelView, type CelSchema } from './values.ts';
import { WHOLE } from './reads.ts';

export interface RuleToRun {
  compiled: CompiledRule;
  optionalOldSelf?: boolean;
  /** Extra variables (the per-field table rows bind `key`). */
  bindings?: Record<string, unknown>;
  /** How errors name the rule: its message if it has one, else its text (ruleErrorString). */
  errorName?: string;
}

export type Outcome =
  | { kind: 'passed' }
  | { kind: 'skipped' }
  | { kind: 'failed' }
  /** Failed on a value the update leaves unchanged: the API server turns the error into a warning. */
  | { kind: 'ratcheted' }
  | { kind: 'error'; detail: string; stop?: boolean };

/** One object's evaluation: a shared intern pool and the per-object cost budget. */
export class RuleRun {
  readonly pool = new InternPool();
  readonly isUpdate: boolean;
  #budget = new CostMeter(PER_OBJECT_COST_BUDGET);
  #exhausted = false;
  /** Off: every rule sees both objects converted whole (the tests compare the two). */
  readonly #views: boolean;
  /** Conversions are shared by every rule that looks at the same value (many rows look at spec). */
  #converted = new WeakMap<object, Map<CelSchema | undefined, unknown>>();

  constructor(isUpdate: boolean, options: { views?: boolean } = {}) {
    this.isUpdate = isUpdate;
    this.#views = options.views ?? true;
  }

  get exhausted(): boolean {
    return this.#exhausted;
  }

  // eslint-disable-next-line complexity -- one CEL call: oldSelf gating, ratcheting and the API server's error texts
  evaluate(rule: RuleToRun, at: Located): Outcome {
    if (this.#exhausted) return { kind: 'skipped' };
    const hasOld = this.isUpdate && at.oldValue !== undefined && at.oldValue !== null;
    const { compiled } = rule;
    if (compiled.usesOldSelf && !hasOld && !rule.optionalOldSelf) return { kind: 'skipped' };

    // Only what the rule reads is converted (src/cel/reads.ts); at the root, CEL sees
    // metadata.name and metadata.generateName alone, of both objects (model.WithTypeAndObjectMeta).
    const isRoot = at.path === '';
    const self = toCelView(at.value, at.schema, this.#views ? compiled.selfReads : WHOLE, this.pool, isRoot);
    const old =
      hasOld && compiled.usesOldSelf
        ? toCelView(at.oldValue, at.schema, this.#views ? compiled.oldSelfReads : WHOLE, this.pool, isRoot)
        : undefined;
    const oldSelf = rule.optionalOldSelf ? (old === undefined ? Optional.none() : Optional.of(old)) : old;
    const meter = new CostMeter(PER_CALL_COST_LIMIT);
    try {
      const result = compiled.evaluate({ ...rule.bindings, self, oldSelf }, meter);
      if (result === true) return { kind: 'passed' };
      // Ratcheting: a rule without oldSelf that fails on an unchanged value is only a warning.
      return !compiled.usesOldSelf && at.ratchet ? { kind: 'ratcheted' } : { kind: 'failed' };
    } catch (err) {
      const name = rule.errorName ?? compiled.source;
      if (err instanceof CostLimitError)
        return {
          kind: 'error',
          detail: `'${err.message}': no further validation rules will be run due to call cost exceeds limit for rule: ${name}`,
          stop: true,
        };
      const msg = (err as Error).message?.split('\n')[0] ?? String(err);
      if (msg.startsWith('no such overload')) {
        return {
          kind: 'error',
          detail: `'${msg}': call arguments did not match a supported operator, function or macro signature for rule: ${name}`,
        };
      }
      return { kind: 'error', detail: `${msg} evaluating rule: ${name}` };
    } finally {
      this.#charge(meter.used);
    }
  }

  /** The CEL value of a JSON value under its schema, converted once per request. */
  convert(value: unknown, schema: CelSchema | undefined): unknown {
    if (value === null || typeof value !== 'object') return toCelValue(value, schema, this.pool);
    let bySchema = this.#converted.get(value);
    if (!bySchema) this.#converted.set(value, (bySchema = new Map()));
    if (!bySchema.has(schema)) bySchema.set(schema, toCelValue(value, schema, this.pool));
    return bySchema.get(schema);
  }

  #charge(cost: number): void {
    try {
      this.#budget.add(cost);
    } catch {
      this.#exhausted = true;
    }
  }
}

/** The API server's message when the per-object budget runs out. */
export const BUDGET_EXHAUSTED =
  'validation failed due to running out of cost budget, no further validation rules will be run';
