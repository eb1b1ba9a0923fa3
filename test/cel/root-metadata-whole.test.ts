// A root rule that reads metadata whole answers as the API server does.
//
// The API server restricts the *schema* of metadata at the root (model.WithTypeAndObjectMeta:
// name and generateName), not the value: unstructuredMap.Equal
// (k8s.io/apiserver/pkg/cel/common/valuesunstructured.go) compares Size() of the whole metadata
// map and DeepEquals every key the schema does not declare. So a root rule comparing `self` and
// `oldSelf` whole (`self.metadata == oldSelf.metadata`, `self == oldSelf`) sees a change when
// labels, generation or anything else in metadata changed, and no change when nothing did: the
// CEL views of both (src/cel/values.ts toCelView) carry the whole metadata, not only name and
// generateName (then no change is ever seen), and the same on both sides (else they are never
// equal). Checked on kube-apiserver v1.35.8 with the embedded CRD plus these root rules:
// `kubectl label` (a=2) and a merge patch of spec.trainer.numNodes (metadata untouched by the
// client; generation bumps) are refused with `<nil>: Invalid value: root metadata changed` (and
// `root object changed` for `self == oldSelf`); `kubectl replace` of the unchanged object passes both.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { decideUpdate } from '../../src/rules/decide.ts';
import { EMBEDDED_CRD_FILE, policyFromCrd } from '../../src/rules/crd-policy.ts';
import { errorString } from '../../src/field/errors.ts';
import { trainJob } from '../rules/fixtures.ts';

function crdWithRootRule(rule: string, message: string): unknown {
  const crd = JSON.parse(readFileSync(EMBEDDED_CRD_FILE, 'utf8'));
  crd.spec.versions[0].schema.openAPIV3Schema['x-kubernetes-validations'].push({ rule, message });
  return crd;
}

const metadataRule = policyFromCrd(crdWithRootRule('self.metadata == oldSelf.metadata', 'root metadata changed'));
const wholeRule = policyFromCrd(crdWithRootRule('self == oldSelf', 'root object changed'));

const causes = (policy: typeof metadataRule, obj: unknown, oldObj: unknown): string[] =>
  decideUpdate(policy, obj, oldObj).causes.map(errorString);

const relabel = (o: ReturnType<typeof trainJob>) => void (o.metadata.labels = { a: '2' });
const scale = (o: ReturnType<typeof trainJob>) => void (o.spec.trainer.numNodes = 2);

describe('root metadata compared whole (API server: the whole metadata map)', () => {
  const cases: [string, typeof metadataRule, string, (o: ReturnType<typeof trainJob>) => void, string][] = [
    [
      'a label added fails `self.metadata == oldSelf.metadata`, as kube-apiserver refuses it',
      metadataRule,
      'root metadata changed',
      relabel,
      'admitted: metadata compared as name/generateName only',
    ],
    [
      'a spec change (generation bumped by the registry) fails `self.metadata == oldSelf.metadata`',
      metadataRule,
      'root metadata changed',
      scale,
      'admitted: the generation bump is not seen',
    ],
    [
      'a label added fails `self == oldSelf` at the root',
      wholeRule,
      'root object changed',
      relabel,
      'admitted: metadata compared as name/generateName only',
    ],
  ];
  for (const [what, policy, message, change, why] of cases) {
    it(what, () => {
      const changed = trainJob();
      change(changed);
      assert.ok(
        causes(policy, changed, trainJob()).some((c) => c.includes(message)),
        why,
      );
    });
  }
  it('an update that changes nothing in metadata or spec passes both rules', () => {
    assert.deepEqual(causes(metadataRule, trainJob(), trainJob()), []);
    assert.deepEqual(causes(wholeRule, trainJob(), trainJob()), []);
  });
});
