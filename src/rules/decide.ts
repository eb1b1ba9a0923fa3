// The pure decision: an object (and on UPDATE its old version) in, field errors and warnings out.
// It does what the API server does before a validating webhook sees the object (prune, default,
// schema validation with ratcheting, the CRD's CEL rules) and then runs the rule table.
import { RuleRun } from '../cel/run-rules.ts';
import { runCrdRules } from '../cel/crd-rules.ts';
import { canonicalKey, InternPool } from '../cel/values.ts';
import type { FieldError } from '../field/errors.ts';
import { runTable } from './compiled-table.ts';
import type { Policy } from './policy.ts';
import { correlate } from '../crd/index.ts';

export interface Verdict {
  causes: FieldError[];
  warnings: string[];
  /** Set when an update changes spec.trainer.numNodes and nothing refused that: the JobSet guard runs next. */
  numNodesChange?: { from: unknown; to: unknown };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function numNodesOf(obj: unknown): unknown {
  const spec = isObject(obj) ? obj.spec : undefined;
  const trainer = isObject(spec) ? spec.trainer : undefined;
  return isObject(trainer) ? trainer.numNodes : undefined;
}

/** What the API server stores: unknown fields pruned, then schema defaults applied. */
function admit(policy: Policy, obj: unknown, warnings: string[]): unknown {
  if (!policy.crd) return obj;
  const decoded = policy.crd.checks.decode(obj);
  warnings.push(...decoded.warnings);
  return decoded.object;
}

function zeroNodesWarning(to: unknown): string[] {
  return to !== undefined && canonicalKey(to) === canonicalKey(0)
    ? ['spec.trainer.numNodes is 0: the training job will complete at once when it runs (parallelism 0)']
    : [];
}

export function decideCreate(policy: Policy, input: unknown): Verdict {
  const warnings: string[] = [];
  const obj = admit(policy, input, warnings);
  const causes: FieldError[] = [];
  if (policy.crd) {
    const { checks } = policy.crd;
    const schemaErrors = checks.validate(obj);
    const blocked = checks.celBlockedBy(schemaErrors);
    causes.push(...schemaErrors);
    if (blocked) causes.push(blocked);
    else causes.push(...runCrdRules(policy.crd.rules, new RuleRun(new InternPool(), false), checks.root, checks.prepare(obj)).errors);
  }
  return { causes, warnings: [...warnings, ...zeroNodesWarning(numNodesOf(obj))] };
}

export function decideUpdate(policy: Policy, input: unknown, oldInput: unknown): Verdict {
  const warnings: string[] = [];
  const obj = admit(policy, input, warnings);
  const oldObj = admit(policy, oldInput, []);
  const run = new RuleRun(new InternPool(), true);
  const causes: FieldError[] = [];
  const schemaErrors = policy.crd?.checks.validateUpdate(obj, oldObj) ?? [];
  const blocked = policy.crd?.checks.celBlockedBy(schemaErrors);
  causes.push(...schemaErrors);
  // The API server runs no CEL rule (and so none of the table's, which the CRD patch turns into CEL) after a blocking schema error.
  if (blocked) return { causes: [...causes, blocked], warnings };
  // The CEL rules see the object as the registry prepared it (status kept from the old object, ...).
  const prepared = policy.crd ? policy.crd.checks.prepare(obj, oldObj) : obj;
  const correlation = policy.crd ? policy.crd.checks.correlate(prepared, oldObj) : correlate(policy.tableRoot, prepared, oldObj);
  if (policy.crd) {
    const crdRules = runCrdRules(policy.crd.rules, run, policy.crd.checks.root, prepared, correlation);
    causes.push(...crdRules.errors);
    warnings.push(...crdRules.warnings);
  }
  causes.push(...runTable(policy.table, run, policy.tableRoot, prepared, correlation));

  const from = numNodesOf(oldObj);
  const to = numNodesOf(obj);
  const changed = canonicalKey(from) !== canonicalKey(to);
  if (!changed || causes.some((c) => c.field === 'spec.trainer.numNodes')) return { causes, warnings };
  const target = to === undefined ? "the runtime's default" : String(to);
  return {
    causes,
    warnings: [...warnings, `spec.trainer.numNodes changes from ${from ?? "the runtime's default"} to ${target}: the JobSet will be rebuilt with ${target} nodes on resume`, ...zeroNodesWarning(to)],
    numNodesChange: { from, to },
  };
}
