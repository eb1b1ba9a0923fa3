// Where a CRD's CEL rules live and what they apply to. The lead's CEL code evaluates them; this
// module only finds every x-kubernetes-validations entry with its schema location, and
// enumerates the concrete values a location matches in an object, walking like the API
// server's CEL validator (schema/cel/validation.go): fields by name (`a.b`), additionalProperties
// values by key (`a[key]`), list items by index (`a[0]`); allOf branches apply at their node.
import type { SchemaNode, ValidationRuleProps } from './schema.ts';
import { childPath, indexPath, keyPath, type PathSegment } from './paths.ts';
import { ownKeys } from './values.ts';
import { isObject } from '../json/object.ts';

/** One step of a schema location: a named property, any list item, or any map value. */
export type LocationStep = { field: string } | { items: true } | { values: true };

export interface CelRule {
  /**
   * Schema location: `spec.trainer`, `spec.trainer.env[*]`,
   * `spec.trainer.resourcesPerNode.limits[*]`; '' is the root.
   */
  location: string;
  steps: LocationStep[];
  /** Position in the node's x-kubernetes-validations list. */
  index: number;
  /** Set when the rule sits in an allOf branch of the node (`allOf[0]`, nested `allOf[0].allOf[1]`). */
  branch?: string;
  rule: string;
  message?: string;
  messageExpression?: string;
  reason?: string;
  fieldPath?: string;
  optionalOldSelf: boolean;
  /** The node the rule is written on (types `self`). For allOf rules, the branch node. */
  schema: SchemaNode;
  /** The structural node at the location (the value's own schema, branch or not). */
  nodeSchema: SchemaNode;
}

function locationString(steps: readonly LocationStep[]): string {
  let out = '';
  for (const step of steps) {
    if ('field' in step) out = childPath(out, step.field);
    else out += '[*]';
  }
  return out;
}

function addRules(
  out: CelRule[],
  rules: readonly ValidationRuleProps[],
  steps: LocationStep[],
  schema: SchemaNode,
  nodeSchema: SchemaNode,
  branch?: string,
): void {
  rules.forEach((r, index) => {
    out.push({
      location: locationString(steps),
      steps,
      index,
      ...(branch === undefined ? {} : { branch }),
      rule: r.rule,
      ...(r.message === undefined ? {} : { message: r.message }),
      ...(r.messageExpression === undefined ? {} : { messageExpression: r.messageExpression }),
      ...(r.reason === undefined ? {} : { reason: r.reason }),
      ...(r.fieldPath === undefined ? {} : { fieldPath: r.fieldPath }),
      optionalOldSelf: r.optionalOldSelf === true,
      schema,
      nodeSchema,
    });
  });
}

function walk(out: CelRule[], root: SchemaNode, s: SchemaNode, steps: LocationStep[], branch?: string): void {
  addRules(out, s.validations, steps, s, structuralAt(root, steps) ?? s, branch);
  s.allOf.forEach((b, i) => walk(out, root, b, steps, branch === undefined ? `allOf[${i}]` : `${branch}.allOf[${i}]`));
  // Properties nested in an allOf branch carry rules too (the API server's nestedToStructural).
  for (const [name, prop] of s.properties ?? []) walk(out, root, prop, [...steps, { field: name }], branch);
  if (s.additionalProperties) walk(out, root, s.additionalProperties, [...steps, { values: true }], branch);
  if (s.items) walk(out, root, s.items, [...steps, { items: true }], branch);
}

/** The structural node at a location, or undefined when only an allOf branch describes it. */
function structuralAt(root: SchemaNode, steps: readonly LocationStep[]): SchemaNode | undefined {
  let node: SchemaNode | undefined = root;
  for (const step of steps) {
    if (!node) return undefined;
    node =
      'field' in step ? node.properties?.get(step.field) : 'items' in step ? node.items : node.additionalProperties;
  }
  return node;
}

/** Every x-kubernetes-validations rule of the schema, outermost first, with its location. */
export function collectCelRules(schema: SchemaNode): CelRule[] {
  const out: CelRule[] = [];
  walk(out, schema, schema, []);
  return out;
}

/** Parses a location string against the schema: `[*]` means items on a list, values on a map. */
export function parseLocation(schema: SchemaNode, location: string): LocationStep[] | undefined {
  const steps: LocationStep[] = [];
  let node: SchemaNode | undefined = schema;
  const tokens =
    location === ''
      ? []
      : location
          .replaceAll('[*]', '.[*]')
          .split('.')
          .filter((t) => t !== '');
  for (const token of tokens) {
    if (!node) return undefined;
    if (token === '[*]') {
      if (node.items) {
        steps.push({ items: true });
        node = node.items;
      } else if (node.additionalProperties) {
        steps.push({ values: true });
        node = node.additionalProperties;
      } else return undefined;
    } else {
      steps.push({ field: token });
      node = node.properties?.get(token);
    }
  }
  return node ? steps : undefined;
}

/** Locations parsed once per compiled schema: every rule's location is looked up on every request. */
const parsedLocations = new WeakMap<SchemaNode, Map<string, readonly LocationStep[] | undefined>>();

function parsedLocation(schema: SchemaNode, location: string): readonly LocationStep[] | undefined {
  let bySchema = parsedLocations.get(schema);
  if (bySchema === undefined) parsedLocations.set(schema, (bySchema = new Map()));
  if (!bySchema.has(location)) bySchema.set(location, parseLocation(schema, location));
  return bySchema.get(location);
}

export interface LocatedValue {
  /**
   * Kubernetes field path, e.g. `spec.trainer.env[0]`, `spec.trainer.resourcesPerNode.limits[cpu]`
   * ('' is the root).
   */
  path: string;
  segments: PathSegment[];
  value: unknown;
  schema: SchemaNode;
}

/**
 * The concrete non-null values at a location (steps or a location string), in data order.
 * Null and absent values are skipped: the API server does not run rules on them.
 */
// eslint-disable-next-line complexity -- one branch per location step (field, items, values), as validation.go walks
export function valuesAt(schema: SchemaNode, obj: unknown, location: string | readonly LocationStep[]): LocatedValue[] {
  const steps = typeof location === 'string' ? parsedLocation(schema, location) : location;
  if (steps === undefined) return [];
  let current: LocatedValue[] =
    obj === null || obj === undefined ? [] : [{ path: '', segments: [], value: obj, schema }];
  for (const step of steps) {
    const next: LocatedValue[] = [];
    for (const at of current) {
      const v = at.value;
      if ('field' in step) {
        const sub = at.schema.properties?.get(step.field);
        if (sub && isObject(v) && Object.hasOwn(v, step.field)) {
          next.push({
            path: childPath(at.path, step.field),
            segments: [...at.segments, step.field],
            value: v[step.field],
            schema: sub,
          });
        }
      } else if ('items' in step) {
        const sub = at.schema.items;
        if (sub && Array.isArray(v))
          v.forEach((item, i) =>
            next.push({ path: indexPath(at.path, i), segments: [...at.segments, i], value: item, schema: sub }),
          );
      } else {
        const sub = at.schema.additionalProperties;
        if (sub && isObject(v)) {
          // eslint-disable-next-line max-depth -- additionalProperties keys, inside validation.go's per-step walk
          for (const k of ownKeys(v)) {
            next.push({ path: keyPath(at.path, k), segments: [...at.segments, k], value: v[k], schema: sub });
          }
        }
      }
    }
    current = next.filter((x) => x.value !== null && x.value !== undefined);
  }
  return current;
}
