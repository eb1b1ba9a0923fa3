// `rules --format vap`: a ValidatingAdmissionPolicy and its binding enforcing the table with no
// webhook. A VAP sees plain JSON without the schema, so lists keyed by name (env, claims,
// runtimePatches) compare by key here, not in order; and each message names its field, since a
// VAP denial reports only the first failed message and no field path.
//
// Plain JSON also lets one expression iterate spec.trainer's keys, which a CRD rule on a typed
// object cannot: the API server compiles a policy's expressions with `object`/`oldObject` as dyn
// (k8s.io/apiserver pkg/admission/plugin/cel/compile.go) and binds them to the unstructured maps.
// So a field a later Trainer adds, unknown to the CRD this policy was generated for, is still
// immutable here (compared with plain ==: its schema, and so any keyed list in it, is unknown).
import { TRAINJOB } from '../../api/names.ts';
import type { CelSchema } from '../../cel/values.ts';
import { immutableTrainerField } from '../cel-snippets.ts';
import { NAMED_TRAINER_FIELDS, RULES, type RuleRow } from '../table.ts';
import { unnamedTrainerProperties } from './trainer-fields.ts';

export const VAP_NAME = 'trainjob-webhook.trainer.kubeflow.org';

const containsKeyedList = (s: CelSchema | undefined): boolean =>
  !!s &&
  (s['x-kubernetes-list-type'] === 'map' ||
    s['x-kubernetes-list-type'] === 'set' ||
    containsKeyedList(s.items) ||
    Object.values(s.properties ?? {}).some(containsKeyedList) ||
    (typeof s.additionalProperties === 'object' && containsKeyedList(s.additionalProperties)));

/** The raw schema at a dotted path of property names (the table's scopes and fields). */
function rawSchemaAt(s: CelSchema | undefined, path: string): CelSchema | undefined {
  return path
    .split('.')
    .filter(Boolean)
    .reduce<CelSchema | undefined>((node, name) => node?.properties?.[name], s);
}

let depth = 0;
const fresh = (): [string, string] => [`x${depth}`, `y${depth++}`];

/** CEL comparing two JSON values as the API server would compare them under `schema`. */
export function vapEqual(a: string, b: string, s: CelSchema | undefined): string {
  if (!containsKeyedList(s) || !s) return `${a} == ${b}`;
  const listType = s['x-kubernetes-list-type'];
  if (listType === 'map' || listType === 'set') {
    const [x, y] = fresh();
    const keys = s['x-kubernetes-list-map-keys'] ?? [];
    const sameKey =
      listType === 'map' ? keys.map((k) => `${x}.${k} == ${y}.${k}`).join(' && ') : `${vapEqual(x, y, s.items)}`;
    const sameItem = listType === 'map' ? `${sameKey} && ${vapEqual(x, y, s.items)}` : sameKey;
    return `(size(${a}) == size(${b}) && ${a}.all(${x}, ${b}.exists(${y}, ${sameItem})))`;
  }
  if (s.type === 'array') return `${a} == ${b}`;
  const props = Object.entries(s.properties ?? {}).map(
    ([p, ps]) => `(has(${a}.${p}) == has(${b}.${p}) && (!has(${a}.${p}) || ${vapEqual(`${a}.${p}`, `${b}.${p}`, ps)}))`,
  );
  return `(${props.join(' && ')})`;
}

/** Rewrites a table rule from CRD scope (self/oldSelf at `scope`) to VAP variables, with keyed equality. */
export function toVapRule(rule: string, scope: string, schema: CelSchema | undefined): string {
  const root = (v: string): string => `${v}${scope ? `.${scope}` : ''}`;
  const scopeSchema = rawSchemaAt(schema, scope);
  const keyed = rule.replace(/\bself\.([\w.]+) == oldSelf\.\1\b/g, (_m, path: string) =>
    vapEqual(`self.${path}`, `oldSelf.${path}`, rawSchemaAt(scopeSchema, path)),
  );
  return keyed.replace(/\boldSelf\b/g, root('oldObject')).replace(/\bself\b/g, root('object'));
}

interface VapValidation {
  expression: string;
  message: string;
  /** Replaces `message` when it evaluates to a string (the API server falls back to `message` otherwise). */
  messageExpression?: string;
  reason: string;
}

interface VapVariable {
  name: string;
  expression: string;
}

/**
 * The policy variable listing the spec.trainer keys this policy has no row for that an update adds,
 * removes or changes.
 */
export const CHANGED_UNKNOWN_TRAINER_FIELDS = 'changedUnknownTrainerFields';

const celString = (s: string): string => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

/**
 * CEL for CHANGED_UNKNOWN_TRAINER_FIELDS: every key of new or old spec.trainer not in `known` that
 * is not present on both sides with equal values. Such a key's schema is unknown, so `==`.
 */
export function changedUnknownTrainerFields(known: readonly string[]): string {
  const isKnown = `k in [${known.map(celString).join(', ')}]`;
  const [now, before] = ['object.spec.trainer', 'oldObject.spec.trainer'];
  const changedInNew = `${now}.filter(k, !(${isKnown}) && !(has(${before}) && k in ${before} && ${now}[k] == ${before}[k]))`;
  const removedFromOld = `${before}.filter(k, !(${isKnown}) && !(has(${now}) && k in ${now}))`;
  return `(has(${now}) ? ${changedInNew} : []) + (has(${before}) ? ${removedFromOld} : [])`;
}

/** The iterating validation: the first (smallest) changed key named, as the other messages name their field. */
function unknownTrainerFieldsValidation(row: RuleRow, reason: string): VapValidation {
  const changed = `variables.${CHANGED_UNKNOWN_TRAINER_FIELDS}`;
  return {
    expression: `size(${changed}) == 0`,
    message: `${row.field}: ${row.message}`,
    // No list sort in every supported API server's CEL: the smallest key, with `<=` alone.
    messageExpression: `'spec.trainer.' + ${changed}.filter(a, ${changed}.all(b, a <= b))[0] + ${celString(`: ${row.message}`)}`,
    reason,
  };
}

/** Upstream transition rules run only where the old value is present, and only when the new one is. */
const mirrorsUpstreamTransitionRule = (row: RuleRow): boolean =>
  row.allowed === 'when absent before (upstream transition rule)';

function transitionGuard(row: RuleRow): string {
  const path = row.scope;
  return `!has(object.${path}) || !has(oldObject.${path}) || object.${path} == oldObject.${path}`;
}

/** The spec.trainer fields with a validation of their own: the table's, and the other ones `crdSchema` declares. */
const trainerFieldsWithRows = (crdSchema: unknown): string[] =>
  [...NAMED_TRAINER_FIELDS, ...unnamedTrainerProperties(crdSchema)].sort();

export function vapVariables(crdSchema?: unknown): VapVariable[] {
  return [
    { name: CHANGED_UNKNOWN_TRAINER_FIELDS, expression: changedUnknownTrainerFields(trainerFieldsWithRows(crdSchema)) },
  ];
}

export function vapValidations(
  schema: CelSchema,
  crdSchema?: unknown,
  rows: readonly RuleRow[] = RULES,
): VapValidation[] {
  depth = 0;
  const reason = (r: RuleRow): string => (r.reason === 'FieldValueForbidden' ? 'Forbidden' : 'Invalid');
  const out: VapValidation[] = [];
  for (const row of rows) {
    if (row.scope.includes('[*]')) continue; // runtimePatches[*].manager: the list key itself, so a keyed list never sees it change.
    if (row.perUnnamedTrainerField) {
      for (const name of unnamedTrainerProperties(crdSchema)) {
        out.push({
          expression: toVapRule(immutableTrainerField(name), 'spec', schema),
          message: `spec.trainer.${name}: ${row.message}`,
          reason: reason(row),
        });
      }
      out.push(unknownTrainerFieldsValidation(row, reason(row)));
      continue;
    }
    const expression = mirrorsUpstreamTransitionRule(row)
      ? transitionGuard(row)
      : toVapRule(row.rule, row.scope, schema);
    out.push({ expression, message: `${row.field}: ${row.message}`, reason: reason(row) });
  }
  return out;
}

/** `rows`: the table for the CRD's Trainer line (rulesFor), Trainer v2.3.0's by default. */
export function vapManifests(schema: CelSchema, crdSchema?: unknown, rows: readonly RuleRow[] = RULES): unknown[] {
  const policy = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name: VAP_NAME },
    spec: {
      failurePolicy: 'Fail',
      matchConstraints: {
        resourceRules: [
          {
            apiGroups: [TRAINJOB.group],
            apiVersions: [TRAINJOB.version],
            operations: ['UPDATE'],
            resources: [TRAINJOB.plural],
          },
        ],
      },
      variables: vapVariables(crdSchema),
      validations: vapValidations(schema, crdSchema, rows),
    },
  };
  const binding = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: { name: VAP_NAME },
    spec: { policyName: VAP_NAME, validationActions: ['Deny'] },
  };
  return [policy, binding];
}
