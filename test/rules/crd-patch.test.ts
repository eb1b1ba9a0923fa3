// The generated CRD patch removes upstream's blanket spec.trainer rule and nothing else, keeps every
// other rule at each level (ours are appended), refuses a CRD whose first trainer rule is not the
// blanket one, and the restore patch undoes it exactly.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fastJsonPatch, { type Operation } from 'fast-json-patch';
import { BLANKET_TRAINER_RULE, crdPatchOps, crdRestoreOps } from '../../src/rules/generate/crd-patch.ts';
import { isGeneratedRule } from '../../src/rules/marker.ts';
import { trainJobCrdObject, trainJobCrdV230Object } from '../crd/fixtures.ts';

type Crd = { spec: { versions: { schema: { openAPIV3Schema: any } }[] } };
const schemaOf = (crd: Crd) => crd.spec.versions[0].schema.openAPIV3Schema;
const apply = (doc: unknown, ops: unknown[]): any =>
  fastJsonPatch.applyPatch(structuredClone(doc), ops as Operation[], true, false).newDocument;
const rulesOf = (node: any): { rule: string }[] => node?.['x-kubernetes-validations'] ?? [];
const upstreamRules = (node: any) => rulesOf(node).filter((r) => !isGeneratedRule(r.rule));

/** Variants of the CRD a later Trainer could ship: more rules at trainer, at spec, at the root. */
const variants: { name: string; crd: () => Crd }[] = [
  { name: 'Trainer v2.3.0', crd: () => trainJobCrdV230Object() as Crd },
  { name: 'the newer snapshot', crd: () => trainJobCrdObject() as Crd },
  {
    name: 'a CRD with another rule at spec.trainer, rules at spec and one more at the root',
    crd: () => {
      const crd = structuredClone(trainJobCrdV230Object()) as Crd;
      const s = schemaOf(crd);
      s.properties.spec.properties.trainer['x-kubernetes-validations'].push({
        rule: 'has(self.image)',
        message: 'image required',
      });
      s.properties.spec['x-kubernetes-validations'] = [
        { rule: "!has(self.managedBy) || self.managedBy != ''", message: 'upstream spec rule' },
      ];
      s['x-kubernetes-validations'].push({ rule: 'true', message: 'upstream root rule' });
      return crd;
    },
  },
];

describe('the CRD patch and its restore', () => {
  for (const v of variants) {
    describe(v.name, () => {
      const crd = v.crd();
      const patched = apply(crd, crdPatchOps(schemaOf(crd)));
      const before = schemaOf(crd);
      const after = schemaOf(patched);

      it('removes the blanket rule and only it', () => {
        assert.deepEqual(
          rulesOf(after.properties.spec.properties.trainer),
          rulesOf(before.properties.spec.properties.trainer).slice(1),
        );
        assert.ok(
          !rulesOf(after.properties.spec.properties.trainer).some(
            (r: any) => r.rule === BLANKET_TRAINER_RULE.rule && r.message === BLANKET_TRAINER_RULE.message,
          ),
        );
      });

      it('keeps every upstream rule at spec and the root, ours appended after them', () => {
        assert.deepEqual(upstreamRules(after.properties.spec), rulesOf(before.properties.spec));
        assert.deepEqual(
          rulesOf(after.properties.spec).slice(0, rulesOf(before.properties.spec).length),
          rulesOf(before.properties.spec),
        );
        assert.deepEqual(rulesOf(after).slice(0, rulesOf(before).length), rulesOf(before));
        assert.ok(
          rulesOf(after).length > rulesOf(before).length &&
            rulesOf(after.properties.spec).length > rulesOf(before.properties.spec).length,
        );
      });

      it('the restore patch gives the CRD back exactly', () => {
        assert.deepEqual(apply(patched, crdRestoreOps(schemaOf(crd))), crd);
      });

      it('applied twice, the patch fails (the blanket rule is gone)', () => {
        assert.throws(
          () => apply(patched, crdPatchOps(schemaOf(crd))),
          /Test operation failed|OPERATION_PATH_UNRESOLVABLE/,
        );
      });

      it('the restore refuses a CRD it did not patch', () => {
        assert.throws(
          () => apply(crd, crdRestoreOps(schemaOf(crd))),
          /Test operation failed|OPERATION_PATH_UNRESOLVABLE|remove/,
        );
      });
    });
  }

  it('a CRD whose first trainer rule is another one is refused, not silently changed', () => {
    const crd = structuredClone(trainJobCrdV230Object()) as Crd;
    rulesOf(schemaOf(crd).properties.spec.properties.trainer).unshift({ rule: 'has(self.image)' });
    assert.throws(() => apply(crd, crdPatchOps(schemaOf(crd))), /Test operation failed/);
  });
});
