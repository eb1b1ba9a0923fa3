// Uniqueness of `x-kubernetes-list-type: set` items and `map` keys, as the API server checks it
// after schema validation (apiextensions-apiserver schema/listtype/validation.go). Paths use
// field.Path style here (`metadata.labels[key]`), unlike the schema validator's messages.
import { appendAll } from './append.ts';
import type { FieldError } from '../field/errors.ts';
import type { SchemaNode } from './schema.ts';
import { canonicalJson, kindOf, ownKeys } from './values.ts';
import { isObject, type JsonObject } from '../json/object.ts';
import { childPath, indexPath, keyPath } from './paths.ts';

const UNSPECIFIED = Symbol('unspecified key');

function duplicate(field: string, value: unknown): FieldError {
  return { type: 'FieldValueDuplicate', field, value, detail: '', origin: 'schema' };
}

/** Go map-key identity of a scalar or the JSON of a compound: int 1, float 1.5 and "1" differ. */
function identity(x: unknown): string {
  // The common key, a string: unquoted is as unambiguous (the kind prefix ends where it starts).
  if (typeof x === 'string') return `s:string:${x}`;
  const kind = kindOf(x);
  if (kind === 'object' || kind === 'array') return `c:${canonicalJson(x)}`;
  return `s:${kind}:${canonicalJson(x)}`;
}

/** Indices of the second occurrence of each repeated value (later repeats are not reported). */
function nonUniqueIndices(items: readonly unknown[]): number[] {
  if (items.length <= 1) return [];
  const seen = new Map<string, number>();
  const out: number[] = [];
  items.forEach((x, i) => {
    const id = x === UNSPECIFIED ? 'unspecified' : identity(x);
    const times = seen.get(id) ?? 0;
    seen.set(id, times + 1);
    if (times === 1) out.push(i);
  });
  return out;
}

function validateListMap(path: string, s: SchemaNode, list: unknown[]): FieldError[] {
  for (let i = 0; i < list.length; i++) {
    const x = list[i];
    if (x !== null && !isObject(x)) {
      return [
        {
          type: 'FieldValueInvalid',
          field: indexPath(path, i),
          value: x,
          detail: 'must be an object for an array of list-type map',
          origin: 'schema',
        },
      ];
    }
  }
  if (list.length <= 1) return [];
  if (s.listMapKeys.length === 1) {
    const keyField = s.listMapKeys[0];
    const keys = list.map((x) =>
      isObject(x) && Object.hasOwn(x, keyField) && x[keyField] !== undefined ? x[keyField] : UNSPECIFIED,
    );
    return nonUniqueIndices(keys).map((i) => {
      const value: JsonObject = {};
      if (keys[i] !== UNSPECIFIED)
        Object.defineProperty(value, keyField, {
          value: keys[i],
          enumerable: true,
          writable: true,
          configurable: true,
        });
      return duplicate(indexPath(path, i), value);
    });
  }
  const keys = list.map((x) => {
    const key: JsonObject = {};
    if (isObject(x)) {
      for (const k of s.listMapKeys) {
        if (Object.hasOwn(x, k) && x[k] !== undefined)
          Object.defineProperty(key, k, { value: x[k], enumerable: true, writable: true, configurable: true });
      }
    }
    return key;
  });
  return nonUniqueIndices(keys).map((i) => duplicate(indexPath(path, i), keys[i]));
}

function validateArray(path: string, s: SchemaNode, list: unknown[]): FieldError[] {
  const errs: FieldError[] = [];
  if (s.listType === 'set') {
    for (const i of nonUniqueIndices(list)) errs.push(duplicate(indexPath(path, i), list[i]));
  } else if (s.listType === 'map') {
    appendAll(errs, validateListMap(path, s, list));
  }
  if (s.items) list.forEach((x, i) => appendAll(errs, validateValue(indexPath(path, i), s.items!, x)));
  return errs;
}

function validateValue(path: string, s: SchemaNode, x: unknown): FieldError[] {
  if (!s.hasListTypes) return [];
  if (Array.isArray(x)) return validateArray(path, s, x);
  if (isObject(x)) return validateObject(path, s, x);
  return [];
}

function validateObject(path: string, s: SchemaNode, obj: JsonObject): FieldError[] {
  const errs: FieldError[] = [];
  if (s.additionalProperties) {
    for (const k of ownKeys(obj)) appendAll(errs, validateValue(keyPath(path, k), s.additionalProperties, obj[k]));
  }
  if (s.properties) {
    for (const k of ownKeys(obj)) {
      const sub = s.properties.get(k);
      if (sub) appendAll(errs, validateValue(childPath(path, k), sub, obj[k]));
    }
  }
  return errs;
}

/** Duplicate set items and map-list keys anywhere in the object (ValidateListSetsAndMaps). */
export function validateListTypes(schema: SchemaNode, obj: unknown): FieldError[] {
  return isObject(obj) && schema.hasListTypes ? validateObject('', schema, obj) : [];
}
