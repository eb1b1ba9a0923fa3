// The pure decision: an object (and on UPDATE its old version) in, field errors and warnings out.
// It does what the API server does before a validating webhook sees the object (prune, default,
// schema validation with ratcheting, the CRD's CEL rules) and then runs the rule table.
import { RuleRun } from '../cel/run-rules.ts';
import { runCrdRules } from '../cel/crd-rules.ts';
import type { FieldError } from '../field/errors.ts';
import { runTable } from './compiled-table.ts';
import type { Policy } from './policy.ts';
import { correlate } from '../crd/index.ts';
import { isObject, semanticEqual } from '../crd/values.ts';

export interface Verdict {
  causes: FieldError[];
  warnings: string[];
  /** Set when an update changes spec.trainer.numNodes and nothing refused that: the JobSet guard runs next. */
  numNodesChange?: { from: unknown; to: unknown };
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
  warnings.push(...decoded.warnings);
  return decoded.object;
}

function zeroNodesWarning(to: unknown): string[] {
  return to !== undefined && semanticEqual(to, 0)
    ? ['spec.trainer.numNodes is 0: the training job will complete at once when it runs (parallelism 0)']
    : [];
}

export function decideCreate(policy: Policy, input: unknown): Verdict {
  const warnings: string[] = [];
  const obj = decode(policy, input, warnings);
  const causes: FieldError[] = [];
  if (policy.crd) {
    const { checks } = policy.crd;
    const prepared = checks.prepare(obj);
    const schemaErrors = checks.validate(prepared);
    const blocked = checks.celBlockedBy(schemaErrors);
    causes.push(...schemaErrors);
    if (blocked) causes.push(blocked);
    else causes.push(...runCrdRules(policy.crd.rules, new RuleRun(false), checks.root, prepared).errors);
  }
  return { causes, warnings: [...warnings, ...zeroNodesWarning(numNodesOf(obj))] };
}

export function decideUpdate(policy: Policy, input: unknown, oldInput: unknown): Verdict {
  const warnings: string[] = [];
  const oldObj = decode(policy, oldInput, []);
  // The checks and the CEL rules see the object as the registry prepared it (status kept from the old object, ...).
  const obj = policy.crd ? policy.crd.checks.prepare(decode(policy, input, warnings), oldObj) : input;
  const correlation = policy.crd ? policy.crd.checks.correlate(obj, oldObj) : correlate(policy.tableRoot, obj, oldObj);
  const causes: FieldError[] = [];
  if (policy.crd) {
    const { checks } = policy.crd;
    causes.push(...checks.validateUpdate(obj, oldObj, correlation));
    // The API server runs no CEL rule (and so none of the table's, which the CRD patch turns into CEL) after a blocking schema error.
    const blocked = checks.celBlockedBy(causes);
    if (blocked) return { causes: [...causes, blocked], warnings };
  }
  const run = new RuleRun(true);
  if (policy.crd) {
    const crdRules = runCrdRules(policy.crd.rules, run, policy.crd.checks.root, obj, correlation);
    causes.push(...crdRules.errors);
    warnings.push(...crdRules.warnings);
  }
  causes.push(...runTable(policy.table, run, policy.tableRoot, obj, correlation));

  const from = numNodesOf(oldObj);
  const to = numNodesOf(obj);
  const changed = !semanticEqual(from ?? null, to ?? null);
  if (!changed || causes.some((c) => c.field === 'spec.trainer.numNodes')) return { causes, warnings };
  const target = to === undefined ? "the runtime's default" : String(to);
  return {
    causes,
    warnings: [...warnings, `spec.trainer.numNodes changes from ${from ?? "the runtime's default"} to ${target}: the JobSet will be rebuilt with ${target} nodes on resume`, ...zeroNodesWarning(to)],
    numNodesChange: { from, to },
  };
}
