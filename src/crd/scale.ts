// The scale subresource's checks on the object itself: with `subresources.scale`, the API server
// checks the replica paths on every create and update of the resource, not only on /scale writes,
// and without ratcheting (apiextensions-apiserver pkg/registry/customresource/validator.go
// ValidateScaleSpec and ValidateScaleStatus, run by Validate and ValidateUpdate right after the
// schema). Pure.
import { CrdError } from './error.ts';
import type { FieldError } from '../field/errors.ts';

export interface ScalePaths {
  /** As written in the CRD, e.g. `.spec.trainer.numNodes`: the error's field keeps the leading dot. */
  specReplicasPath: string;
  statusReplicasPath: string;
}

const MAX_INT32 = 2147483647;

/** A CRD version's `subresources`, read for its scale paths: `{ scale }`, or `{}` without one. */
export function scaleOf(subresources: unknown, what: string): { scale?: ScalePaths } {
  if (typeof subresources !== 'object' || subresources === null) return {};
  const raw = (subresources as Record<string, unknown>).scale;
  if (raw === undefined) return {};
  if (typeof raw !== 'object' || raw === null) throw new CrdError(`${what}.subresources.scale must be an object`);
  return { scale: scalePaths(raw as Record<string, unknown>, what) };
}

function scalePaths(raw: Record<string, unknown>, what: string): ScalePaths {
  const { specReplicasPath, statusReplicasPath } = raw;
  if (typeof specReplicasPath !== 'string' || typeof statusReplicasPath !== 'string')
    throw new CrdError(`${what}.subresources.scale needs specReplicasPath and statusReplicasPath`);
  return { specReplicasPath, statusReplicasPath };
}

/** unstructured.NestedInt64: the integer at a dotted path, undefined when absent or not an integer. */
function integerAt(obj: unknown, dotted: string): number | bigint | undefined {
  let node: unknown = obj;
  for (const key of dotted.replace(/^\./, '').split('.')) {
    if (typeof node !== 'object' || node === null || Array.isArray(node)) return undefined;
    node = (node as Record<string, unknown>)[key];
  }
  if (typeof node === 'bigint') return node;
  return typeof node === 'number' && Number.isInteger(node) ? node : undefined;
}

function replicasErrors(obj: unknown, path: string): FieldError[] {
  const n = integerAt(obj, path);
  if (n === undefined) return [];
  if (n < 0)
    return [
      { type: 'FieldValueInvalid', field: path, value: n, detail: 'should be a non-negative integer', origin: 'scale' },
    ];
  if (n > MAX_INT32)
    return [
      {
        type: 'FieldValueInvalid',
        field: path,
        value: n,
        detail: `should be less than or equal to ${MAX_INT32}`,
        origin: 'scale',
      },
    ];
  return [];
}

/**
 * ValidateScaleSpec then ValidateScaleStatus. A value of another type is left to the schema's
 * own error (the API server adds an accessor error too; the schema's types make it unreachable
 * for an integer field).
 */
export function validateScale(scale: ScalePaths | undefined, obj: unknown): FieldError[] {
  if (!scale) return [];
  return [...replicasErrors(obj, scale.specReplicasPath), ...replicasErrors(obj, scale.statusReplicasPath)];
}
