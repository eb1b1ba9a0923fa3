// The spec.trainer fields a generated enforcer must cover: the ones the table names, plus every
// other property the CRD schema declares there (those are immutable by the catch-all row). And
// the drift check: a CRD rule cannot iterate the fields of a typed object, so the CRD patch names
// each field it keeps immutable, and a field a later Trainer adds is left out until the patch is
// generated again for that CRD. The webhook iterates the object's keys: it still refuses.
import { GENERATED_RULE_MARKER } from '../marker.ts';
import { NAMED_TRAINER_FIELDS, RULES } from '../table.ts';

export function unnamedTrainerProperties(crdSchema: unknown): string[] {
  const props = (
    crdSchema as
      { properties?: { spec?: { properties?: { trainer?: { properties?: Record<string, unknown> } } } } } | undefined
  )?.properties?.spec?.properties?.trainer?.properties;
  const named = new Set<string>(NAMED_TRAINER_FIELDS);
  return Object.keys(props ?? {})
    .filter((k) => !named.has(k))
    .sort();
}

/** A rule of the CRD as the drift check reads it: where it sits and its CEL text. */
export interface LocatedRule {
  /** `spec.trainer`, `spec`; '' is the root. */
  location: string;
  rule: string;
}

/** The id on a generated rule's marker line (`// trainjob-webhook: <id>`), if it is one. */
function generatedRuleId(rule: string): string | undefined {
  const first = rule.trimStart().split('\n', 1)[0] ?? '';
  return first.startsWith(GENERATED_RULE_MARKER) ? first.slice(GENERATED_RULE_MARKER.length).trim() : undefined;
}

/** The ids of the generated rules that keep spec.trainer.<field> from changing freely. */
function coveringRuleIds(field: string): string[] {
  const named = RULES.filter((r) => r.field === `spec.trainer.${field}`).map((r) => r.id);
  return named.length > 0 ? named : RULES.filter((r) => r.perUnnamedTrainerField).map((r) => `${r.id}:${field}`);
}

const isBlanketTrainerRule = (r: LocatedRule): boolean =>
  r.location === 'spec.trainer' && r.rule.replace(/\s+/g, ' ').trim() === 'self == oldSelf';

/**
 * The spec.trainer fields that no rule among `rules` covers at the API server, sorted. Upstream's
 * blanket rule (`self == oldSelf` on spec.trainer) covers every field; otherwise a field is
 * covered by a generated rule carrying the id of its table row (the catch-all row's
 * `<id>:<field>` for a field the table does not name).
 */
export function uncoveredTrainerFields(trainerFields: readonly string[], rules: readonly LocatedRule[]): string[] {
  if (rules.some(isBlanketTrainerRule)) return [];
  const present = new Set(rules.map((r) => generatedRuleId(r.rule)));
  return trainerFields.filter((field) => !coveringRuleIds(field).some((id) => present.has(id))).sort();
}

/** Whether the rules still have upstream's blanket spec.trainer rule (the CRD is not patched). */
export const hasBlanketTrainerRule = (rules: readonly LocatedRule[]): boolean => rules.some(isBlanketTrainerRule);
