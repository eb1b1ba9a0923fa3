// `rules --format crd-patch`: a kustomize JSON6902 patch for the upstream TrainJob CRD. It removes
// the blanket `self == oldSelf` on spec.trainer (a `test` op first, so the patch fails loudly if
// upstream changed that rule), adds the table's spec-scoped rows as CEL rules at `spec`, where
// `suspend` is visible, and appends its object-scoped rows to the root's rules, where `status` is
// visible (upstream has rules there already: the metadata.name checks). Each generated rule starts
// with the marker comment, so the webhook skips it.
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

/** The field relative to the rule's scope, as a CRD fieldPath (`.trainer.numNodes`). */
function relative(row: RuleRow, field: string): string {
  const rest = field.slice(row.scope.length);
  return rest.startsWith('.') ? rest : `.${rest}`;
}

/** The table rows scoped at the object, as x-kubernetes-validations entries for the schema's root. */
export function rootValidations(): XValidation[] {
  return RULES.filter((r) => r.scope === '').map((row) => ({ rule: markRule(row.id, row.rule), message: row.message, reason: row.reason, fieldPath: relative(row, row.field) }));
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
    ...rootValidations().map((value) => ({ op: 'add', path: `${VERSION_SCHEMA}/x-kubernetes-validations/-`, value })),
  ];
}
