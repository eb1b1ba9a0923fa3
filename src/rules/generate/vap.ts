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
//
// A second policy covers the scale subresource (`trainjobs/scale`), which the first does not
// match: the API server sends a policy an autoscaling/v1 Scale there, with spec.replicas and no
// spec.suspend, and the VAP mode's CRD lift carries no numNodes rule that would judge the TrainJob
// the scale produces. A policy cannot read the TrainJob, so it refuses every scale that may change
// numNodes and says what to do instead (kubectl patch, suspending in the same update). The lift
// (vapLiftOps) adds the scale subresource, the status field and the columns as the CRD patch does.
import { SCALE_SUBRESOURCE, TRAINJOB } from '../../api/names.ts';
import type { CelSchema } from '../../cel/values.ts';
import { immutableTrainerField } from '../cel-snippets.ts';
import { NAMED_TRAINER_FIELDS, RULES, type RuleRow } from '../table.ts';
import { unnamedTrainerProperties } from './trainer-fields.ts';
import { blanketLiftOps, blanketRestoreOp } from './crd-patch.ts';
import { scaleSubresourceOps, undoScaleSubresourceOps } from './scale-subresource.ts';

export const VAP_NAME = 'trainjob-webhook.trainer.kubeflow.org';
/** The policy on the scale subresource. */
export const VAP_SCALE_NAME = 'trainjob-webhook-scale.trainer.kubeflow.org';

/** Scale.spec.replicas as sent (omitted when 0). */
const replicas = (v: string): string => `(has(${v}.spec) && has(${v}.spec.replicas) ? ${v}.spec.replicas : 0)`;

/**
 * Why a scale is refused in VAP mode, and what to do. A scale that keeps a non-zero count changes
 * nothing and passes; a scale to 0 is refused too, since the Scale of a TrainJob without numNodes
 * reads 0 and the write would set numNodes to 0 unjudged.
 */
export const VAP_SCALE_MESSAGE =
  `${SCALE_SUBRESOURCE.specReplicasPath.slice(1)}: in VAP mode the scale subresource (kubectl scale, autoscalers) cannot change numNodes: ` +
  'a ValidatingAdmissionPolicy sees the Scale alone, not the TrainJob it would change (spec.suspend, its JobSet), so it cannot judge the change. ' +
  `Suspend and change numNodes in one update instead: kubectl patch trainjob NAME --type=merge -p '{"spec":{"suspend":true,"trainer":{"numNodes":N}}}'`;

/** A policy failing closed on UPDATEs of TrainJobs' `resource` with these checks, and its Deny binding. */
function policyAndBinding(
  name: string,
  resource: string,
  checks: { variables?: unknown[]; validations: unknown[] },
): unknown[] {
  const policy = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name },
    spec: {
      failurePolicy: 'Fail',
      matchConstraints: {
        resourceRules: [
          {
            apiGroups: [TRAINJOB.group],
            apiVersions: [TRAINJOB.version],
            operations: ['UPDATE'],
            resources: [resource],
          },
        ],
      },
      ...checks,
    },
  };
  const binding = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: { name },
    spec: { policyName: name, validationActions: ['Deny'] },
  };
  return [policy, binding];
}

/** The policy and binding for `trainjobs/scale` (see the header). */
export function vapScaleManifests(): unknown[] {
  return policyAndBinding(VAP_SCALE_NAME, `${TRAINJOB.plural}/scale`, {
    validations: [
      {
        expression: `${replicas('object')} == ${replicas('oldObject')} && ${replicas('object')} != 0`,
        message: VAP_SCALE_MESSAGE,
        reason: 'Forbidden',
      },
    ],
  });
}

/**
 * The VAP mode's CRD patch: upstream's blanket rule lifted (the CRD patch's first two ops), none of
 * the table's rules (the policy carries them), then the scale subresource, the status field and
 * the columns (the CRD patch's last ops). `version`: versions[0] as upstream ships it.
 */
export function vapLiftOps(crdSchema?: unknown, version?: unknown): unknown[] {
  return [...blanketLiftOps(crdSchema), ...scaleSubresourceOps(version)];
}

/** Undoes vapLiftOps: the scale parts out, upstream's blanket rule back. */
export function vapLiftRestoreOps(crdSchema?: unknown, version?: unknown): unknown[] {
  return [...undoScaleSubresourceOps(version), blanketRestoreOp(crdSchema)];
}

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
  return [
    ...policyAndBinding(VAP_NAME, TRAINJOB.plural, {
      variables: vapVariables(crdSchema),
      validations: vapValidations(schema, crdSchema, rows),
    }),
    ...vapScaleManifests(),
  ];
}
