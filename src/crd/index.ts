// The API server's handling of one CRD version's custom resources, compiled once: what its
// decoder does to an object (ObjectMeta round trip, pruning, null pruning, defaulting), what the
// registry does before validating (status subresource, generation, metadata carried over), and
// every check that precedes the CRD's CEL rules (type meta, ObjectMeta, OpenAPI schema with
// ratcheting, embedded resources, list types). The CEL rules are found here, run by src/cel.
import type { FieldError } from '../field/errors.ts';
import { applyDefaults, applyDefaultsInPlace } from './defaults.ts';
import { loadCrd, type CrdInfo } from './load.ts';
import { validateListTypes } from './listtype.ts';
import {
  pathSegmentNameErrors,
  validateMetadataAt,
  validateObjectMeta,
  validateObjectMetaUpdate,
} from './objectmeta.ts';
import { validateEmbeddedResources } from './embedded.ts';
import { prune, type PruneResult } from './prune.ts';
import { correlate, type Correlation } from './ratchet.ts';
import { collectCelRules, valuesAt, type CelRule, type LocatedValue, type LocationStep } from './rules.ts';
import type { JSONSchemaProps, SchemaNode } from './schema.ts';
import { validateSchema, validateSchemaUpdate } from './validate.ts';
import { validateScale } from './scale.ts';
import { deepClone, semanticEqual, setOwn } from './values.ts';
import { isObject, type JsonObject } from '../json/object.ts';

export { CrdError, loadCrd, type CrdInfo } from './load.ts';
export { applyDefaults } from './defaults.ts';
export { prune, type PruneResult } from './prune.ts';
export { validateSchema, validateSchemaUpdate, type SchemaValidation } from './validate.ts';
export { validateListTypes } from './listtype.ts';
export {
  correlate,
  correlatedOld,
  ratchetStateAt,
  ratchetStep,
  ratchetRoot,
  shouldRatchet,
  semanticEqual,
  Correlation,
  type RatchetState,
} from './ratchet.ts';
export {
  collectCelRules,
  valuesAt,
  parseLocation,
  type CelRule,
  type LocatedValue,
  type LocationStep,
} from './rules.ts';
export { compileSchema, type SchemaNode, type JSONSchemaProps, type ValidationRuleProps } from './schema.ts';
export { parseFieldPath, type PathSegment } from './paths.ts';
export {
  validateObjectMeta,
  validateObjectMetaUpdate,
  qualifiedNameErrors,
  type ObjectMetaOptions,
} from './objectmeta.ts';

/**
 * The error the API server adds instead of running CEL rules when schema validation found a
 * "blocking" error (strategy.go hasBlockingErr).
 */
export const CEL_SKIPPED_ERROR: FieldError = {
  type: 'FieldValueInvalid',
  field: '<nil>',
  value: null,
  detail:
    'some validation rules were not checked because the object was invalid; correct the existing errors to complete validation',
  origin: 'schema',
};

/** Errors after which the API server does not run the CRD's CEL rules. */
export function hasBlockingErrors(errors: readonly FieldError[]): boolean {
  return errors.some((e) =>
    [
      'FieldValueNotSupported',
      'FieldValueRequired',
      'FieldValueTooLong',
      'FieldValueTooMany',
      'FieldValueTypeInvalid',
    ].includes(e.type),
  );
}

export interface CompiledCrdSchema {
  info: CrdInfo;
  /** The version's openAPIV3Schema as written (for typing CEL values). */
  schema: JSONSchemaProps;
  /** The compiled tree every function here walks. */
  root: SchemaNode;
  /** Every x-kubernetes-validations rule with its location. */
  rules: CelRule[];
  /** Structural defaulting; returns a new object. */
  defaults(obj: unknown): unknown;
  /**
   * ObjectMeta round trip, pruning of unknown fields, null pruning; returns a new object and the
   * unknown field paths.
   */
  prune(obj: unknown): PruneResult;
  /** The decoder's whole job in order (prune, then defaults), with its `unknown field "x"` warnings. */
  decode(obj: unknown): { object: unknown; warnings: string[] };
  /** The registry's PrepareForCreate: status dropped (status subresource), generation 1. */
  prepareForCreate(obj: unknown): unknown;
  /**
   * rest.BeforeUpdate + PrepareForUpdate: uid/timestamps/generation carried over from the old
   * object, status kept from it, generation bumped when anything but metadata changed.
   */
  prepareForUpdate(newObj: unknown, oldObj: unknown): unknown;
  /**
   * The same on an object decode() returned (a private copy): prepared in place, sharing the old
   * object's status; neither may change afterwards.
   */
  prepareDecodedForUpdate(decoded: unknown, oldObj: unknown): unknown;
  /**
   * CREATE (after prepareForCreate): type meta, ObjectMeta, schema, embedded resources' metadata,
   * list types (not CEL).
   */
  validate(obj: unknown): FieldError[];
  /**
   * UPDATE (after prepareForUpdate): type meta, ObjectMeta update rules, schema with ratcheting
   * (errors in unchanged values drop out), embedded resources' metadata, list types (skipped when
   * the old object already broke them).
   */
  validateUpdate(newObj: unknown, oldObj: unknown): FieldError[];
  /** The same checks on an object already prepared (prepareForCreate), for callers that prepare once. */
  validatePrepared(obj: unknown): FieldError[];
  /** The same checks on a prepared update, reusing the update's correlation when given. */
  validateUpdatePrepared(newObj: unknown, oldObj: unknown, correlation?: Correlation): FieldError[];
  /** The correlation of an UPDATE (for ratcheting CEL rule errors and finding oldSelf). */
  correlate(newObj: unknown, oldObj: unknown): Correlation;
  /** Concrete values at a rule location. */
  valuesAt(obj: unknown, location: string | readonly LocationStep[]): LocatedValue[];
}

function typeMetaErrors(info: CrdInfo, obj: unknown): FieldError[] {
  const o = isObject(obj) ? obj : {};
  const kind = typeof o.kind === 'string' ? o.kind : '';
  const apiVersion = typeof o.apiVersion === 'string' ? o.apiVersion : '';
  const errs: FieldError[] = [];
  if (kind !== info.kind)
    errs.push({
      type: 'FieldValueInvalid',
      field: 'kind',
      value: kind,
      detail: `must be ${info.kind}`,
      origin: 'schema',
    });
  if (apiVersion !== info.apiVersion)
    errs.push({
      type: 'FieldValueInvalid',
      field: 'apiVersion',
      value: apiVersion,
      detail: `must be ${info.apiVersion}`,
      origin: 'schema',
    });
  return errs;
}

function withoutMetadata(o: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const k of Object.keys(o)) if (k !== 'metadata') setOwn(out, k, o[k]);
  return out;
}

function generationOf(o: JsonObject): number | bigint {
  const meta = o.metadata;
  const g = isObject(meta) ? meta.generation : undefined;
  return typeof g === 'number' || typeof g === 'bigint' ? g : 0;
}

/** rest.BeforeUpdate: what the server keeps from the old object's metadata before validating. */
function carryOverMetadata(out: JsonObject, old: JsonObject): void {
  const oldMeta = isObject(old.metadata) ? old.metadata : {};
  if (!isObject(out.metadata)) setOwn(out, 'metadata', {});
  const meta = out.metadata as JsonObject;
  setOwn(meta, 'generation', oldMeta.generation ?? 0);
  const present = (v: unknown): boolean => v !== undefined && v !== null && v !== '';
  if (!present(meta.uid) && present(oldMeta.uid)) setOwn(meta, 'uid', oldMeta.uid);
  if (present(oldMeta.creationTimestamp)) setOwn(meta, 'creationTimestamp', oldMeta.creationTimestamp);
  if (present(oldMeta.deletionTimestamp)) setOwn(meta, 'deletionTimestamp', oldMeta.deletionTimestamp);
  if (!present(meta.deletionGracePeriodSeconds) && present(oldMeta.deletionGracePeriodSeconds))
    setOwn(meta, 'deletionGracePeriodSeconds', oldMeta.deletionGracePeriodSeconds);
}

function setGeneration(o: JsonObject, generation: number | bigint): void {
  if (!isObject(o.metadata)) setOwn(o, 'metadata', {});
  setOwn(o.metadata as JsonObject, 'generation', generation);
}

export interface CompileOptions {
  /** The served version to use; default the storage version. */
  version?: string;
  /**
   * Also report what the API server fills in before any webhook sees an object: a missing
   * metadata.name/namespace on create, a missing resourceVersion on update. Off by default, so a
   * hand-written object for an offline review is not refused for lacking them.
   */
  requireServerFields?: boolean;
}

/** Compiles a CRD (parsed YAML/JSON) once; throws CrdError when it is not a usable CRD. */
export function compileCrdSchema(crdObject: unknown, options: CompileOptions = {}): CompiledCrdSchema {
  const info = loadCrd(crdObject, options);
  const metaOptions = { namespaced: info.namespaced, requireServerFields: options.requireServerFields === true };
  const root = info.root;
  const rules = collectCelRules(root);

  // What the registry does before validating (rest.BeforeCreate/BeforeUpdate, PrepareForCreate/
  // PrepareForUpdate). validate and validateUpdate apply it themselves: it is idempotent on
  // objects a webhook receives (already prepared) and spares raw objects spurious errors.
  const prepareForCreate = (obj: unknown): unknown => {
    if (!isObject(obj)) return obj;
    const meta = isObject(obj.metadata) ? obj.metadata : undefined;
    if (!(info.statusSubresource && Object.hasOwn(obj, 'status')) && meta?.generation === 1) return obj;
    const out = deepClone(obj);
    if (info.statusSubresource) delete out.status;
    setGeneration(out, 1);
    return out;
  };

  // `own`: newObj is the caller's private copy (decode made it) and nothing changes either object
  // later, so it is prepared in place and shares the old status instead of copying both.
  const prepareForUpdate = (newObj: unknown, oldObj: unknown, own = false): unknown => {
    const out = own ? newObj : deepClone(newObj);
    if (!isObject(out) || !isObject(oldObj)) return out;
    carryOverMetadata(out, oldObj);
    if (info.statusSubresource) {
      if (Object.hasOwn(oldObj, 'status')) setOwn(out, 'status', own ? oldObj.status : deepClone(oldObj.status));
      else delete out.status;
    }
    if (!semanticEqual(withoutMetadata(out), withoutMetadata(oldObj))) {
      const g = generationOf(oldObj);
      setGeneration(out, typeof g === 'bigint' ? g + 1n : g + 1);
    }
    return out;
  };

  // The schema (ratcheted on update), then the scale subresource's paths (never ratcheted).
  const objectChecks = (obj: unknown, correlation?: Correlation): FieldError[] => [
    ...(correlation ? validateSchemaUpdate(root, obj, correlation).errors : validateSchema(root, obj)),
    ...validateScale(info.scale, obj),
  ];
  // strategy.Validate: the validator (type meta, or else ObjectMeta, schema and the scale
  // subresource's paths), then embedded resources and list types; CEL would come last.
  const validatePrepared = (obj: unknown): FieldError[] => {
    const typeErrors = typeMetaErrors(info, obj);
    const validator =
      typeErrors.length > 0 ? typeErrors : [...validateObjectMeta(obj, metaOptions), ...objectChecks(obj)];
    return [...validator, ...validateEmbeddedResources(obj, root), ...validateListTypes(root, obj)];
  };

  // rest.BeforeUpdate's common ObjectMeta checks (names as path segments), then strategy.ValidateUpdate,
  // which checks the ObjectMeta update rules again: the API server lists such errors more than once.
  const validateUpdatePrepared = (
    newObj: unknown,
    oldObj: unknown,
    correlation = correlate(root, newObj, oldObj),
  ): FieldError[] => {
    const newMeta = isObject(newObj) && isObject(newObj.metadata) ? newObj.metadata : {};
    const metaUpdate = validateObjectMetaUpdate(newObj, oldObj, metaOptions);
    const common = [
      ...validateMetadataAt(newMeta, 'metadata', pathSegmentNameErrors, info.namespaced, metaOptions),
      ...metaUpdate,
    ];
    const typeErrors = typeMetaErrors(info, newObj);
    const validator = typeErrors.length > 0 ? typeErrors : [...metaUpdate, ...objectChecks(newObj, correlation)];
    // List types are not ratcheted per element: all of them are skipped when the old object had any.
    const listErrors = validateListTypes(root, oldObj).length === 0 ? validateListTypes(root, newObj) : [];
    return [...common, ...validator, ...validateEmbeddedResources(newObj, root), ...listErrors];
  };

  return {
    info,
    schema: info.schema,
    root,
    rules,
    defaults: (obj) => applyDefaults(root, obj),
    prune: (obj) => prune(root, obj),
    decode(obj) {
      const pruned = prune(root, obj); // a private copy: defaults can go in place
      applyDefaultsInPlace(pruned.object, root);
      return { object: pruned.object, warnings: pruned.pruned.map((p) => `unknown field "${p}"`) };
    },
    prepareForCreate,
    prepareForUpdate: (newObj, oldObj) => prepareForUpdate(newObj, oldObj),
    prepareDecodedForUpdate: (decoded, oldObj) => prepareForUpdate(decoded, oldObj, true),
    validate: (obj) => validatePrepared(prepareForCreate(obj)),
    validateUpdate: (obj, oldObj) => validateUpdatePrepared(prepareForUpdate(obj, oldObj), oldObj),
    validatePrepared,
    validateUpdatePrepared,
    correlate: (newObj, oldObj) => correlate(root, newObj, oldObj),
    valuesAt: (obj, location) => valuesAt(root, obj, location),
  };
}
