// CEL building blocks for the rule table, written so the API server's static cost estimator can
// bound them in a CRD: has() guards and plain selects, no optionals on lists, maps or strings.

/** Stands for the field name in the row that covers every spec.trainer field the table does not name. */
export const UNNAMED_TRAINER_FIELD = '<unnamed>';

/** `(has(v.a) && has(v.a.b))`: every step of a dotted path below the variable `v` is present. */
const presentPath = (v: string, path: string): string => {
  const steps = path.split('.');
  return `(${steps.map((_, i) => `has(${v}.${steps.slice(0, i + 1).join('.')})`).join(' && ')})`;
};

const present = (root: string, field: string): string =>
  field === UNNAMED_TRAINER_FIELD
    ? `(has(${root}.trainer) && key in ${root}.trainer)`
    : presentPath(root, `trainer.${field}`);

const valueOf = (root: string, field: string): string =>
  field === UNNAMED_TRAINER_FIELD ? `${root}.trainer[key]` : `${root}.trainer.${field}`;

/**
 * True when spec.trainer.<field> is the same before and after: present on both sides with equal
 * values, or absent on both. Adding and removing are changes (a transition rule on the field
 * itself would be skipped when the old value is absent). `self`/`oldSelf` are spec.
 */
export function immutableTrainerField(field: string): string {
  return (
    `(${present('self', field)} == ${present('oldSelf', field)} && ` +
    `(!${present('self', field)} || ${valueOf('self', field)} == ${valueOf('oldSelf', field)}))`
  );
}

/** The same for a dotted path below self/oldSelf, whatever the scope (e.g. `spec.trainer.numNodes` at the root). */
export function unchangedPath(path: string): string {
  return `(${presentPath('self', path)} == ${presentPath('oldSelf', path)} && (!${presentPath('self', path)} || self.${path} == oldSelf.${path}))`;
}

/** True when spec.<field> is the same before and after (added and removed count as changes). */
export function unchangedAtSpec(field: string): string {
  return `(has(self.${field}) == has(oldSelf.${field}) && (!has(self.${field}) || self.${field} == oldSelf.${field}))`;
}

/** Suspended before or after the update; an absent suspend counts as not suspended. */
export function eitherSuspended(): string {
  return '((has(self.suspend) && self.suspend) || (has(oldSelf.suspend) && oldSelf.suspend))';
}

/** spec.trainer.numNodes is absent (the runtime's default) or 0 or more; `self` is spec. */
export function numNodesNotNegative(): string {
  return `(!${presentPath('self', 'trainer.numNodes')} || self.trainer.numNodes >= 0)`;
}

/**
 * The TrainJob at root variable `v` has finished for good: its Trainer never reconciles it again
 * (trainjob_controller.go: IsTrainJobFinished skips reconcileObjects). On v2.2.1 and v2.3.0
 * removeFailedCondition keeps only a DeadlineExceeded failure, any other Failed condition is
 * cleared first and the job reconciled again; on main (kubeflow/trainer#3891) and on an unknown
 * line every Failed is terminal (`failedIsTerminal`, src/api/trainer-line.ts). Conditions are a
 * list-type map keyed by type with maxItems 8, so `exists` stays cheap; has() guards keep it
 * total on plain JSON (VAP).
 */
export function finishedForGood(v: string, failedIsTerminal = false): string {
  const failed = (c: string) =>
    failedIsTerminal
      ? `${c}.type == 'Failed'`
      : `(${c}.type == 'Failed' && has(${c}.reason) && ${c}.reason == 'DeadlineExceeded')`;
  const cond = (c: string) =>
    `has(${c}.type) && has(${c}.status) && ${c}.status == 'True' && ` + `(${c}.type == 'Complete' || ${failed(c)})`;
  return `(has(${v}.status) && has(${v}.status.conditions) && ${v}.status.conditions.exists(c, ${cond('c')}))`;
}
