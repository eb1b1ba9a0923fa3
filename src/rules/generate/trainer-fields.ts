// The spec.trainer fields a generated enforcer must cover: the ones the table names, plus every
// other property the CRD schema declares there (those are immutable by the catch-all row).
import { NAMED_TRAINER_FIELDS } from '../table.ts';

export function unnamedTrainerProperties(crdSchema: unknown): string[] {
  const props = (crdSchema as { properties?: { spec?: { properties?: { trainer?: { properties?: Record<string, unknown> } } } } } | undefined)
    ?.properties?.spec?.properties?.trainer?.properties;
  const named = new Set<string>(NAMED_TRAINER_FIELDS);
  return Object.keys(props ?? {}).filter((k) => !named.has(k)).sort();
}
