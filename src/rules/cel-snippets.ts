// CEL building blocks for the rule table, written so the API server's static cost estimator can
// bound them in a CRD: has() guards and plain selects, no optionals on lists, maps or strings.

/** Stands for the field name in the row that covers every spec.trainer field the table does not name. */
export const UNNAMED_TRAINER_FIELD = '<unnamed>';

const present = (root: string, field: string): string =>
  field === UNNAMED_TRAINER_FIELD ? `(has(${root}.trainer) && key in ${root}.trainer)` : `(has(${root}.trainer) && has(${root}.trainer.${field}))`;

const valueOf = (root: string, field: string): string =>
  field === UNNAMED_TRAINER_FIELD ? `${root}.trainer[key]` : `${root}.trainer.${field}`;

/**
 * True when spec.trainer.<field> is the same before and after: present on both sides with equal
 * values, or absent on both. Adding and removing are changes (a transition rule on the field
 * itself would be skipped when the old value is absent).
 */
export function immutableTrainerField(field: string): string {
  return (
    `(${present('self', field)} == ${present('oldSelf', field)} && ` +
    `(!${present('self', field)} || ${valueOf('self', field)} == ${valueOf('oldSelf', field)}))`
  );
}

/** True when spec.<field> is the same before and after (added and removed count as changes). */
export function unchangedAtSpec(field: string): string {
  return `(has(self.${field}) == has(oldSelf.${field}) && (!has(self.${field}) || self.${field} == oldSelf.${field}))`;
}

/** Suspended before or after the update; an absent suspend counts as not suspended. */
export function eitherSuspended(): string {
  return '((has(self.suspend) && self.suspend) || (has(oldSelf.suspend) && oldSelf.suspend))';
}
