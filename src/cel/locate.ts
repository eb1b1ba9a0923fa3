// The values a rule applies to, found the way the API server's CEL validator finds them (src/crd:
// valuesAt, and correlate for UPDATE): every concrete path matching a schema location such as
// `spec.runtimePatches[*].manager`, with the old value it correlates with (transition rules'
// oldSelf: through object fields, map keys and list-type=map items, never set or atomic list
// items) and whether an error there is ratcheted.
import {
  ratchetStateAt,
  shouldRatchet,
  valuesAt,
  type Correlation,
  type RatchetState,
  type SchemaNode,
} from '../crd/index.ts';
import type { CelSchema } from './values.ts';

export interface Located {
  /** Kubernetes field path, e.g. `spec.runtimePatches[0].manager` ('' for the root). */
  path: string;
  value: unknown;
  /** The correlated old value; `undefined` when there is none (CREATE, absent, not correlatable). */
  oldValue: unknown;
  /** The raw schema at the location (types the CEL values). */
  schema: CelSchema;
  /** UPDATE only: the value (or its nearest correlatable ancestor) is unchanged, so errors here become warnings. */
  readonly ratchet: boolean;
}

/**
 * A value found on UPDATE. Whether it ratchets is read only when a rule without oldSelf fails
 * (every table row and transition rule uses oldSelf), so it is computed then: it compares the
 * value with its old one, which for most locations was the costliest part of finding them.
 */
class LocatedUpdate implements Located {
  readonly path: string;
  readonly value: unknown;
  readonly oldValue: unknown;
  readonly schema: CelSchema;
  readonly #state: RatchetState;
  #ratchet: boolean | undefined;

  constructor(path: string, value: unknown, schema: CelSchema, state: RatchetState) {
    this.path = path;
    this.value = value;
    this.schema = schema;
    this.#state = state;
    this.oldValue = state.current === null ? undefined : state.current.oldValue;
  }

  get ratchet(): boolean {
    return (this.#ratchet ??= shouldRatchet(this.#state));
  }
}

/**
 * Every value at `location` in `obj`; with a correlation (UPDATE), each with its old value.
 * `schema`: the one typing the values, when not the location's own (a rule in an allOf/anyOf branch).
 */
export function locate(
  root: SchemaNode,
  location: string,
  obj: unknown,
  correlation?: Correlation,
  schemaOverride?: CelSchema,
): Located[] {
  return valuesAt(root, obj, location).map((v): Located => {
    const schema = schemaOverride ?? (v.schema.raw as CelSchema);
    if (!correlation) return { path: v.path, value: v.value, oldValue: undefined, schema, ratchet: false };
    return new LocatedUpdate(v.path, v.value, schema, ratchetStateAt(correlation, v.segments));
  });
}
