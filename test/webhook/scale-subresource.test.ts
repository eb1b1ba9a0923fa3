// A write to a TrainJob's scale subresource is judged as the numNodes update it makes: the Scale
// becomes the stored TrainJob with numNodes = spec.replicas, and the Validator sees that TrainJob
// against the stored one. A read that fails, a TrainJob gone or replaced: refused for now. A scale
// of anything else, or without cluster access: admitted (the latter with a warning).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  SCALE_NOT_JUDGED,
  scaleReplicas,
  scaleRequestOf,
  trainJobAfterScale,
  validateScale,
  type ScaleDeps,
} from '../../src/webhook/scale-subresource.ts';
import type { AdmissionReviewRequest } from '../../src/webhook/envelope.ts';
import type { Decision } from '../../src/rules/contract.ts';

type Obj = Record<string, any>;

const stored = (numNodes?: number): Obj => ({
  apiVersion: 'trainer.kubeflow.org/v1alpha1',
  kind: 'TrainJob',
  metadata: { name: 'llama', namespace: 'ml', uid: 'u-1', resourceVersion: '7', generation: 3 },
  spec: {
    suspend: true,
    runtimeRef: { name: 'torch-distributed' },
    trainer: numNodes === undefined ? {} : { numNodes },
  },
});

/** A Scale as the API server makes it from a TrainJob (replicas 0 omitted). */
const scale = (replicas: number, rv = '7', uid = 'u-1'): Obj => ({
  apiVersion: 'autoscaling/v1',
  kind: 'Scale',
  metadata: { name: 'llama', namespace: 'ml', uid, resourceVersion: rv },
  spec: replicas === 0 ? {} : { replicas },
  status: { replicas: 2, selector: 'jobset.sigs.k8s.io/jobset-name=llama' },
});

const review = (to: number, from = 2, over: Partial<AdmissionReviewRequest> = {}): AdmissionReviewRequest => ({
  apiVersion: 'admission.k8s.io/v1',
  uid: 'r-1',
  operation: 'UPDATE',
  kind: { group: 'autoscaling', version: 'v1', kind: 'Scale' },
  resource: { group: 'trainer.kubeflow.org', resource: 'trainjobs' },
  subResource: 'scale',
  namespace: 'ml',
  name: 'llama',
  object: scale(to),
  oldObject: scale(from),
  dryRun: false,
  ...over,
});

type Answer = { allowed: boolean; warnings?: string[]; decision?: Decision; judged?: Obj };

/** Deps that record what the Validator was asked; `read` stands in for the GET of the TrainJob. */
function deps(read: ScaleDeps<Answer>['readTrainJob'], verdict: Decision = { causes: [], warnings: [] }) {
  const asked: { object: Obj; oldObject: Obj }[] = [];
  const reads: (string | undefined)[] = [];
  const d: ScaleDeps<Answer> = {
    ...(read
      ? {
          readTrainJob: async (ns, name, rv) => {
            reads.push(`${ns}/${name}@${rv}`);
            return read(ns, name, rv);
          },
        }
      : {}),
    validate: async (object, oldObject) => {
      asked.push({ object, oldObject });
      return verdict;
    },
    answer: (decision, judged) => ({ allowed: decision.causes.length === 0, decision, judged }),
    allowed: (warnings) => ({ allowed: true, ...(warnings ? { warnings } : {}) }),
  };
  return { d, asked, reads };
}

describe('a write to the scale subresource', () => {
  it('is told apart: a TrainJob scale, another resource scale, no subresource', () => {
    assert.equal(scaleRequestOf(review(3)), 'trainjob');
    assert.equal(
      scaleRequestOf({ subResource: 'scale', resource: { group: 'apps', resource: 'deployments' } }),
      'other',
    );
    assert.equal(
      scaleRequestOf({ subResource: 'status', resource: { group: 'trainer.kubeflow.org', resource: 'trainjobs' } }),
      undefined,
    );
    assert.equal(scaleRequestOf({}), undefined);
  });

  it('reads spec.replicas, which the API server omits when 0', () => {
    assert.equal(scaleReplicas(scale(4)), 4);
    assert.equal(scaleReplicas(scale(0)), 0);
    assert.equal(scaleReplicas({ spec: { replicas: 'x' } }), undefined);
  });

  it('makes the TrainJob the API server stores: numNodes set (added where absent), generation one up, the rest as stored', () => {
    const before = stored(2);
    const after = trainJobAfterScale(before, 4) as Obj;
    assert.equal(after.spec.trainer.numNodes, 4);
    assert.equal(after.metadata.generation, 4);
    assert.equal(before.spec.trainer.numNodes, 2, 'the stored one is not changed');
    assert.deepEqual({ ...after, spec: before.spec, metadata: before.metadata }, before);
    assert.equal((trainJobAfterScale(stored(), 3) as Obj).spec.trainer.numNodes, 3, 'a job without numNodes gets it');
    assert.equal((trainJobAfterScale(stored(2), 2) as Obj).metadata.generation, 3, 'no change: the same generation');
    assert.deepEqual((trainJobAfterScale({ metadata: {} }, 1) as Obj).spec, { trainer: { numNodes: 1 } });
  });

  it('is judged as the numNodes update it makes: the Validator gets the scaled TrainJob against the stored one', async () => {
    const { d, asked, reads } = deps(async () => ({ kind: 'found', value: stored(2) }));
    const answer = await validateScale(review(4), d);
    assert.equal(answer.allowed, true);
    assert.deepEqual(reads, ['ml/llama@7'], 'not older than the Scale read from');
    assert.equal(asked.length, 1);
    assert.equal(asked[0].oldObject.spec.trainer.numNodes, 2);
    assert.equal(asked[0].object.spec.trainer.numNodes, 4);
    assert.equal(answer.judged?.spec.trainer.numNodes, 4, 'the hint is for the scaled TrainJob');
  });

  it("gives the Validator's refusal as it is (403 for good, 503 for now: the route builds the status)", async () => {
    const refusal: Decision = {
      causes: [{ type: 'FieldValueForbidden', field: 'spec.trainer.numNodes', value: 4, detail: 'cannot be rebuilt' }],
      warnings: [],
    };
    const { d } = deps(async () => ({ kind: 'found', value: stored(2) }), refusal);
    const answer = await validateScale(review(4), d);
    assert.equal(answer.allowed, false);
    assert.equal(answer.decision, refusal);
  });

  for (const [what, read, detail] of [
    [
      'the read fails',
      { kind: 'failed', error: 'reading the TrainJob: HTTP 403' },
      /could not be read \(reading the TrainJob: HTTP 403\)/,
    ],
    ['the TrainJob is gone', { kind: 'absent' }, /was not found/],
    [
      'the TrainJob was replaced (another uid)',
      { kind: 'found', value: { ...stored(2), metadata: { ...stored(2).metadata, uid: 'u-2' } } },
      /was replaced/,
    ],
  ] as const) {
    it(`is refused for now when ${what}, without asking the Validator`, async () => {
      const { d, asked } = deps(async () => read as never);
      const answer = await validateScale(review(4), d);
      assert.equal(answer.allowed, false);
      assert.equal(answer.decision?.transient, true);
      assert.match(answer.decision?.causes[0].detail ?? '', detail);
      assert.match(answer.decision?.causes[0].detail ?? '', /refused for now and can be applied again/);
      assert.equal(asked.length, 0);
    });
  }

  it('of another resource, or not an UPDATE: admitted without a read', async () => {
    const { d, reads } = deps(async () => ({ kind: 'failed', error: 'never read' }));
    assert.deepEqual(await validateScale(review(4, 2, { resource: { group: 'apps', resource: 'deployments' } }), d), {
      allowed: true,
    });
    assert.deepEqual(await validateScale(review(4, 2, { operation: 'CREATE' }), d), { allowed: true });
    assert.deepEqual(reads, []);
  });

  it('without cluster access: admitted with a warning that it was not judged', async () => {
    const { d } = deps(undefined);
    assert.deepEqual(await validateScale(review(4), d), { allowed: true, warnings: [SCALE_NOT_JUDGED] });
  });
});
