// The validating webhook's decision with its one I/O step: when the rules allow an update that
// changes numNodes, the change is judged against the cluster (its JobSet, runtime and the
// reconciler's Lease: src/scale/reads/scale-check.ts), which may refuse it for good or for now.
// Without cluster access the answer is the rules' alone, with a warning that it was not judged.
// The webhook does not know who calls it, so nothing is read before the rules have allowed the
// change, and what the request holds moves to the count-change reads' own budget first.
// In the cluster (scope 'table') the decision is the table's alone: the API server validated the
// whole object against the same CRD before calling, and a second check here could only agree or,
// where this port differs, refuse a write the API server accepted (failurePolicy: Fail).
import type { AdmissionInput, Decision, ScaleCheck, ScaleCheckResult, Validator } from './contract.ts';
import {
  DECIDE_SLICE_MS,
  decideCreateYielding,
  decideUpdateYielding,
  type DecisionScope,
  type Verdict,
} from './decide.ts';
import type { Policy } from './policy.ts';
import { OMIT_VALUE } from '../field/errors.ts';
import { isObject } from '../json/object.ts';

export interface ValidatorDeps {
  /** The policy, or a getter for the one in force when the CRD can change at run time. */
  policy: Policy | (() => Policy);
  /** Judges an allowed numNodes change; undefined when the webhook has no cluster access. */
  scaleCheck?: ScaleCheck;
  /** Says where the CRD schema came from, for the start-up line. */
  crdSource?: string;
  /**
   * 'whole-object' (the default: review, serve offline or with --crd) checks what the API server
   * checks first, then the table; 'table' only the table (serve following the cluster's CRD).
   */
  scope?: DecisionScope;
  /** Called for each decision that ran the CRD's schema checks (serve counts them in a metric). */
  onWholeObjectCheck?: () => void;
}

export const NOT_JUDGED =
  'spec.trainer.numNodes: the change was not judged against the cluster (the webhook runs without cluster access): whether the runtime can be rebuilt, and whether a reconciler runs to rebuild it, was not checked';

function failedCheck(err: unknown): ScaleCheckResult {
  const text = err instanceof Error ? err.message : String(err);
  return {
    causes: [
      {
        type: 'FieldValueForbidden',
        field: 'spec.trainer.numNodes',
        value: OMIT_VALUE,
        detail: `the change could not be judged (${text.split('\n')[0].slice(0, 300)}); it is refused for now and can be applied again in a few seconds`,
        origin: 'scale-check',
      },
    ],
    warnings: [],
    transient: true,
  };
}

const BLANKET =
  '; WARNING: the CRD still has the blanket spec.trainer rule (self == oldSelf), so the API server refuses every numNodes change before this webhook runs: apply the CRD patch (trainjob-webhook rules --format crd-patch)';

/** spec.trainer.numNodes as sent, before any decoding. */
function sentNumNodes(object: unknown): unknown {
  const spec = isObject(object) ? object.spec : undefined;
  const trainer = isObject(spec) ? spec.trainer : undefined;
  return isObject(trainer) ? trainer.numNodes : undefined;
}

/** Refused for now: the count-change reads' budget is full (holdWhileReading said no). */
const READS_BUSY: ScaleCheckResult = failedCheck(
  new Error('the webhook is judging as many count changes as it may at once'),
);

/**
 * The scale check's reads, started before the rules decide when the update as sent changes
 * numNodes (the likely numNodesChange; the decision says for sure), so that they overlap the
 * decision. Started for a change the rules then refuse, they are dropped unread. Only for a
 * caller known to be the API server: anyone else who reaches the port could otherwise make the
 * webhook read the cluster with reviews the rules refuse (issue 26).
 */
function readAheadFor(scaleCheck: ScaleCheck | undefined, input: AdmissionInput) {
  if (!input.callerAuthenticated) return undefined;
  if (!scaleCheck?.readAhead || sentNumNodes(input.object) === sentNumNodes(input.oldObject)) return undefined;
  return scaleCheck.readAhead({
    namespace: input.namespace ?? '',
    name: input.name ?? '',
    object: input.object,
    callerAuthenticated: true,
  });
}

export function createValidator({
  policy: policyOrGetter,
  scaleCheck,
  crdSource,
  scope = 'whole-object',
  onWholeObjectCheck,
}: ValidatorDeps): Validator {
  const current = typeof policyOrGetter === 'function' ? policyOrGetter : () => policyOrGetter;
  const counted = (verdict: Verdict): Verdict => {
    if (verdict.checkedWholeObject) onWholeObjectCheck?.();
    return verdict;
  };
  return {
    async validate(input: AdmissionInput): Promise<Decision> {
      const policy = current();
      // A large object is decided in stages, letting other requests be answered in between.
      if (input.operation === 'CREATE')
        return counted(await decideCreateYielding(policy, input.object, DECIDE_SLICE_MS, scope));
      if (input.operation !== 'UPDATE') return { causes: [], warnings: [] };
      const ahead = readAheadFor(scaleCheck, input);
      const verdict = counted(
        await decideUpdateYielding(policy, input.object, input.oldObject, DECIDE_SLICE_MS, scope),
      );
      const change = verdict.numNodesChange;
      if (!change) return verdict;
      if (!scaleCheck) return { causes: [], warnings: [...verdict.warnings, ...change.warnings, NOT_JUDGED] };
      const decidedAt = performance.now();
      const trainer = policy.line.line;
      const judged = await (
        ahead
          ? ahead(trainer)
          : input.holdWhileReading?.() === false
            ? Promise.resolve(READS_BUSY)
            : scaleCheck({
                namespace: input.namespace ?? '',
                name: input.name ?? '',
                trainer,
                object: input.object,
                oldObject: input.oldObject,
                ...(input.callerAuthenticated ? { callerAuthenticated: true as const } : {}),
                ...(input.oldObjectStored ? { oldObjectStored: true as const } : {}),
              })
      ).catch(failedCheck);
      const readWaitMs = performance.now() - decidedAt;
      if (judged.causes.length > 0)
        return {
          causes: judged.causes,
          warnings: [...verdict.warnings, ...judged.warnings],
          ...(judged.transient ? { transient: true as const } : {}),
          readWaitMs,
        };
      return { causes: [], warnings: [...verdict.warnings, ...change.warnings, ...judged.warnings], readWaitMs };
    },
    describe(): string {
      const policy = current();
      const rows = `${policy.table.length} table rules`;
      if (!policy.crd)
        return `no TrainJob CRD in force (${crdSource ?? 'none given'}): only the ${rows} run (no schema, defaults or CRD rules)`;
      const blanket = policy.crd.blanketTrainerRule ? BLANKET : '';
      const skippedHere = policy.crd.uncompilable.filter((u) => u.part === 'rule').length;
      const source = `CRD: ${crdSource ?? 'unknown source'}`;
      if (scope === 'table') {
        const uncompilable =
          skippedHere > 0
            ? `; ${skippedHere} CRD rules do not compile here (only an offline check would run them)`
            : '';
        return `${source}: its schema locates the ${rows}; the schema and the CRD's own rules are the API server's to check, which it does before it calls this webhook${uncompilable}${blanket}`;
      }
      const uncompilable =
        skippedHere > 0
          ? `; ${skippedHere} CRD rules do not compile here and are skipped (the API server still enforces them)`
          : '';
      return `${source}: schema, ${policy.crd.rules.length} CRD rules and ${rows} (${policy.crd.skipped.length} CRD rules superseded or generated by the table)${uncompilable}${blanket}`;
    },
  };
}
