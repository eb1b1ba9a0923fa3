// OpenAPI schema validation of a custom resource exactly as kube-apiserver 1.35 does it: the
// kube-openapi validator (k8s.io/kube-openapi pkg/validation/validate, as vendored by
// apiextensions-apiserver v0.35) with its messages, its order of checks and its quirks, and
// apiextensions' kubeOpenAPIResultToFieldErrors turning results into field errors.
//
// Why not ajv: the answers must match the API server's, and kube-openapi differs from JSON
// Schema validators in ways a translation layer cannot recover: a string reports only its first
// failing check (maxLength, then minLength, then pattern), int-or-string reports the anyOf
// branch it matched best, type errors name Go types and formats ("must be of type integer:
// \"number\""), numbers follow Go's int64/float64 split (BigInt must compare exactly), paths
// are dotted even for map keys, and ratcheting drops errors per correlated node.
import { appendAll } from './append.ts';
import { OMIT_VALUE, type FieldError } from '../field/errors.ts';
import { KEPT_FIELD_ERRORS } from '../field/error-cap.ts';
import { formatCheck } from './formats.ts';
import { goFloat, goQuote } from '../field/gofmt.ts';
import type { Correlation } from './ratchet.ts';
import type { SchemaNode } from './schema.ts';
import { kindOf, ownKeys, semanticEqual, toBigInt, toFloat, type JsonKind } from './values.ts';
import type { JsonObject } from '../json/object.ts';

const IN = 'body';

type Code =
  | 'invalidType'
  | 'required'
  | 'tooLong'
  | 'tooShort'
  | 'pattern'
  | 'enum'
  | 'multipleOf'
  | 'multipleOfMustBePositive'
  | 'maximum'
  | 'minimum'
  | 'unique'
  | 'maxItems'
  | 'minItems'
  | 'tooFewProperties'
  | 'tooManyProperties'
  | 'unallowedProperty'
  | 'composite';

/** A kube-openapi error: `name` is its dotted path; composite (anyOf...) errors have none. */
interface OpenApiError {
  code: Code;
  name?: string;
  value?: unknown;
  valid?: number;
  values?: unknown[];
  message: string;
}

/** kube-openapi's Result: errors deduplicated by message, and the match count anyOf/oneOf use. */
/** Shared by every Result without errors: a node makes several Results, and most stay empty. */
const NO_ERRORS: readonly OpenApiError[] = Object.freeze([]);

class Result {
  errors: readonly OpenApiError[] = NO_ERRORS;
  /** Errors a ratcheting node turned into warnings (the API server drops them). */
  ratcheted: readonly OpenApiError[] = NO_ERRORS;
  matchCount = 0;
  #seen: Set<string> | undefined;

  add(e: OpenApiError): this {
    // Bounded (field/error-cap.ts): wrong-typed items by the 100,000 would each keep an error.
    if (this.full) return this;
    // Most results hold an error or two: scan those; index the messages once there are many.
    if (this.errors.length < 16) {
      if (this.errors.some((x) => x.message === e.message)) return this;
    } else {
      this.#seen ??= new Set(this.errors.map((x) => x.message));
      if (this.#seen.has(e.message)) return this;
      this.#seen.add(e.message);
    }
    if (this.errors === NO_ERRORS) this.errors = [];
    (this.errors as OpenApiError[]).push(e);
    return this;
  }
  merge(other: Result | undefined): this {
    if (!other) return this;
    for (const e of other.errors) this.add(e);
    if (other.ratcheted.length > 0) {
      if (this.ratcheted === NO_ERRORS) this.ratcheted = [];
      appendAll(this.ratcheted as OpenApiError[], other.ratcheted);
    }
    this.matchCount += other.matchCount;
    return this;
  }
  inc(): void {
    this.matchCount++;
  }
  get valid(): boolean {
    return this.errors.length === 0;
  }
  /** Holds as many errors as it keeps: nothing more can be added. */
  get full(): boolean {
    return this.errors.length >= KEPT_FIELD_ERRORS;
  }
}

function single(e: OpenApiError): Result {
  return new Result().add(e);
}

// ---------------------------------------------------------------------------------------------
// Messages (kube-openapi pkg/validation/errors/schema.go), always with `in` = "body".

function invalidType(name: string, typeName: string, value: string): OpenApiError {
  return {
    code: 'invalidType',
    name,
    value,
    message: `${name} in ${IN} must be of type ${typeName}: ${goQuote(value)}`,
  };
}

function composite(message: string): OpenApiError {
  return { code: 'composite', message };
}

/** Go's %v of the bound in a message: int64 for integer data, float64 otherwise. */
function bound(n: number | bigint): string {
  return typeof n === 'bigint' ? n.toString() : goFloat(n);
}

// ---------------------------------------------------------------------------------------------
// Go's view of numbers.

const MAX_JSON_FLOAT = 2 ** 53 - 1;

/** swag.IsFloat64AJSONInteger, including its relative-epsilon leniency for positive values. */
function isFloat64AJSONInteger(f: number): boolean {
  if (!Number.isFinite(f) || f < -MAX_JSON_FLOAT || f > MAX_JSON_FLOAT) return false;
  if (Number.isInteger(f)) return true;
  if (f < 0) return false; // float64(uint64(f)) of a negative value is huge on amd64: never close
  const g = Math.trunc(f);
  const diff = Math.abs(f - g);
  if (g === 0) return diff < 1e-9 * Number.MIN_VALUE;
  return diff / Math.min(f + g, Number.MAX_VALUE) < 1e-9;
}

/** Go's int64(f): truncation toward zero (saturating here; Go leaves overflow undefined). */
function int64Of(f: number): bigint {
  if (!Number.isFinite(f)) return f > 0 ? 2n ** 63n - 1n : -(2n ** 63n);
  const t = BigInt(Math.trunc(f));
  if (t > 2n ** 63n - 1n) return 2n ** 63n - 1n;
  if (t < -(2n ** 63n)) return -(2n ** 63n);
  return t;
}

/** What typeValidator.schemaInfoForType reports for a value: JSON type and Go format. */
function schemaInfo(kind: JsonKind): [string, string] {
  switch (kind) {
    case 'boolean':
      return ['boolean', ''];
    case 'string':
      return ['string', ''];
    case 'int':
      return ['integer', 'int64'];
    case 'float':
      return ['number', 'float64'];
    case 'array':
      return ['array', ''];
    case 'object':
      return ['object', ''];
    default:
      return ['', ''];
  }
}

// ---------------------------------------------------------------------------------------------
// The validators of one SchemaValidator, in kube-openapi's order.

// eslint-disable-next-line complexity -- kube-openapi's typeValidator.Validate with its int/float/format exceptions
function typeValidator(s: SchemaNode, data: unknown, kind: JsonKind, path: string): Result {
  const result = new Result();
  result.inc();
  if (kind === 'null') {
    if (s.types.length > 0 && !s.types.includes('null') && !s.nullable)
      return single(invalidType(path, s.types.join(','), 'null'));
    return result;
  }
  const [schType, format] = schemaInfo(kind);
  const has = (t: string): boolean => s.types.includes(t);
  const isFloatInt = schType === 'number' && isFloat64AJSONInteger(toFloat(data)) && has('integer');
  const isIntFloat = schType === 'integer' && has('number');
  const isLowerInt = s.format === 'int64' && format === 'int32';
  const isLowerFloat = s.format === 'float64' && format === 'float32';
  const stringOrSlice = kind === 'string' || kind === 'array';
  if (
    !stringOrSlice &&
    s.format !== '' &&
    !(has(schType) || format === s.format || isFloatInt || isIntFloat || isLowerInt || isLowerFloat)
  ) {
    return single(invalidType(path, s.format, format));
  }
  if (!(has('number') || has('integer')) && s.format !== '' && stringOrSlice) return result;
  if (!(has(schType) || isFloatInt || isIntFloat)) return single(invalidType(path, s.types.join(','), schType));
  return result;
}

// eslint-disable-next-line complexity -- kube-openapi's schemaPropsValidator: anyOf, oneOf, allOf, not in its order
function schemaPropsValidator(s: SchemaNode, data: unknown, path: string): Result {
  const main = new Result();
  if (s.anyOf.length > 0) {
    let best: Result | undefined;
    let firstSuccess: Result | undefined;
    let succeeded = false;
    for (const branch of s.anyOf) {
      const r = validateValue(branch, data, path, null);
      if (r.valid) {
        best = undefined;
        succeeded = true;
        firstSuccess ??= r;
        break;
      }
      if (best === undefined || r.matchCount > best.matchCount) best = r;
    }
    if (!succeeded) main.add(composite(`${goQuote(path)} must validate at least one schema (anyOf)`));
    if (best) main.merge(best);
    else if (firstSuccess) main.merge(firstSuccess);
  }
  if (s.oneOf.length > 0) {
    let best: Result | undefined;
    let firstSuccess: Result | undefined;
    let validated = 0;
    for (const branch of s.oneOf) {
      const r = validateValue(branch, data, path, null);
      if (r.valid) {
        validated++;
        best = undefined;
        firstSuccess ??= r;
        continue;
      }
      if (validated === 0 && (best === undefined || r.matchCount > best.matchCount)) best = r;
    }
    if (validated !== 1) {
      const more = validated === 0 ? 'Found none valid' : `Found ${validated} valid alternatives`;
      main.add(composite(`${goQuote(path)} must validate one and only one schema (oneOf). ${more}`));
      if (best) main.merge(best);
    } else if (firstSuccess) main.merge(firstSuccess);
  }
  if (s.allOf.length > 0) {
    let validated = 0;
    for (const branch of s.allOf) {
      const r = validateValue(branch, data, path, null);
      if (r.valid) validated++;
      main.merge(r);
    }
    if (validated !== s.allOf.length) {
      main.add(
        composite(`${goQuote(path)} must validate all the schemas (allOf)${validated === 0 ? '. None validated' : ''}`),
      );
    }
  }
  if (s.not && validateValue(s.not, data, path, null).valid) {
    main.add(composite(`${goQuote(path)} must not validate the schema (not)`));
  }
  main.inc();
  return main;
}

function runeCount(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

/** Only the first failing string check is reported (maxLength, minLength, pattern). */
function stringValidator(s: SchemaNode, data: string, path: string): Result | undefined {
  if (s.maxLength !== undefined && runeCount(data) > s.maxLength) {
    return single({
      code: 'tooLong',
      name: path,
      value: data,
      valid: s.maxLength,
      message: `${path} in ${IN} should be at most ${s.maxLength} chars long`,
    });
  }
  if (s.minLength !== undefined && runeCount(data) < s.minLength) {
    return single({
      code: 'tooShort',
      name: path,
      value: data,
      valid: s.minLength,
      message: `${path} in ${IN} should be at least ${s.minLength} chars long`,
    });
  }
  if (s.pattern !== undefined && !s.pattern.test(data)) {
    return single({
      code: 'pattern',
      name: path,
      value: data,
      message: `${path} in ${IN} should match '${s.pattern.source}'`,
    });
  }
  return undefined;
}

function formatValidator(s: SchemaNode, data: string, path: string): Result | undefined {
  const check = formatCheck(s.format);
  if (!check || check(data)) return undefined;
  return single(invalidType(path, s.format, data));
}

function numberValidator(s: SchemaNode, data: unknown, kind: JsonKind, path: string): Result {
  const res = new Result();
  const isInt = kind === 'int';
  if (s.multipleOf !== undefined) {
    if (isInt) {
      const factor = int64Of(s.multipleOf);
      const v = toBigInt(data);
      if (factor <= 0n)
        res.add({
          code: 'multipleOfMustBePositive',
          name: path,
          value: factor,
          message: `factor MultipleOf declared for ${path} must be positive: ${factor}`,
        });
      else if ((v / factor) * factor !== v)
        res.add({
          code: 'multipleOf',
          name: path,
          value: data,
          message: `${path} in ${IN} should be a multiple of ${factor}`,
        });
    } else {
      const factor = s.multipleOf;
      const v = toFloat(data);
      if (factor <= 0)
        res.add({
          code: 'multipleOfMustBePositive',
          name: path,
          value: factor,
          message: `factor MultipleOf declared for ${path} must be positive: ${goFloat(factor)}`,
        });
      else if (!isFloat64AJSONInteger(factor < 1 ? (1 / factor) * v : v / factor)) {
        res.add({
          code: 'multipleOf',
          name: path,
          value: data,
          message: `${path} in ${IN} should be a multiple of ${goFloat(factor)}`,
        });
      }
    }
  }
  const compare = (limit: number, exclusive: boolean, isMax: boolean): void => {
    const lim: number | bigint = isInt ? int64Of(limit) : limit;
    const v: number | bigint = isInt ? toBigInt(data) : toFloat(data);
    const fails = isMax ? (exclusive ? v >= lim : v > lim) : exclusive ? v <= lim : v < lim;
    if (!fails) return;
    const relation = isMax
      ? exclusive
        ? 'less than'
        : 'less than or equal to'
      : exclusive
        ? 'greater than'
        : 'greater than or equal to';
    res.add({
      code: isMax ? 'maximum' : 'minimum',
      name: path,
      value: data,
      message: `${path} in ${IN} should be ${relation} ${bound(lim)}`,
    });
  };
  if (s.minimum !== undefined) compare(s.minimum, s.exclusiveMinimum, false);
  if (s.maximum !== undefined) compare(s.maximum, s.exclusiveMaximum, true);
  res.inc();
  return res;
}

function sliceValidator(s: SchemaNode, data: unknown[], path: string, corr: Correlation | null): Result {
  const result = new Result();
  if (s.items) {
    // Once full (field/error-cap.ts), further items could add nothing: 200,000 wrong-typed items
    // took 1.2 s, most of it collecting the garbage of errors the cap dropped.
    for (let i = 0; i < data.length && !result.full; i++)
      result.merge(validateChild(s.items, data[i], `${path}[${i}]`, corr?.index(i) ?? null));
  }
  const size = data.length;
  if (s.minItems !== undefined && size < s.minItems) {
    result.add({
      code: 'minItems',
      name: path,
      value: size,
      valid: s.minItems,
      message: `${path} in ${IN} should have at least ${s.minItems} items`,
    });
  }
  if (s.maxItems !== undefined && size > s.maxItems) {
    result.add({
      code: 'maxItems',
      name: path,
      value: size,
      valid: s.maxItems,
      message: `${path} in ${IN} should have at most ${s.maxItems} items`,
    });
  }
  if (s.uniqueItems && data.some((v, i) => data.slice(0, i).some((u) => semanticEqual(u, v)))) {
    result.add({ code: 'unique', name: path, message: `${path} in ${IN} shouldn't contain duplicates` });
  }
  result.inc();
  return result;
}

/** reflect.Value.Convert of the data to the enum value's Go type, then DeepEqual. */
// eslint-disable-next-line complexity -- one case per Go kind reflect.Value.Convert converts between
function enumMatches(data: unknown, kind: JsonKind, enumValue: unknown): boolean {
  const ek = kindOf(enumValue);
  switch (ek) {
    case 'string':
      if (kind === 'string') return data === enumValue;
      // Go converts an integer to the string of that code point.
      if (kind === 'int') {
        const cp = toBigInt(data);
        const valid = cp >= 0n && cp <= 0x10ffffn && !(cp >= 0xd800n && cp <= 0xdfffn);
        return (valid ? String.fromCodePoint(Number(cp)) : '\ufffd') === enumValue;
      }
      return false;
    case 'int':
      if (kind === 'int') return toBigInt(data) === toBigInt(enumValue);
      if (kind === 'float') return int64Of(toFloat(data)) === toBigInt(enumValue);
      return false;
    case 'float':
      return (kind === 'int' || kind === 'float') && toFloat(data) === toFloat(enumValue);
    case 'boolean':
      return data === enumValue;
    case 'array':
    case 'object':
      return kind === ek && semanticEqual(data, enumValue);
    default:
      return false;
  }
}

function commonValidator(s: SchemaNode, data: unknown, kind: JsonKind, path: string): Result | undefined {
  if (!s.enum || s.enum.length === 0) return undefined;
  if (kind !== 'null' && s.enum.some((e) => enumMatches(data, kind, e))) return undefined;
  return single({
    code: 'enum',
    name: path,
    value: data,
    values: s.enum,
    message: `${path} in ${IN} should be one of ${JSON.stringify(s.enum)}`,
  });
}

// eslint-disable-next-line complexity -- kube-openapi's objectValidator: counts, additional, properties, required
function objectValidator(s: SchemaNode, data: JsonObject, path: string, corr: Correlation | null): Result {
  const res = new Result();
  const keys = ownKeys(data);
  if (s.minProperties !== undefined && keys.length < s.minProperties) {
    res.add({
      code: 'tooFewProperties',
      name: path,
      value: keys.length,
      valid: s.minProperties,
      message: `${path} in ${IN} should have at least ${s.minProperties} properties`,
    });
  }
  if (s.maxProperties !== undefined && keys.length > s.maxProperties) {
    res.add({
      code: 'tooManyProperties',
      name: path,
      value: keys.length,
      valid: s.maxProperties,
      message: `${path} in ${IN} should have at most ${s.maxProperties} properties`,
    });
  }
  if (s.hasAdditionalProperties && !s.additionalPropertiesAllowed) {
    for (const k of keys) {
      if (!s.properties?.has(k))
        res.add({
          code: 'unallowedProperty',
          name: path,
          value: k,
          message: `${path}.${k} in ${IN} is a forbidden property`,
        });
    }
  } else if (s.additionalProperties) {
    for (const k of keys) {
      if (res.full) break;
      if (s.properties?.has(k)) continue;
      res.merge(validateChild(s.additionalProperties, data[k], `${path}.${k}`, childCorrelation(corr, path, k)));
    }
  }
  for (const [name, prop] of s.properties ?? []) {
    if (!Object.hasOwn(data, name) || data[name] === undefined) continue;
    res.merge(
      validateChild(prop, data[name], path === '' ? name : `${path}.${name}`, childCorrelation(corr, path, name)),
    );
  }
  for (const k of s.required) {
    if (!Object.hasOwn(data, k) || data[k] === undefined)
      res.add({ code: 'required', name: `${path}.${k}`, message: `${path}.${k} in ${IN} is required` });
  }
  return res;
}

/** apiVersion and kind at the root are validated without ratcheting (ratcheting.go isTypeMetaField). */
function childCorrelation(corr: Correlation | null, path: string, field: string): Correlation | null {
  if (corr === null || (path === '' && (field === 'apiVersion' || field === 'kind'))) return null;
  return corr.key(field);
}

/** SchemaValidator.Validate: every validator that applies to the value's kind, in order. */
function validateValue(s: SchemaNode, data: unknown, path: string, corr: Correlation | null): Result {
  const result = new Result();
  const kind = kindOf(data);
  const applies = s.types.length > 0 || s.format !== '';
  if (kind === 'null') {
    if (applies) result.merge(typeValidator(s, data, kind, path));
    result.merge(commonValidator(s, data, kind, path));
    return result;
  }
  const step = (r: Result | undefined): void => {
    result.merge(r);
    result.inc();
  };
  if (applies) step(typeValidator(s, data, kind, path));
  step(schemaPropsValidator(s, data, path));
  if (kind === 'string') step(stringValidator(s, data as string, path));
  if (kind === 'string' && s.format !== '' && formatCheck(s.format)) step(formatValidator(s, data as string, path));
  if (kind === 'int' || kind === 'float') step(numberValidator(s, data, kind, path));
  if (kind === 'array') step(sliceValidator(s, data as unknown[], path, corr));
  step(commonValidator(s, data, kind, path));
  if (kind === 'object') step(objectValidator(s, data as JsonObject, path, corr));
  result.inc();
  return result;
}

/**
 * A property or item validator: a ratcheting one when the value correlates with an old value.
 * A correlated value equal to its old value reports no error whatever it holds (ratchet() keeps
 * none), so it is not validated at all: most of an update is unchanged, and validating it was
 * the schema side's main cost (bench/PROFILE.md). Only `errors` leaves this module, and a
 * correlated result's matchCount is never read (anyOf/oneOf branches validate uncorrelated).
 */
function validateChild(s: SchemaNode, data: unknown, path: string, corr: Correlation | null): Result {
  if (corr !== null && corr.deepEqual()) return new Result();
  const result = validateValue(s, data, path, corr);
  return corr === null ? result : ratchet(result, corr);
}

/** ratchetingValueValidator: errors of a node the update leaves unchanged become warnings. */
function ratchet(result: Result, corr: Correlation): Result {
  if (result.valid || !corr.deepEqual()) return result;
  const out = new Result();
  out.ratcheted = [...result.ratcheted, ...result.errors];
  out.matchCount = result.matchCount;
  return out;
}

// ---------------------------------------------------------------------------------------------
// kubeOpenAPIResultToFieldErrors (apiextensions-apiserver pkg/apiserver/validation/validation.go)

function plural(n: number, one: string, many: string): string {
  return n === 1 ? one : many;
}

// eslint-disable-next-line complexity -- one case per error code, as kubeOpenAPIResultToFieldErrors maps them
function toFieldError(e: OpenApiError): FieldError {
  const origin = 'schema';
  if (e.code === 'composite')
    return { type: 'FieldValueInvalid', field: '<nil>', value: '', detail: e.message, origin };
  const field = e.name !== undefined && e.name !== '' && e.name !== '.' ? e.name.replace(/^\./, '') : '<nil>';
  const value = e.value === undefined || e.value === null ? '' : e.value;
  switch (e.code) {
    case 'required':
      return { type: 'FieldValueRequired', field, value: OMIT_VALUE, detail: '', origin };
    case 'enum': {
      const supported = (e.values ?? []).map((v) =>
        goQuote(
          typeof v === 'string' ? v : JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? Number(x) : x)),
        ),
      );
      return {
        type: 'FieldValueNotSupported',
        field,
        value: e.value ?? null,
        detail: supported.length ? `supported values: ${supported.join(', ')}` : '',
        origin,
      };
    }
    case 'tooLong':
      return {
        type: 'FieldValueTooLong',
        field,
        value: OMIT_VALUE,
        detail: `may not be more than ${e.valid} ${plural(e.valid ?? 0, 'byte', 'bytes')}`,
        origin,
      };
    case 'maxItems':
    case 'tooManyProperties':
      return {
        type: 'FieldValueTooMany',
        field,
        value: e.value,
        detail: `must have at most ${e.valid} ${plural(e.valid ?? 0, 'item', 'items')}`,
        origin,
      };
    case 'invalidType':
      return { type: 'FieldValueTypeInvalid', field, value, detail: e.message, origin };
    default:
      return { type: 'FieldValueInvalid', field, value, detail: e.message, origin };
  }
}

export interface SchemaValidation {
  errors: FieldError[];
  /** Errors the update leaves unchanged (UPDATE only); the API server drops them silently. */
  ratcheted: FieldError[];
}

/** Validates a whole object against its CRD schema (CREATE, or an UPDATE without ratcheting). */
export function validateSchema(schema: SchemaNode, obj: unknown): FieldError[] {
  return validateValue(schema, obj, '', null).errors.map(toFieldError);
}

/** Validates an UPDATE with ratcheting: errors in values correlated to equal old values drop out. */
export function validateSchemaUpdate(schema: SchemaNode, newObj: unknown, correlation: Correlation): SchemaValidation {
  const result = ratchet(validateValue(schema, newObj, '', correlation), correlation);
  return { errors: result.errors.map(toFieldError), ratcheted: result.ratcheted.map(toFieldError) };
}
