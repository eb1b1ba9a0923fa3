// The pure decision: an object (and on UPDATE its old version) in, field errors and warnings out.
// It does what the API server does before a validating webhook sees the object (prune, default,
// schema validation with ratcheting, the CRD's CEL rules) and then runs the rule table.
import { appendAll } from '../crd/append.ts';
import { RuleRun } from '../cel/run-rules.ts';
import { runCrdRules } from '../cel/crd-rules.ts';
import type { FieldError } from '../field/errors.ts';
import { runTable } from './compiled-table.ts';
import type { Policy } from './policy.ts';
import { correlate } from '../crd/index.ts';
import { semanticEqual } from '../crd/values.ts';
import { isObject } from '../json/object.ts';

export interface Verdict {
  causes: FieldError[];
  warnings: string[];
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
function* createStages(policy: Policy, input: unknown): Generator<void, Verdict> {
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
  }
  return { causes, warnings: [...warnings, ...zeroNodesWarning(numNodesOf(obj))] };
}

function* updateStages(policy: Policy, input: unknown, oldInput: unknown): Generator<void, Verdict> {
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
    if (blocked) return { causes: [...causes, blocked], warnings };
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

  // What happens next is said only when the update is admitted: a refused one changes nothing.
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

export function decideCreate(policy: Policy, input: unknown): Verdict {
  return runToEnd(createStages(policy, input));
}

export function decideUpdate(policy: Policy, input: unknown, oldInput: unknown): Verdict {
  return runToEnd(updateStages(policy, input, oldInput));
}

/** decideCreate, letting the event loop run between stages once a stage has taken `sliceMs`. */
export function decideCreateYielding(policy: Policy, input: unknown, sliceMs = DECIDE_SLICE_MS): Promise<Verdict> {
  return runYielding(createStages(policy, input), sliceMs);
}

/** decideUpdate, letting the event loop run between stages once a stage has taken `sliceMs`. */
export function decideUpdateYielding(
  policy: Policy,
  input: unknown,
  oldInput: unknown,
  sliceMs = DECIDE_SLICE_MS,
): Promise<Verdict> {
  return runYielding(updateStages(policy, input, oldInput), sliceMs);
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
