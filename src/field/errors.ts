// Field errors in the shape of Kubernetes' field.ErrorList: collected with full paths, never
// only the first one, and rendered exactly the way the API server renders them.

import { stringifyJson } from '../json/stringify.ts';
import { goFloat, goQuote } from './gofmt.ts';

export type FieldErrorType =
  | 'FieldValueRequired'
  | 'FieldValueInvalid'
  | 'FieldValueForbidden'
  | 'FieldValueNotSupported'
  | 'FieldValueDuplicate'
  | 'FieldValueTooLong'
  | 'FieldValueTooMany'
  | 'FieldValueTypeInvalid'
  | 'InternalError';

/** Marker for errors that render without a value (field.OmitValueType in Go). */
export const OMIT_VALUE: unique symbol = Symbol('omitValue');

export interface FieldError {
  type: FieldErrorType;
  /** Full path, e.g. `spec.trainer.env[0].name`. */
  field: string;
  /** The bad value; OMIT_VALUE to leave it out of the message. */
  value: unknown;
  detail: string;
  /** Which rule produced it (a rule-table id, `schema`, or `crd:<path>#<index>`), for logs and tests. */
  origin?: string;
}

const TYPE_TEXT: Record<FieldErrorType, string> = {
  FieldValueRequired: 'Required value',
  FieldValueInvalid: 'Invalid value',
  FieldValueForbidden: 'Forbidden',
  FieldValueNotSupported: 'Unsupported value',
  FieldValueDuplicate: 'Duplicate value',
  FieldValueTooLong: 'Too long',
  FieldValueTooMany: 'Too many',
  FieldValueTypeInvalid: 'Invalid value',
  InternalError: 'Internal error',
};

/** Types whose message never shows the value (field.Error.ErrorBody). */
const VALUELESS = new Set<FieldErrorType>([
  'FieldValueRequired',
  'FieldValueForbidden',
  'FieldValueTooLong',
  'InternalError',
]);

/** Renders a value like Go's `%v`/`%q` does for the simple types the API server prints. */
export function renderValue(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'string') return goQuote(value);
  if (typeof value === 'number') return Number.isInteger(value) ? String(value) : goFloat(value);
  if (typeof value === 'bigint' || typeof value === 'boolean') return String(value);
  // Iterative: a bad value can nest as deep as the decoder allows (JSON.stringify overflows).
  return stringifyJson(value);
}

/** The part after the path: `Invalid value: "x:2": field is immutable`. */
export function errorBody(e: FieldError): string {
  let s = TYPE_TEXT[e.type];
  if (!VALUELESS.has(e.type) && e.value !== OMIT_VALUE) s += `: ${renderValue(e.value)}`;
  if (e.detail) s += `: ${e.detail}`;
  return s;
}

/** `spec.trainer.image: Invalid value: "x:2": field is immutable`. */
export function errorString(e: FieldError): string {
  return e.field ? `${e.field}: ${errorBody(e)}` : errorBody(e);
}

export const fieldError = {
  invalid: (field: string, value: unknown, detail: string): FieldError => ({
    type: 'FieldValueInvalid',
    field,
    value,
    detail,
  }),
  required: (field: string, detail = ''): FieldError => ({
    type: 'FieldValueRequired',
    field,
    value: OMIT_VALUE,
    detail,
  }),
  forbidden: (field: string, detail: string): FieldError => ({
    type: 'FieldValueForbidden',
    field,
    value: OMIT_VALUE,
    detail,
  }),
  notSupported: (field: string, value: unknown, supported: readonly unknown[]): FieldError => ({
    type: 'FieldValueNotSupported',
    field,
    value,
    detail: supported.length ? `supported values: ${supported.map(renderValue).join(', ')}` : '',
  }),
  duplicate: (field: string, value: unknown): FieldError => ({ type: 'FieldValueDuplicate', field, value, detail: '' }),
  tooLong: (field: string, maxLength: number): FieldError => ({
    type: 'FieldValueTooLong',
    field,
    value: OMIT_VALUE,
    detail: `may not be more than ${maxLength} ${maxLength === 1 ? 'byte' : 'bytes'}`,
  }),
  tooMany: (field: string, actual: number, max: number): FieldError => ({
    type: 'FieldValueTooMany',
    field,
    value: actual,
    detail: `must have at most ${max} ${max === 1 ? 'item' : 'items'}`,
  }),
  typeInvalid: (field: string, value: unknown, detail: string): FieldError => ({
    type: 'FieldValueTypeInvalid',
    field,
    value,
    detail,
  }),
  internal: (field: string, detail: string): FieldError => ({
    type: 'InternalError',
    field,
    value: OMIT_VALUE,
    detail,
  }),
};
