// The scale subresource's own checks, as the API server runs them on every write of the resource
// (apiextensions-apiserver validator.go ValidateScaleSpec/ValidateScaleStatus): after the schema,
// never ratcheted, the field named with the path's leading dot.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CrdError, compileCrdSchema } from '../../src/crd/index.ts';
import { errorString } from '../../src/field/errors.ts';
import { trainJobCrdV230Object } from './fixtures.ts';

type Crd = { spec: { versions: Array<Record<string, unknown>> } };

const SCALE = {
  specReplicasPath: '.spec.trainer.numNodes',
  statusReplicasPath: '.status.trainjobWebhook.nodes',
};

function withScale(scale: unknown = SCALE): Crd {
  const crd = trainJobCrdV230Object() as Crd;
  crd.spec.versions[0].subresources = { status: {}, scale };
  return crd;
}

const job = (numNodes?: number) => ({
  apiVersion: 'trainer.kubeflow.org/v1alpha1',
  kind: 'TrainJob',
  metadata: { name: 'j', namespace: 'n', uid: 'u', resourceVersion: '1', generation: 1 },
  spec: { runtimeRef: { name: 'torch-distributed' }, ...(numNodes === undefined ? {} : { trainer: { numNodes } }) },
});

describe('the scale subresource checks the object itself', () => {
  const scaled = compileCrdSchema(withScale());
  const plain = compileCrdSchema(trainJobCrdV230Object());

  const cases: [string, number | undefined, string[]][] = [
    ['a count of 0 or more', 3, []],
    ['no count', undefined, []],
    ['a negative count', -1, ['.spec.trainer.numNodes: Invalid value: -1: should be a non-negative integer']],
  ];
  for (const [what, n, want] of cases) {
    it(`on create: ${what}`, () => {
      assert.deepEqual(scaled.validate(job(n)).map(errorString), want);
      assert.deepEqual(plain.validate(job(n)).map(errorString), [], 'v2.3.0 has no minimum without it');
    });
  }

  it('on update, not ratcheted: a stored negative count is refused on any update, a count set fixes it', () => {
    const old = job(-1);
    const relabeled = { ...job(-1), metadata: { ...old.metadata, labels: { a: 'b' } } };
    assert.deepEqual(scaled.validateUpdate(relabeled, old).map(errorString), [
      '.spec.trainer.numNodes: Invalid value: -1: should be a non-negative integer',
    ]);
    assert.deepEqual(plain.validateUpdate(relabeled, old).map(errorString), []);
    assert.deepEqual(scaled.validateUpdate(job(2), old).map(errorString), []);
  });

  it('a CRD whose scale names no paths is not a usable CRD', () => {
    assert.throws(() => compileCrdSchema(withScale({ specReplicasPath: '.spec.trainer.numNodes' })), CrdError);
    assert.throws(() => compileCrdSchema(withScale('yes')), CrdError);
  });
});
