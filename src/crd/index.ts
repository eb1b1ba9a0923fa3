// The API server's structural-schema handling of one CRD version, compiled once: what its
// decoder does to an object (ObjectMeta round trip, pruning, null pruning, defaulting), what the
// registry strategy does before validating (status subresource, generation), and the schema
// side of validation (type meta, OpenAPI schema with ratcheting, list types). The CRD's CEL
// rules are found here and evaluated by src/cel.
import type { FieldError } from '../field/errors.ts';
import { applyDefaults } from './defaults.ts';
import { loadCrd, type CrdInfo } from './load.ts';
import { validateListTypes } from './listtype.ts';
import { validateObjectMeta, validateObjectMetaUpdate } from './objectmeta.ts';
import { prune, type PruneResult } from './prune.ts';
import { correlate, type Correlation } from './ratchet.ts';
import { collectCelRules, valuesAt, type CelRule, type LocatedValue, type LocationStep } from './rules.ts';
import type { JSONSchemaProps, SchemaNode } from './schema.ts';
import { validateSchema, validateSchemaUpdate } from './validate.ts';
import { deepClone, isObject, semanticEqual, setOwn, type JsonObject } from './values.ts';

export { CrdError, loadCrd, type CrdInfo } from './load.ts';
export { applyDefaults } from './defaults.ts';
export { prune, type PruneResult } from './prune.ts';
export { validateSchema, validateSchemaUpdate, type SchemaValidation } from './validate.ts';
export { validateListTypes } from './listtype.ts';
export { correlate, correlatedOld, ratchetStateAt, ratchetStep, ratchetRoot, shouldRatchet, semanticEqual, Correlation, type RatchetState } from './ratchet.ts';
export { collectCelRules, valuesAt, parseLocation, type CelRule, type LocatedValue, type LocationStep } from './rules.ts';
export { compileSchema, type SchemaNode, type JSONSchemaProps, type ValidationRuleProps } from './schema.ts';
export { parseFieldPath, type PathSegment } from './paths.ts';
export { validateObjectMeta, validateObjectMetaUpdate, qualifiedNameErrors, type ObjectMetaOptions } from './objectmeta.ts';

/**
 * The error the API server adds instead of running CEL rules when schema validation found a
 * "blocking" error (strategy.go hasBlockingErr).
 */
export const CEL_SKIPPED_ERROR: FieldError = {
  type: 'FieldValueInvalid',
  field: '<nil>',
  value: null,
  detail: 'some validation rules were not checked because the object was invalid; correct the existing errors to complete validation',
  origin: 'schema',
};

/** Errors after which the API server does not run the CRD's CEL rules. */
export function hasBlockingErrors(errors: readonly FieldError[]): boolean {
  return errors.some((e) => ['FieldValueNotSupported', 'FieldValueRequired', 'FieldValueTooLong', 'FieldValueTooMany', 'FieldValueTypeInvalid'].includes(e.type));
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
  /** ObjectMeta round trip, pruning of unknown fields, null pruning; returns a new object and the unknown field paths. */
  prune(obj: unknown): PruneResult;
  /** The decoder's whole job in order (prune, then defaults), with its `unknown field "x"` warnings. */
  decode(obj: unknown): { object: unknown; warnings: string[] };
  /** The registry's PrepareForCreate: status dropped (status subresource), generation 1. */
  prepareForCreate(obj: unknown): unknown;
  /** PrepareForUpdate: status kept from the old object, generation bumped when anything but metadata changed. */
  prepareForUpdate(newObj: unknown, oldObj: unknown): unknown;
  /** CREATE: type meta, ObjectMeta, schema, list types (not CEL). */
  validate(obj: unknown): FieldError[];
  /** UPDATE: type meta, ObjectMeta update rules, schema with ratcheting (errors in unchanged values drop out), list types (skipped when the old object already broke them). */
  validateUpdate(newObj: unknown, oldObj: unknown): FieldError[];
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
  if (kind !== info.kind) errs.push({ type: 'FieldValueInvalid', field: 'kind', value: kind, detail: `must be ${info.kind}`, origin: 'schema' });
  if (apiVersion !== info.apiVersion) errs.push({ type: 'FieldValueInvalid', field: 'apiVersion', value: apiVersion, detail: `must be ${info.apiVersion}`, origin: 'schema' });
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

  const validate = (obj: unknown): FieldError[] => {
    const typeErrors = typeMetaErrors(info, obj);
    if (typeErrors.length > 0) return typeErrors;
    return [...validateObjectMeta(obj, metaOptions), ...validateSchema(root, obj), ...validateListTypes(root, obj)];
  };

  const validateUpdate = (newObj: unknown, oldObj: unknown): FieldError[] => {
    const typeErrors = typeMetaErrors(info, newObj);
    if (typeErrors.length > 0) return typeErrors;
    const metaErrors = validateObjectMetaUpdate(newObj, oldObj, metaOptions);
    const { errors } = validateSchemaUpdate(root, newObj, correlate(root, newObj, oldObj));
    // List types are not ratcheted per element: all of them are skipped when the old object had any.
    const listErrors = validateListTypes(root, oldObj).length === 0 ? validateListTypes(root, newObj) : [];
    return [...metaErrors, ...errors, ...listErrors];
  };

  return {
    info,
    schema: info.schema,
    root,
    rules,
    defaults: (obj) => applyDefaults(root, obj),
    prune: (obj) => prune(root, obj),
    decode(obj) {
      const pruned = prune(root, obj);
      return { object: applyDefaults(root, pruned.object), warnings: pruned.pruned.map((p) => `unknown field "${p}"`) };
    },
    prepareForCreate(obj) {
      const out = deepClone(obj);
      if (!isObject(out)) return out;
      if (info.statusSubresource) delete out.status;
      setGeneration(out, 1);
      return out;
    },
    prepareForUpdate(newObj, oldObj) {
      const out = deepClone(newObj);
      if (!isObject(out) || !isObject(oldObj)) return out;
      if (info.statusSubresource) {
        if (Object.hasOwn(oldObj, 'status')) setOwn(out, 'status', deepClone(oldObj.status));
        else delete out.status;
      }
      if (!semanticEqual(withoutMetadata(out), withoutMetadata(oldObj))) {
        const g = generationOf(oldObj);
        setGeneration(out, typeof g === 'bigint' ? g + 1n : g + 1);
      }
      return out;
    },
    validate,
    validateUpdate,
    correlate: (newObj, oldObj) => correlate(root, newObj, oldObj),
    valuesAt: (obj, location) => valuesAt(root, obj, location),
  };
}
