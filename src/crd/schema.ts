// A CRD's openAPIV3Schema compiled once into a tree every other module walks: structural parts
// (properties, items, additionalProperties, defaults, x-kubernetes-* extensions) for pruning,
// defaulting, list types and correlation, and value validations for kube-openapi's validator.
// Property maps are real Maps, so data keys like `constructor` never hit Object.prototype.
import { RE2JS } from 're2js';
import { CrdError } from './error.ts';
import { kindOf, deepClone } from './values.ts';
import { isObject, type JsonObject } from '../json/object.ts';

/** One x-kubernetes-validations entry as written in the CRD. */
export interface ValidationRuleProps {
  rule: string;
  message?: string;
  messageExpression?: string;
  reason?: string;
  fieldPath?: string;
  optionalOldSelf?: boolean;
}

/** The raw JSONSchemaProps keywords this project reads (the CRD holds more; all are kept). */
export interface JSONSchemaProps {
  type?: string;
  format?: string;
  nullable?: boolean;
  default?: unknown;
  enum?: unknown[];
  properties?: Record<string, JSONSchemaProps>;
  items?: JSONSchemaProps;
  additionalProperties?: JSONSchemaProps | boolean;
  required?: string[];
  'x-kubernetes-list-type'?: string;
  'x-kubernetes-list-map-keys'?: string[];
  'x-kubernetes-map-type'?: string;
  'x-kubernetes-int-or-string'?: boolean;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-embedded-resource'?: boolean;
  'x-kubernetes-validations'?: ValidationRuleProps[];
  [keyword: string]: unknown;
}

/** A compiled `pattern`: RE2 syntax and linear time, like Go's regexp the API server uses. */
export interface CompiledPattern {
  source: string;
  test(s: string): boolean;
}

export interface SchemaNode {
  /** The schema object as the CRD wrote it (for typing CEL values). */
  raw: JSONSchemaProps;
  /** Where in the CRD this node sits, for error messages about the CRD itself. */
  location: string;
  type: string;
  /** kube-openapi's type list: `[type]`, or `['integer', 'string']` for int-or-string. */
  types: string[];
  nullable: boolean;
  /** The default, already pruned like the API server prunes defaults when it loads a CRD. */
  default: { value: unknown } | undefined;
  properties: Map<string, SchemaNode> | undefined;
  additionalProperties: SchemaNode | undefined;
  /** `additionalProperties` is set at all: as a schema, or as a bare boolean (Go: non-nil, no schema). */
  hasAdditionalProperties: boolean;
  /** False only for `additionalProperties: false`. */
  additionalPropertiesAllowed: boolean;
  items: SchemaNode | undefined;
  preserveUnknownFields: boolean;
  embeddedResource: boolean;
  /** This node or one below it is an embedded resource (walkers skip subtrees without). */
  hasEmbeddedResources: boolean;
  /** This node or one below it is a set or map list. */
  hasListTypes: boolean;
  intOrString: boolean;
  /** '' when unset (atomic semantics). */
  listType: string;
  listMapKeys: string[];
  mapType: string;
  validations: ValidationRuleProps[];
  /** The format after the API server strips the ones it does not validate (int32, int64...). */
  format: string;
  maximum: number | undefined;
  exclusiveMaximum: boolean;
  minimum: number | undefined;
  exclusiveMinimum: boolean;
  multipleOf: number | undefined;
  maxLength: number | undefined;
  minLength: number | undefined;
  pattern: CompiledPattern | undefined;
  maxItems: number | undefined;
  minItems: number | undefined;
  uniqueItems: boolean;
  enum: unknown[] | undefined;
  maxProperties: number | undefined;
  minProperties: number | undefined;
  required: string[];
  allOf: SchemaNode[];
  anyOf: SchemaNode[];
  oneOf: SchemaNode[];
  not: SchemaNode | undefined;
}

const TYPES = new Set(['object', 'array', 'string', 'integer', 'number', 'boolean']);
const LIST_TYPES = new Set(['atomic', 'set', 'map']);
const MAP_TYPES = new Set(['granular', 'atomic']);
const MAX_SCHEMA_DEPTH = 512;

/**
 * Formats kube-apiserver 1.35 validates (apiextensions validation/formats.go, compatibility
 * version 1.34), normalized like go-openapi does (dashes removed). Others are dropped.
 */
export const SUPPORTED_FORMATS: ReadonlySet<string> = new Set([
  'bsonobjectid',
  'uri',
  'email',
  'hostname',
  'ipv4',
  'ipv6',
  'cidr',
  'mac',
  'uuid',
  'uuid3',
  'uuid4',
  'uuid5',
  'isbn',
  'isbn10',
  'isbn13',
  'creditcard',
  'ssn',
  'hexcolor',
  'rgbcolor',
  'byte',
  'password',
  'date',
  'duration',
  'datetime',
  'k8sshortname',
  'k8slongname',
]);

export function normalizeFormat(format: string): string {
  return format.replaceAll('-', '');
}

interface Ctx {
  depth: number;
}

function fail(location: string, message: string): never {
  throw new CrdError(`${location}: ${message}`);
}

function optString(s: JsonObject, key: string, location: string): string | undefined {
  const v = s[key];
  if (v === undefined) return undefined;
  if (typeof v !== 'string') fail(location, `${key} must be a string`);
  return v;
}

function optBool(s: JsonObject, key: string, location: string): boolean {
  const v = s[key];
  if (v === undefined || v === null) return false;
  if (typeof v !== 'boolean') fail(location, `${key} must be a boolean`);
  return v;
}

function optNumber(s: JsonObject, key: string, location: string): number | undefined {
  const v = s[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'bigint') return Number(v);
  if (typeof v !== 'number' || !Number.isFinite(v)) fail(location, `${key} must be a number`);
  return v;
}

function optCount(s: JsonObject, key: string, location: string): number | undefined {
  const n = optNumber(s, key, location);
  if (n !== undefined && (!Number.isInteger(n) || n < 0)) fail(location, `${key} must be a non-negative integer`);
  return n;
}

function stringList(s: JsonObject, key: string, location: string): string[] {
  const v = s[key];
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) fail(location, `${key} must be a list of strings`);
  return [...v];
}

function compilePattern(source: string, location: string): CompiledPattern {
  try {
    const re = RE2JS.compile(source);
    return { source, test: (s) => re.test(s) };
  } catch (err) {
    fail(location, `pattern ${JSON.stringify(source)} is not a valid RE2 expression: ${(err as Error).message}`);
  }
}

function compileRules(s: JsonObject, location: string): ValidationRuleProps[] {
  const v = s['x-kubernetes-validations'];
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) fail(location, 'x-kubernetes-validations must be a list');
  return v.map((r, i) => {
    const at = `${location}.x-kubernetes-validations[${i}]`;
    if (!isObject(r)) fail(at, 'must be an object');
    const rule = optString(r, 'rule', at);
    if (rule === undefined) fail(at, 'rule is required');
    const out: ValidationRuleProps = { rule };
    for (const key of ['message', 'messageExpression', 'reason', 'fieldPath'] as const) {
      const text = optString(r, key, at);
      if (text !== undefined) out[key] = text;
    }
    if (optBool(r, 'optionalOldSelf', at)) out.optionalOldSelf = true;
    return out;
  });
}

function compileBranches(s: JsonObject, key: string, location: string, ctx: Ctx): SchemaNode[] {
  const v = s[key];
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) fail(location, `${key} must be a list of schemas`);
  return v.map((b, i) => compileNode(b, `${location}.${key}[${i}]`, ctx));
}

// Every JSONSchemaProps field is read and checked here, in one place, as the structural schema has them.
// eslint-disable-next-line complexity, max-lines-per-function -- one field per JSONSchemaProps key
function compileNode(raw: unknown, location: string, ctx: Ctx): SchemaNode {
  if (!isObject(raw)) fail(location, `schema must be an object, got ${kindOf(raw)}`);
  if (ctx.depth > MAX_SCHEMA_DEPTH) fail(location, `schema nests deeper than ${MAX_SCHEMA_DEPTH} levels`);
  if (raw.$ref !== undefined) fail(location, '$ref is not allowed in a structural schema');
  const inner: Ctx = { depth: ctx.depth + 1 };

  const type = optString(raw, 'type', location) ?? '';
  if (type !== '' && !TYPES.has(type))
    fail(location, `type ${JSON.stringify(type)} is not one of ${[...TYPES].join(', ')}`);
  const intOrString = optBool(raw, 'x-kubernetes-int-or-string', location);

  let properties: Map<string, SchemaNode> | undefined;
  if (raw.properties !== undefined && raw.properties !== null) {
    if (!isObject(raw.properties)) fail(location, 'properties must be an object');
    properties = new Map();
    for (const name of Object.keys(raw.properties)) {
      properties.set(name, compileNode(raw.properties[name], `${location}.properties[${name}]`, inner));
    }
  }

  let items: SchemaNode | undefined;
  if (raw.items !== undefined && raw.items !== null) {
    if (Array.isArray(raw.items)) fail(location, 'items must be a single schema (a list of schemas is not allowed)');
    items = compileNode(raw.items, `${location}.items`, inner);
  }

  let additionalProperties: SchemaNode | undefined;
  let additionalPropertiesAllowed = true;
  const ap = raw.additionalProperties;
  if (typeof ap === 'boolean') additionalPropertiesAllowed = ap;
  else if (ap !== undefined && ap !== null)
    additionalProperties = compileNode(ap, `${location}.additionalProperties`, inner);

  const listType = optString(raw, 'x-kubernetes-list-type', location) ?? '';
  if (listType !== '' && !LIST_TYPES.has(listType))
    fail(location, `x-kubernetes-list-type ${JSON.stringify(listType)} is not atomic, set or map`);
  const listMapKeys = stringList(raw, 'x-kubernetes-list-map-keys', location);
  if (listType === 'map' && listMapKeys.length === 0)
    fail(location, 'x-kubernetes-list-type map needs x-kubernetes-list-map-keys');
  const mapType = optString(raw, 'x-kubernetes-map-type', location) ?? '';
  if (mapType !== '' && !MAP_TYPES.has(mapType))
    fail(location, `x-kubernetes-map-type ${JSON.stringify(mapType)} is not granular or atomic`);

  const rawFormat = optString(raw, 'format', location) ?? '';
  const patternSource = optString(raw, 'pattern', location);
  const enumValues = raw.enum;
  if (enumValues !== undefined && enumValues !== null && !Array.isArray(enumValues))
    fail(location, 'enum must be a list');
  const not = raw.not === undefined || raw.not === null ? undefined : compileNode(raw.not, `${location}.not`, inner);

  const embeddedResource = optBool(raw, 'x-kubernetes-embedded-resource', location);
  const children = [...(properties?.values() ?? []), items, additionalProperties].filter(
    (c): c is SchemaNode => c !== undefined,
  );
  return {
    raw: raw as JSONSchemaProps,
    location,
    type,
    types: intOrString ? ['integer', 'string'] : type ? [type] : [],
    nullable: optBool(raw, 'nullable', location),
    default:
      Object.hasOwn(raw, 'default') && raw.default !== null && raw.default !== undefined
        ? { value: deepClone(raw.default) }
        : undefined,
    properties,
    additionalProperties,
    hasAdditionalProperties: ap !== undefined && ap !== null,
    additionalPropertiesAllowed,
    items,
    preserveUnknownFields: optBool(raw, 'x-kubernetes-preserve-unknown-fields', location),
    embeddedResource,
    hasEmbeddedResources: embeddedResource || children.some((c) => c.hasEmbeddedResources),
    hasListTypes: listType === 'set' || listType === 'map' || children.some((c) => c.hasListTypes),
    intOrString,
    listType,
    listMapKeys,
    mapType,
    validations: compileRules(raw, location),
    format: SUPPORTED_FORMATS.has(normalizeFormat(rawFormat)) ? rawFormat : '',
    maximum: optNumber(raw, 'maximum', location),
    exclusiveMaximum: optBool(raw, 'exclusiveMaximum', location),
    minimum: optNumber(raw, 'minimum', location),
    exclusiveMinimum: optBool(raw, 'exclusiveMinimum', location),
    multipleOf: optNumber(raw, 'multipleOf', location),
    maxLength: optCount(raw, 'maxLength', location),
    minLength: optCount(raw, 'minLength', location),
    pattern: patternSource === undefined || patternSource === '' ? undefined : compilePattern(patternSource, location),
    maxItems: optCount(raw, 'maxItems', location),
    minItems: optCount(raw, 'minItems', location),
    uniqueItems: optBool(raw, 'uniqueItems', location),
    enum: Array.isArray(enumValues) ? enumValues.map((v) => deepClone(v)) : undefined,
    maxProperties: optCount(raw, 'maxProperties', location),
    minProperties: optCount(raw, 'minProperties', location),
    required: stringList(raw, 'required', location),
    allOf: compileBranches(raw, 'allOf', location, inner),
    anyOf: compileBranches(raw, 'anyOf', location, inner),
    oneOf: compileBranches(raw, 'oneOf', location, inner),
    not,
  };
}

/** Compiles an openAPIV3Schema; throws CrdError naming the offending location. */
export function compileSchema(raw: unknown, location = 'openAPIV3Schema'): SchemaNode {
  return compileNode(raw, location, { depth: 0 });
}
