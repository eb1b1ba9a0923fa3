// Resources embedded in a custom resource (`x-kubernetes-embedded-resource: true`, e.g. a pod
// template): their metadata goes through the same ObjectMeta round trip as the resource's own
// (schema/objectmeta/coerce.go) and is validated like ObjectMeta with path-segment names
// (schema/objectmeta/validation.go). The root resource itself is handled elsewhere.
import { appendAll } from './append.ts';
import type { FieldError } from '../field/errors.ts';
import { OMIT_VALUE } from '../field/errors.ts';
import {
  dropUnknownMetadataFields,
  pathSegmentNameErrors,
  validateMetadataAt,
  dns1035LabelErrors,
} from './objectmeta.ts';
import { childPath, indexPath, keyPath } from './paths.ts';
import type { SchemaNode } from './schema.ts';
import { ownKeys } from './values.ts';
import { isObject, type JsonObject } from '../json/object.ts';

type Visit = (x: JsonObject, s: SchemaNode, path: string) => void;

/** Calls `visit` on every embedded resource below the root, walking like the Go coercer. */
function walkEmbedded(x: unknown, s: SchemaNode | undefined, path: string, visit: Visit, isRoot: boolean): void {
  if (s === undefined || !s.hasEmbeddedResources) return;
  if (isObject(x)) {
    if (s.embeddedResource && !isRoot) visit(x, s, path);
    for (const k of ownKeys(x)) {
      const prop = s.properties?.get(k);
      if (prop) walkEmbedded(x[k], prop, childPath(path, k), visit, false);
      else if (s.additionalProperties) walkEmbedded(x[k], s.additionalProperties, keyPath(path, k), visit, false);
    }
  } else if (Array.isArray(x)) {
    x.forEach((v, i) => walkEmbedded(v, s.items, indexPath(path, i), visit, false));
  }
}

/**
 * Drops unknown fields of embedded metadata (reported as `spec.template.metadata.foo`, sorted) and
 * a zero creationTimestamp.
 */
export function coerceEmbeddedInPlace(obj: unknown, root: SchemaNode): string[] {
  const out: string[] = [];
  walkEmbedded(
    obj,
    root,
    '',
    (x, _s, path) => {
      const meta = x.metadata;
      if (!isObject(meta)) return;
      appendAll(out, dropUnknownMetadataFields(meta, childPath(path, 'metadata')));
      if (meta.creationTimestamp === null) delete meta.creationTimestamp;
    },
    true,
  );
  return out.sort();
}

/** ParseGroupVersion's complaint, if any. */
function groupVersionError(gv: string): string | undefined {
  return gv.split('/').length > 2 ? `unexpected GroupVersion string: ${gv}` : undefined;
}

/** validateEmbeddedResource for every embedded resource (the API server runs it on create and update). */
export function validateEmbeddedResources(obj: unknown, root: SchemaNode): FieldError[] {
  const errs: FieldError[] = [];
  const invalid = (field: string, value: unknown, detail: string): void => {
    errs.push({ type: 'FieldValueInvalid', field, value, detail, origin: 'objectmeta' });
  };
  walkEmbedded(
    obj,
    root,
    '',
    // eslint-disable-next-line complexity -- validateEmbeddedResource's apiVersion, kind and metadata checks
    (x, _s, path) => {
      if (!Object.hasOwn(x, 'apiVersion'))
        errs.push({
          type: 'FieldValueRequired',
          field: childPath(path, 'apiVersion'),
          value: OMIT_VALUE,
          detail: '',
          origin: 'objectmeta',
        });
      if (!Object.hasOwn(x, 'kind'))
        errs.push({
          type: 'FieldValueRequired',
          field: childPath(path, 'kind'),
          value: OMIT_VALUE,
          detail: '',
          origin: 'objectmeta',
        });
      for (const k of ownKeys(x)) {
        const v = x[k];
        if (k === 'apiVersion') {
          const at = childPath(path, k);
          if (typeof v !== 'string') invalid(at, v, 'must be a string');
          else if (v === '') invalid(at, v, 'must not be empty');
          else {
            const err = groupVersionError(v);
            if (err) invalid(at, v, err);
          }
        } else if (k === 'kind') {
          const at = childPath(path, k);
          if (typeof v !== 'string') invalid(at, v, 'must be a string');
          else if (v === '') invalid(at, v, 'must not be empty');
          else {
            const msgs = dns1035LabelErrors(v.toLowerCase());
            if (msgs.length > 0) invalid(at, v, `may have mixed case, but should otherwise match: ${msgs.join(',')}`);
          }
        } else if (k === 'metadata' && isObject(v)) {
          const meta = { ...v, name: typeof v.name === 'string' && v.name !== '' ? v.name : 'fakename' };
          const namespace = typeof v.namespace === 'string' ? v.namespace : '';
          appendAll(
            errs,
            validateMetadataAt(meta, childPath(path, 'metadata'), pathSegmentNameErrors, namespace.length > 0, {
              namespaced: namespace.length > 0,
            }),
          );
        }
      }
    },
    true,
  );
  return errs;
}
