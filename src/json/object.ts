// The one test for "an object whose fields can be read": used on admission bodies (plain or
// null-prototype objects from the JSON parsers) and on the reconciler's reads (also typed
// client-node models, which are class instances whose own properties are the fields).

export type JsonObject = Record<string, unknown>;

/** An object whose own keys are its fields: not null, not a list. */
export function isObject(value: unknown): value is JsonObject {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
