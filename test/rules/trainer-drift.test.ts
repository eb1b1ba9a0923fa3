// The drift check: a CRD rule cannot iterate a typed object's fields, so the CRD patch names each
// spec.trainer field it keeps immutable, and a field a later Trainer adds is not covered until the
// patch is generated for that CRD. The check names such fields; the webhook still refuses them.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fastJsonPatch, { type Operation } from 'fast-json-patch';
import { createValidator } from '../../src/rules/validator.ts';
import { policyFromCrd, schemaChecksFor, uncoveredTrainerFieldsOf } from '../../src/rules/crd-policy.ts';
import { crdPatchOps } from '../../src/rules/generate/crd-patch.ts';
import { uncoveredTrainerFields, type LocatedRule } from '../../src/rules/generate/trainer-fields.ts';
import { markRule } from '../../src/rules/marker.ts';
import { trainJobCrdObject, trainJobCrdV230Object } from '../crd/fixtures.ts';
import { trainJob, variant } from './fixtures.ts';

type Crd = { spec: { versions: { schema: { openAPIV3Schema: any } }[] } };
const schemaOf = (crd: Crd) => crd.spec.versions[0]!.schema.openAPIV3Schema;
const patchedWith = (crd: Crd, ops: unknown[]): Crd =>
  fastJsonPatch.applyPatch(structuredClone(crd), ops as Operation[], true, false).newDocument;
/** The patch as shipped: generated for Trainer v2.3.0's CRD (manifests/crd-patch). */
const shippedPatch = () => crdPatchOps(schemaOf(trainJobCrdV230Object() as Crd));

/** Trainer v2.3.0's CRD with a spec.trainer field a later Trainer might add. */
function withNewTrainerField(): Crd {
  const crd = structuredClone(trainJobCrdV230Object()) as Crd;
  schemaOf(crd).properties.spec.properties.trainer.properties.priorityClassName = { type: 'string' };
  return crd;
}
const drift = (crd: Crd) => uncoveredTrainerFieldsOf(schemaChecksFor(crd));

describe('drift check: spec.trainer fields no CRD rule covers', () => {
  const V230_FIELDS = ['args', 'command', 'env', 'image', 'numNodes', 'numProcPerNode', 'resourcesPerNode'];
  const blanket: LocatedRule = { location: 'spec.trainer', rule: 'self == oldSelf' };
  const generated = (id: string): LocatedRule => ({ location: 'spec', rule: markRule(id, 'true') });
  const table: { name: string; fields: string[]; rules: LocatedRule[]; uncovered: string[] }[] = [
    {
      name: "upstream's blanket rule covers every field, a new one too",
      fields: [...V230_FIELDS, 'priorityClassName'],
      rules: [blanket],
      uncovered: [],
    },
    {
      name: 'no blanket rule and no generated rule: nothing is covered',
      fields: ['image', 'numNodes', 'queue'],
      rules: [],
      uncovered: ['image', 'numNodes', 'queue'],
    },
    {
      name: "a named field by its table row's rule",
      fields: ['image', 'numNodes'],
      rules: [generated('trainer-image-immutable'), generated('trainer-numNodes-while-suspended')],
      uncovered: [],
    },
    {
      name: 'an unnamed field by its catch-all rule, and only that field',
      fields: ['queue', 'priorityClassName'],
      rules: [generated('trainer-unnamed-field-immutable:queue')],
      uncovered: ['priorityClassName'],
    },
    {
      name: 'a rule without the marker is not ours',
      fields: ['queue'],
      rules: [{ location: 'spec', rule: '// trainer-unnamed-field-immutable:queue\ntrue' }],
      uncovered: ['queue'],
    },
  ];
  for (const row of table) {
    it(row.name, () => assert.deepEqual(uncoveredTrainerFields(row.fields, row.rules), row.uncovered));
  }

  it('the vendored CRDs: upstream ones (blanket rule) and ones patched with their own patch are covered', () => {
    for (const crd of [trainJobCrdV230Object() as Crd, trainJobCrdObject() as Crd]) {
      assert.deepEqual(drift(crd), []);
      assert.deepEqual(drift(patchedWith(crd, crdPatchOps(schemaOf(crd)))), []);
    }
  });

  it('a CRD with a new spec.trainer field, patched with the shipped patch: the field is named; generating the patch for that CRD covers it', () => {
    const crd = withNewTrainerField();
    assert.deepEqual(drift(patchedWith(crd, shippedPatch())), ['priorityClassName']);
    assert.deepEqual(drift(patchedWith(crd, crdPatchOps(schemaOf(crd)))), []);
  });

  it('the webhook still refuses a change to that field under that CRD (it iterates the object, not the patch)', async () => {
    const validator = createValidator({ policy: policyFromCrd(patchedWith(withNewTrainerField(), shippedPatch())) });
    const old = variant(trainJob(), (o) => (o.spec.trainer.priorityClassName = 'low'));
    const changed = variant(old, (o) => (o.spec.trainer.priorityClassName = 'high'));
    const d = await validator.validate({
      uid: 'u',
      operation: 'UPDATE',
      namespace: 'team-a',
      name: 'llama-ft',
      object: changed,
      oldObject: old,
      dryRun: false,
    });
    assert.deepEqual(
      d.causes.map((c) => [c.field, c.detail, c.origin]),
      [['spec.trainer.priorityClassName', 'field is immutable', 'trainer-unnamed-field-immutable']],
    );
    const same = await validator.validate({
      uid: 'u',
      operation: 'UPDATE',
      namespace: 'team-a',
      name: 'llama-ft',
      object: variant(old, (o) => (o.metadata.labels = { a: 'b' })),
      oldObject: old,
      dryRun: false,
    });
    assert.deepEqual(same.causes, [], 'an update that leaves it alone is admitted');
  });
});
