// Turns a TrainJob CRD (from a file or the API server) into the decision Policy: its structural
// schema checks (src/crd/) and its CEL rules, with the rule table.
import { CEL_SKIPPED_ERROR, compileCrdSchema, hasBlockingErrors } from './crd/index.ts';
import { readObjectFile } from './io/read-object.ts';
import { buildPolicy, type Policy, type SchemaChecks } from './rules/policy.ts';

/** A CRD that cannot be used: not a CRD, not the TrainJob one, or a rule that does not compile. */
export class CrdLoadError extends Error {
  override name = 'CrdLoadError';
}

export function schemaChecksFor(crd: unknown): SchemaChecks {
  const compiled = compileCrdSchema(crd);
  if (compiled.info.group !== 'trainer.kubeflow.org' || compiled.info.kind !== 'TrainJob') {
    throw new CrdLoadError(`expected the TrainJob CRD (trainer.kubeflow.org), got ${compiled.info.kind}.${compiled.info.group}`);
  }
  return {
    root: compiled.root,
    rules: compiled.rules,
    decode: (obj) => compiled.decode(obj),
    prepare: (obj, oldObj) => (oldObj === undefined ? compiled.prepareForCreate(obj) : compiled.prepareForUpdate(obj, oldObj)),
    correlate: (obj, oldObj) => compiled.correlate(obj, oldObj),
    celBlockedBy: (errors) => (hasBlockingErrors(errors) ? CEL_SKIPPED_ERROR : undefined),
    validate: (obj) => compiled.validatePrepared(obj),
    validateUpdate: (obj, oldObj, correlation) => compiled.validateUpdatePrepared(obj, oldObj, correlation),
  };
}

export function policyFromCrd(crd: unknown): Policy {
  try {
    return buildPolicy(schemaChecksFor(crd));
  } catch (err) {
    if (err instanceof CrdLoadError) throw err;
    throw new CrdLoadError((err as Error).message);
  }
}

export async function loadPolicyFromFile(path: string): Promise<Policy> {
  const crd = await readObjectFile(path);
  try {
    return policyFromCrd(crd);
  } catch (err) {
    throw new CrdLoadError(`${path}: ${(err as Error).message}`);
  }
}
