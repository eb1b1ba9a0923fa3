// `rules --format crd-patch`: a kustomize JSON6902 patch for the upstream TrainJob CRD. It removes
// the blanket `self == oldSelf` on spec.trainer (a `test` op first, so the patch fails loudly if
// upstream changed that rule) and adds the table's spec-scoped rows as CEL rules at `spec`, where
// `suspend` is visible. Each generated rule starts with the marker comment, so the webhook skips it.
import { immutableTrainerField } from '../cel-snippets.ts';
import { markRule } from '../marker.ts';
import { RULES, type RuleRow } from '../table.ts';
import { unnamedTrainerProperties } from './trainer-fields.ts';

const VERSION_SCHEMA = '/spec/versions/0/schema/openAPIV3Schema';
const SPEC = `${VERSION_SCHEMA}/properties/spec`;

export interface XValidation {
  rule: string;
  message: string;
  reason: string;
  fieldPath: string;
}

function relative(row: RuleRow, field: string): string {
  return field.slice(row.scope.length);
}

/** The table rows scoped at `spec`, as x-kubernetes-validations entries (catch-all expanded per field). */
export function specValidations(crdSchema?: unknown): XValidation[] {
  const out: XValidation[] = [];
  for (const row of RULES.filter((r) => r.scope === 'spec')) {
    if (row.perUnnamedTrainerField) {
      for (const name of unnamedTrainerProperties(crdSchema)) {
        out.push({ rule: markRule(`${row.id}:${name}`, immutableTrainerField(name)), message: row.message, reason: row.reason, fieldPath: `.trainer.${name}` });
      }
      continue;
    }
    out.push({ rule: markRule(row.id, row.rule), message: row.message, reason: row.reason, fieldPath: relative(row, row.field) });
  }
  return out;
}

export function crdPatchOps(crdSchema?: unknown): unknown[] {
  return [
    { op: 'test', path: `${SPEC}/properties/trainer/x-kubernetes-validations/0/rule`, value: 'self == oldSelf' },
    { op: 'remove', path: `${SPEC}/properties/trainer/x-kubernetes-validations` },
    { op: 'add', path: `${SPEC}/x-kubernetes-validations`, value: specValidations(crdSchema) },
  ];
}
