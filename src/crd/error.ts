// The one error type src/crd throws: the input is not a usable CustomResourceDefinition.

export class CrdError extends Error {
  override name = 'CrdError';
}
