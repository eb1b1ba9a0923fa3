// The pure decision: an object (and on UPDATE its old version) in, field errors and warnings out.
// Offline it does what the API server does before a validating webhook sees the object (prune,
// default, schema validation with ratcheting, the CRD's CEL rules) and then runs the rule table.
// In the cluster the API server has done all of that before it calls the webhook, so the decision
// runs the rule table alone (its scope 'table'), ratcheting as the API server does.
import { appendAll } from '../crd/append.ts';
import { RuleRun } from '../cel/run-rules.ts';
import { runCrdRules } from '../cel/crd-rules.ts';
import type { FieldError } from '../field/errors.ts';
import { runTable } from './compiled-table.ts';
import type { Policy } from './policy.ts';
import { correlate } from '../crd/index.ts';
import { semanticEqual } from '../crd/values.ts';
import { isObject } from '../json/object.ts';

/**
 * What a decision checks: 'whole-object' is what the API server checks first and then the table
 * (offline: `review`, `serve` without a cluster, with --crd or the embedded CRD), so its answer is
 * the API server's; 'table' is the table alone, for an object the API server has already decoded,
 * prepared and validated against the same CRD (serve following the cluster's CRD). With 'table'
 * the CRD still gives the schema the table is located, typed and correlated with (list keys).
 */
export type DecisionScope = 'whole-object' | 'table';

export interface Verdict {
  causes: FieldError[];
  warnings: string[];
  /** Set when the CRD's schema checks ran (scope 'whole-object' with a CRD): what serve counts. */
  checkedWholeObject?: true;
  /**
   * Set when an update changes spec.trainer.numNodes and the rules allow it: the webhook then
   * judges it against the cluster. Its warnings (the rebuild, a count of 0) are said only when it
   * is admitted, so they are not in `warnings`.
   */
  numNodesChange?: { from: unknown; to: unknown; warnings: string[] };
}

function numNodesOf(obj: unknown): unknown {
  const spec = isObject(obj) ? obj.spec : undefined;
  const trainer = isObject(spec) ? spec.trainer : undefined;
  return isObject(trainer) ? trainer.numNodes : undefined;
}

/** What the API server decodes: unknown fields pruned (with warnings), then schema defaults applied. */
function decode(policy: Policy, obj: unknown, warnings: string[]): unknown {
  if (!policy.crd) return obj;
  const decoded = policy.crd.checks.decode(obj);
  appendAll(warnings, decoded.warnings);
  return decoded.object;
}

function zeroNodesWarning(to: unknown): string[] {
  return to !== undefined && semanticEqual(to, 0)
    ? ['spec.trainer.numNodes is 0: the training job will complete at once when it runs (parallelism 0)']
    : [];
}

/**
 * The decision in stages: each `yield` is a point where a caller may let other work run. A large
 * object (an UPDATE of 60,000 env entries takes ~0.8 s with a CRD) then does not hold the event
 * loop for the whole decision: the webhook answers other requests between its stages
 * (decideUpdateYielding). The stages are the API server's own steps, in its order.
 */
function* createStages(policy: Policy, input: unknown, scope: DecisionScope): Generator<void, Verdict> {
  // The table judges changes only: a create the API server has validated needs nothing more.
  if (scope === 'table') return { causes: [], warnings: zeroNodesWarning(numNodesOf(input)) };
  const warnings: string[] = [];
  const obj = decode(policy, input, warnings);
  const causes: FieldError[] = [];
  if (policy.crd) {
    const { checks } = policy.crd;
    const prepared = checks.prepare(obj);
    yield;
    const schemaErrors = checks.validate(prepared);
    const blocked = checks.celBlockedBy(schemaErrors);
    appendAll(causes, schemaErrors);
    yield;
    if (blocked) causes.push(blocked);
    else appendAll(causes, runCrdRules(policy.crd.rules, new RuleRun(false), checks.root, prepared).errors);
    return { causes, warnings: [...warnings, ...zeroNodesWarning(numNodesOf(obj))], checkedWholeObject: true };
  }
  return { causes, warnings: [...warnings, ...zeroNodesWarning(numNodesOf(obj))] };
}

/**
 * The table over an update the API server has decoded, prepared and validated (scope 'table'):
 * both objects as received, correlated through the CRD's schema (tableRoot: its map lists by their
 * keys), so a rule compares old and new as the API server's CEL does, and an error on a value the
 * update leaves unchanged ratchets as it does there.
 */
function* tableStages(policy: Policy, obj: unknown, oldObj: unknown): Generator<void, Verdict> {
  const correlation = correlate(policy.tableRoot, obj, oldObj);
  yield;
  const causes = runTable(policy.table, new RuleRun(true), policy.tableRoot, obj, correlation);
  return withChange(causes, [], obj, oldObj);
}

function* updateStages(
  policy: Policy,
  input: unknown,
  oldInput: unknown,
  scope: DecisionScope,
): Generator<void, Verdict> {
  if (scope === 'table') return yield* tableStages(policy, input, oldInput);
  const warnings: string[] = [];
  const oldObj = decode(policy, oldInput, []);
  yield;
  // The checks and the CEL rules see the object as the registry prepared it (status kept from the old object, ...).
  const obj = policy.crd ? policy.crd.checks.prepare(decode(policy, input, warnings), oldObj) : input;
  const correlation = policy.crd ? policy.crd.checks.correlate(obj, oldObj) : correlate(policy.tableRoot, obj, oldObj);
  const causes: FieldError[] = [];
  if (policy.crd) {
    yield;
    const { checks } = policy.crd;
    appendAll(causes, checks.validateUpdate(obj, oldObj, correlation));
    // The API server runs no CEL rule (and so none of the table's, which the CRD patch turns into
    // CEL) after a blocking schema error.
    const blocked = checks.celBlockedBy(causes);
    if (blocked) return { causes: [...causes, blocked], warnings, checkedWholeObject: true };
  }
  const run = new RuleRun(true);
  if (policy.crd) {
    yield;
    const crdRules = runCrdRules(policy.crd.rules, run, policy.crd.checks.root, obj, correlation);
    appendAll(causes, crdRules.errors);
    appendAll(warnings, crdRules.warnings);
  }
  yield;
  appendAll(causes, runTable(policy.table, run, policy.tableRoot, obj, correlation));
  const verdict = withChange(causes, warnings, obj, oldObj);
  return policy.crd ? { ...verdict, checkedWholeObject: true } : verdict;
}

/** What happens next is said only when the update is admitted: a refused one changes nothing. */
function withChange(causes: FieldError[], warnings: string[], obj: unknown, oldObj: unknown): Verdict {
  const from = numNodesOf(oldObj);
  const to = numNodesOf(obj);
  if (causes.length > 0 || semanticEqual(from ?? null, to ?? null)) return { causes, warnings };
  return {
    causes,
    warnings,
    numNodesChange: { from, to, warnings: [rebuildWarning(from, to, suspendedAfter(obj)), ...zeroNodesWarning(to)] },
  };
}

function runToEnd(stages: Generator<void, Verdict>): Verdict {
  for (;;) {
    const step = stages.next();
    if (step.done) return step.value;
  }
}

/** After this much work in one go, a yielding decision lets the event loop run (small objects never wait). */
export const DECIDE_SLICE_MS = 10;

async function runYielding(stages: Generator<void, Verdict>, sliceMs: number): Promise<Verdict> {
  let since = performance.now();
  for (;;) {
    const step = stages.next();
    if (step.done) return step.value;
    if (performance.now() - since >= sliceMs) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      since = performance.now();
    }
  }
}

export function decideCreate(policy: Policy, input: unknown, scope: DecisionScope = 'whole-object'): Verdict {
  return runToEnd(createStages(policy, input, scope));
}

export function decideUpdate(
  policy: Policy,
  input: unknown,
  oldInput: unknown,
  scope: DecisionScope = 'whole-object',
): Verdict {
  return runToEnd(updateStages(policy, input, oldInput, scope));
}

/** decideCreate, letting the event loop run between stages once a stage has taken `sliceMs`. */
export function decideCreateYielding(
  policy: Policy,
  input: unknown,
  sliceMs = DECIDE_SLICE_MS,
  scope: DecisionScope = 'whole-object',
): Promise<Verdict> {
  return runYielding(createStages(policy, input, scope), sliceMs);
}

/** decideUpdate, letting the event loop run between stages once a stage has taken `sliceMs`. */
export function decideUpdateYielding(
  policy: Policy,
  input: unknown,
  oldInput: unknown,
  sliceMs = DECIDE_SLICE_MS,
  scope: DecisionScope = 'whole-object',
): Promise<Verdict> {
  return runYielding(updateStages(policy, input, oldInput, scope), sliceMs);
}

function suspendedAfter(obj: unknown): boolean {
  const spec = isObject(obj) ? obj.spec : undefined;
  return isObject(spec) && spec.suspend === true;
}

/**
 * A numNodes value in a message; a list or an object (a hand-written review only) is named by its
 * type: String() of a deep one overflows the stack.
 */
const shown = (v: unknown): string =>
  v !== null && typeof v === 'object' ? (Array.isArray(v) ? 'a list' : 'an object') : String(v);
const nodes = (n: unknown): string =>
  n === undefined ? "the runtime's default number of nodes" : `${shown(n)} node${semanticEqual(n, 1) ? '' : 's'}`;

/**
 * What the reconciler sidecar does with an admitted change (src/rebuild/decide.ts): it deletes
 * the stale JobSet once the JobSet is suspended (by Trainer, or by the sidecar itself when the
 * TrainJob was suspended in this very update) and nothing of it runs (every child Job suspended
 * or finished with no active or terminating pod, no pod left but finished ones not being
 * deleted); Trainer (or the sidecar in standalone mode) re-creates it at once with the new count.
 * Not "on resume": a suspended job is rebuilt while it stays suspended.
 */
function rebuildWarning(from: unknown, to: unknown, suspended: boolean): string {
  const change = `spec.trainer.numNodes changes from ${from === undefined ? "the runtime's default" : shown(from)} to ${to === undefined ? "the runtime's default" : shown(to)}`;
  return suspended
    ? `${change}: the JobSet is rebuilt with ${nodes(to)} as soon as it is suspended and none of its pods runs or is terminating (the reconciler deletes it and it is re-created, suspended); the training runs on ${nodes(to)} once the TrainJob is resumed`
    : `${change}: the JobSet is rebuilt with ${nodes(to)} as soon as none of its pods runs or is terminating (the reconciler deletes the suspended JobSet and it is re-created and starts at once)`;
}
