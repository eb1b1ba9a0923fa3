// `rules --format crd-patch`: a kustomize JSON6902 patch for the upstream TrainJob CRD. It removes
// the blanket `self == oldSelf` on spec.trainer and nothing else there (a `test` op on the whole
// entry first, so the patch fails loudly if upstream changed that rule or put another first), adds
// the table's spec-scoped rows as CEL rules at `spec`, where `suspend` is visible, and appends its
// object-scoped rows to the root's rules, where `status` is visible. Rules upstream has at `spec`
// or the root are kept: ours are appended. Each generated rule starts with the marker comment, so
// the webhook skips it. Last, the scale subresource, this project's status field and its printer
// columns (scale-subresource.ts). `rules --format crd-restore` undoes exactly this patch.
import { immutableTrainerField } from '../cel-snippets.ts';
import { markRule } from '../marker.ts';
import { RULES, type RuleRow } from '../table.ts';
import { scaleSubresourceOps, undoScaleSubresourceOps } from './scale-subresource.ts';
import { unnamedTrainerProperties } from './trainer-fields.ts';

const VERSION_SCHEMA = '/spec/versions/0/schema/openAPIV3Schema';
const SPEC = `${VERSION_SCHEMA}/properties/spec`;

export interface XValidation {
  rule: string;
  message: string;
  reason: string;
  fieldPath: string;
}

/** The field relative to the rule's scope, as a CRD fieldPath (`.trainer.numNodes`). */
function relative(row: RuleRow, field: string): string {
  const rest = field.slice(row.scope.length);
  return rest.startsWith('.') ? rest : `.${rest}`;
}

/** The table rows scoped at the object, as x-kubernetes-validations entries for the schema's root. */
export function rootValidations(rows: readonly RuleRow[] = RULES): XValidation[] {
  return rows
    .filter((r) => r.scope === '')
    .map((row) => ({
      rule: markRule(row.id, row.rule),
      message: row.message,
      reason: row.reason,
      fieldPath: relative(row, row.field),
    }));
}

/** The table rows scoped at `spec`, as x-kubernetes-validations entries (catch-all expanded per field). */
export function specValidations(crdSchema?: unknown, rows: readonly RuleRow[] = RULES): XValidation[] {
  const out: XValidation[] = [];
  for (const row of rows.filter((r) => r.scope === 'spec')) {
    if (row.perUnnamedTrainerField) {
      for (const name of unnamedTrainerProperties(crdSchema)) {
        out.push({
          rule: markRule(`${row.id}:${name}`, immutableTrainerField(name)),
          message: row.message,
          reason: row.reason,
          fieldPath: `.trainer.${name}`,
        });
      }
      continue;
    }
    out.push({
      rule: markRule(row.id, row.rule),
      message: row.message,
      reason: row.reason,
      fieldPath: relative(row, row.field),
    });
  }
  return out;
}

/** Upstream's blanket rule on spec.trainer, as the entry the patch removes and the restore puts back. */
export const BLANKET_TRAINER_RULE = { message: 'field is immutable', rule: 'self == oldSelf' } as const;
const TRAINER_RULES = `${SPEC}/properties/trainer/x-kubernetes-validations`;

/** The x-kubernetes-validations list a schema node has (undefined when it has none). */
function rulesAt(node: unknown): unknown[] | undefined {
  const list = (node as { 'x-kubernetes-validations'?: unknown } | undefined)?.['x-kubernetes-validations'];
  return Array.isArray(list) ? list : undefined;
}
const specNode = (crdSchema: unknown): unknown =>
  (crdSchema as { properties?: { spec?: unknown } } | undefined)?.properties?.spec;
const trainerNode = (crdSchema: unknown): unknown =>
  (specNode(crdSchema) as { properties?: { trainer?: unknown } } | undefined)?.properties?.trainer;
/**
 * Whether spec.trainer has rules besides the blanket one (then only that one is removed; an empty
 * list would not round-trip, the API server omits it).
 */
const trainerHasOtherRules = (crdSchema: unknown): boolean => (rulesAt(trainerNode(crdSchema))?.length ?? 1) > 1;

/** Adds rules to a node's list: appended one by one when it has one (its rules kept), else the whole list. */
function addRules(path: string, existing: unknown[] | undefined, rules: XValidation[]): unknown[] {
  if (rules.length === 0) return [];
  return existing
    ? rules.map((value) => ({ op: 'add', path: `${path}/-`, value }))
    : [{ op: 'add', path, value: rules }];
}

/**
 * `rows`: the table for the CRD's Trainer line (rulesFor), Trainer v2.3.0's by default; `version`:
 * the CRD's versions[0] (its printer columns and subresources), v2.3.0's by default.
 */
export function crdPatchOps(crdSchema?: unknown, rows: readonly RuleRow[] = RULES, version?: unknown): unknown[] {
  return [
    ...blanketLiftOps(crdSchema),
    ...addRules(`${SPEC}/x-kubernetes-validations`, rulesAt(specNode(crdSchema)), specValidations(crdSchema, rows)),
    // The root always has upstream's metadata.name rules; append after them.
    ...addRules(`${VERSION_SCHEMA}/x-kubernetes-validations`, rulesAt(crdSchema) ?? [], rootValidations(rows)),
    ...scaleSubresourceOps(version),
  ];
}

/** The test and removal of upstream's blanket spec.trainer rule: the patch's first two ops. */
export function blanketLiftOps(crdSchema?: unknown): unknown[] {
  return [
    { op: 'test', path: `${TRAINER_RULES}/0`, value: BLANKET_TRAINER_RULE },
    { op: 'remove', path: trainerHasOtherRules(crdSchema) ? `${TRAINER_RULES}/0` : TRAINER_RULES },
  ];
}

/**
 * Undoes crdPatchOps on the CRD it was generated for: each rule it added is tested (so nothing
 * but ours is removed) and removed, last first, and the blanket rule goes back first at
 * spec.trainer. For uninstalling, or for a Trainer version this project does not support yet.
 */
export function crdRestoreOps(crdSchema?: unknown, rows: readonly RuleRow[] = RULES, version?: unknown): unknown[] {
  const ops: unknown[] = [...undoScaleSubresourceOps(version)];
  const undo = (path: string, existing: unknown[] | undefined, rules: XValidation[]): void => {
    if (rules.length === 0) return;
    if (!existing) {
      ops.push({ op: 'test', path, value: rules }, { op: 'remove', path });
      return;
    }
    for (let i = rules.length - 1; i >= 0; i--) {
      const at = `${path}/${existing.length + i}`;
      ops.push({ op: 'test', path: at, value: rules[i] }, { op: 'remove', path: at });
    }
  };
  undo(`${VERSION_SCHEMA}/x-kubernetes-validations`, rulesAt(crdSchema) ?? [], rootValidations(rows));
  undo(`${SPEC}/x-kubernetes-validations`, rulesAt(specNode(crdSchema)), specValidations(crdSchema, rows));
  ops.push(blanketRestoreOp(crdSchema));
  return ops;
}

/** Upstream's blanket spec.trainer rule put back: the restore's last op. */
export function blanketRestoreOp(crdSchema?: unknown): unknown {
  return trainerHasOtherRules(crdSchema)
    ? { op: 'add', path: `${TRAINER_RULES}/0`, value: BLANKET_TRAINER_RULE }
    : { op: 'add', path: TRAINER_RULES, value: [BLANKET_TRAINER_RULE] };
}
