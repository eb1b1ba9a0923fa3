// What an informer stores of an object: its key (namespace/name, or name for a cluster-scoped
// one) and the object frozen, so that every reader can be handed the stored object itself.
import { isObject } from '../json/object.ts';

/** `namespace/name`, or `name` without a namespace; undefined when the object has no name. */
export function keyOfObject(obj: unknown): string | undefined {
  const meta = isObject(obj) ? obj.metadata : undefined;
  if (!isObject(meta) || typeof meta.name !== 'string' || meta.name === '') return undefined;
  return typeof meta.namespace === 'string' && meta.namespace !== '' ? `${meta.namespace}/${meta.name}` : meta.name;
}

/** Freezes `value` and everything it holds (JSON: objects and arrays); returns it. */
export function deepFreeze<T>(value: T): T {
  if (typeof value !== 'object' || value === null || Object.isFrozen(value)) return value;
  Object.freeze(value);
  for (const v of Object.values(value)) deepFreeze(v);
  return value;
}
