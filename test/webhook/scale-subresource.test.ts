// A write to a TrainJob's scale subresource is judged as the numNodes update it makes: the Scale
// becomes the stored TrainJob with numNodes = spec.replicas, and the Validator sees that TrainJob
// against the stored one. A read that fails, a TrainJob gone or replaced: refused for now, in one
// general text to a caller not known to be the API server (it must not learn whether a TrainJob
// exists). The read waits on the count-change reads' budget: Scale reviews stuck on a read never
// shed a write that needs no read. A scale of anything else, or without cluster access: admitted
// (the latter with a warning).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  SCALE_NOT_JUDGED,
  SCALE_NOT_READ_GENERAL,
  type WithheldScale,
  scaleReplicas,
  scaleRequestOf,
  trainJobAfterScale,
  validateScale,
  type ScaleDeps,
} from '../../src/webhook/scale-subresource.ts';
import type { AdmissionReviewRequest } from '../../src/webhook/envelope.ts';
import type { Decision } from '../../src/rules/contract.ts';
import { buildPolicy } from '../../src/rules/policy.ts';
import { createValidator } from '../../src/rules/validator.ts';
import { createMetrics } from '../../src/observability/metrics.ts';
import { trainJobReader, type TrainJobReader } from '../../src/scale/reads/trainjob-read.ts';
import type { ApiClient } from '../../src/cluster/api-request.ts';
import { countChangeReadsBudget, DecisionBudget, decisionWeight } from '../../src/webhook/decision-budget.ts';
import { buildAdmissionServer } from '../../src/webhook/server.ts';
import { captureLogs, review as fixtureReview, testCert, trainJob, VALIDATE } from './fixtures.ts';

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
function deps(
  read: ScaleDeps<Answer>['readTrainJob'],
  verdict: Decision = { causes: [], warnings: [] },
  over: Partial<ScaleDeps<Answer>> = {},
) {
  const asked: { object: Obj; oldObject: Obj }[] = [];
  const reads: string[] = [];
  const withheld: WithheldScale[] = [];
  const d: ScaleDeps<Answer> = {
    ...(read
      ? {
          readTrainJob: async (target) => {
            reads.push(`${target.namespace}/${target.name}`);
            return read(target);
          },
        }
      : {}),
    validate: async (object, oldObject) => {
      asked.push({ object, oldObject });
      return verdict;
    },
    answer: (decision, judged) => ({ allowed: decision.causes.length === 0, decision, judged }),
    allowed: (warnings) => ({ allowed: true, ...(warnings ? { warnings } : {}) }),
    withheld: (details) => withheld.push(details),
    // A version that differs is read again three times, without the pauses.
    rereadAfterMs: [0, 0, 0],
    ...over,
  };
  return { d, asked, reads, withheld };
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
    assert.deepEqual(reads, ['ml/llama']);
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

  const unjudged = [
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
  ] as const;
  for (const [what, read, detail] of unjudged) {
    it(`is refused for now when ${what}, without asking the Validator; the API server is told why`, async () => {
      const { d, asked, reads, withheld } = deps(async () => read as never, undefined, { callerAuthenticated: true });
      const answer = await validateScale(review(4), d);
      assert.equal(answer.allowed, false);
      assert.equal(answer.decision?.transient, true);
      assert.match(answer.decision?.causes[0].detail ?? '', detail);
      assert.match(answer.decision?.causes[0].detail ?? '', /refused for now and can be applied again/);
      assert.equal(asked.length, 0);
      assert.deepEqual([...new Set(reads)], ['ml/llama']);
      assert.deepEqual(withheld, [], 'nothing withheld');
    });
  }

  it('to a caller not known to be the API server: not found, a failed read, another uid or none get one general text, the log the reason', async () => {
    const noUid = review(4);
    delete (noUid.oldObject as Obj).metadata.uid;
    const farFuture = review(4, 2, { oldObject: scale(2, '99999999999') });
    const cases: [string, unknown, AdmissionReviewRequest][] = [
      ...unjudged.map(([what, read]) => [what, read, review(4)] as [string, unknown, AdmissionReviewRequest]),
      ['the Scale names no uid (the TrainJob exists)', { kind: 'found', value: stored(2) }, noUid],
      [
        'the Scale names a far-future version and another uid',
        { kind: 'found', value: stored(2) },
        {
          ...farFuture,
          oldObject: {
            ...(farFuture.oldObject as Obj),
            metadata: { ...(farFuture.oldObject as Obj).metadata, uid: 'u-forged' },
          },
        } as AdmissionReviewRequest,
      ],
    ];
    const texts = new Set<string>();
    for (const [what, read, req] of cases) {
      const { d, asked, withheld } = deps(async () => read as never);
      const answer = await validateScale(req, d);
      assert.equal(answer.allowed, false, what);
      assert.equal(answer.decision?.transient, true, what);
      texts.add(answer.decision?.causes[0].detail ?? '');
      assert.equal(asked.length, 0, what);
      assert.equal(withheld.length, 1, what);
      assert.equal(withheld[0].name, 'llama');
    }
    assert.deepEqual(
      [...texts],
      [`${SCALE_NOT_READ_GENERAL}; the scale is refused for now and can be applied again in a few seconds`],
    );
  });

  it('the API server too is judged only with the stored uid and version (it always sends both)', async () => {
    const noUid = review(4);
    delete (noUid.oldObject as Obj).metadata.uid;
    const { d, asked } = deps(async () => ({ kind: 'found', value: stored(2) }), undefined, {
      callerAuthenticated: true,
    });
    const answer = await validateScale(noUid, d);
    assert.equal(answer.allowed, false);
    assert.match(answer.decision?.causes[0].detail ?? '', /the review names no uid/);
    assert.equal(asked.length, 0);
  });

  it('reads the watch cache (resourceVersion=0), never the version the Scale names: with the stored uid, a far-future one is judged on the stored TrainJob after three looks again', async () => {
    // Found by review: the GET sent `?resourceVersion=<the Scale's>`, and for a version ahead of
    // the watch cache the API server waits up to 3 s, so forged Scales held a read slot each.
    const sent: string[] = [];
    const api: ApiClient = {
      server: new URL('http://127.0.0.1'),
      request: async (path) => {
        sent.push(path);
        return { status: 200, body: Buffer.from(JSON.stringify(stored(2))) };
      },
      stream: () => Promise.reject(new Error('no watches here')),
    };
    const { d, asked } = deps(trainJobReader(api));
    const answer = await validateScale(review(4, 2, { oldObject: scale(2, '99999999999') }), d);
    // Its uid is the stored one, so the cache is looked at again (three times), never at its version.
    assert.deepEqual(
      sent,
      Array(4).fill('/apis/trainer.kubeflow.org/v1alpha1/namespaces/ml/trainjobs/llama?resourceVersion=0'),
    );
    // The uid is the gate; the version only says when to look again (stored-version.ts).
    assert.equal(answer.allowed, true);
    assert.equal(asked.length, 1);
    assert.equal(asked[0].oldObject.spec.trainer.numNodes, 2, 'judged against the stored TrainJob');
  });

  it('a busy TrainJob whose stored version keeps moving (status writes around a rebuild): with the stored uid, judged on the stored one', async () => {
    let rv = 10;
    const { d, asked, reads } = deps(async () => ({
      kind: 'found',
      value: { ...stored(2), metadata: { ...stored(2).metadata, resourceVersion: String(rv++) } },
    }));
    assert.equal((await validateScale(review(4), d)).allowed, true);
    assert.equal(reads.length, 4, 'looked at once, then three times again');
    assert.equal(asked.length, 1);
  });

  it('a watch cache a moment behind: read again until it has the version the Scale was made from, then judged', async () => {
    const versions = ['5', '6', '7'];
    const { d, asked, reads } = deps(async () => ({
      kind: 'found',
      value: { ...stored(2), metadata: { ...stored(2).metadata, resourceVersion: versions.shift() ?? '7' } },
    }));
    assert.equal((await validateScale(review(4), d)).allowed, true);
    assert.equal(reads.length, 3);
    assert.equal(asked.length, 1);
  });

  it('another uid is not read again: one read, refused for now', async () => {
    const { d, reads } = deps(async () => ({
      kind: 'found',
      value: { ...stored(2), metadata: { ...stored(2).metadata, uid: 'u-2', resourceVersion: '8' } },
    }));
    assert.equal((await validateScale(review(4), d)).allowed, false);
    assert.equal(reads.length, 1);
  });

  it('moves onto the count-change reads budget before the read: refused for now with no read when that is full', async () => {
    let holds = 0;
    const full = deps(async () => ({ kind: 'found', value: stored(2) }), undefined, {
      holdWhileReading: () => (holds++, false),
    });
    const answer = await validateScale(review(4), full.d);
    assert.equal(answer.allowed, false);
    assert.equal(answer.decision?.transient, true);
    assert.match(answer.decision?.causes[0].detail ?? '', /judging as many count changes as it may at once/);
    assert.deepEqual(full.reads, [], 'nothing read');
    assert.equal(holds, 1);
    const room = deps(async () => ({ kind: 'found', value: stored(2) }), undefined, {
      holdWhileReading: () => (holds++, true),
    });
    assert.equal((await validateScale(review(4), room.d)).allowed, true);
    assert.deepEqual(room.reads, ['ml/llama']);
  });

  it('of another resource, or not an UPDATE: admitted without a read or a hold', async () => {
    let holds = 0;
    const { d, reads } = deps(async () => ({ kind: 'failed', error: 'never read' }), undefined, {
      holdWhileReading: () => (holds++, false),
    });
    assert.deepEqual(await validateScale(review(4, 2, { resource: { group: 'apps', resource: 'deployments' } }), d), {
      allowed: true,
    });
    assert.deepEqual(await validateScale(review(4, 2, { operation: 'CREATE' }), d), { allowed: true });
    assert.deepEqual(reads, []);
    assert.equal(holds, 0);
  });

  it('without cluster access: admitted with a warning that it was not judged', async () => {
    const { d } = deps(undefined);
    assert.deepEqual(await validateScale(review(4), d), { allowed: true, warnings: [SCALE_NOT_JUDGED] });
  });
});

describe('Scale reviews waiting on the TrainJob read hold the count-change reads budget', () => {
  // Found by review: the read ran on the decision budget, so forged Scale reviews stuck on a read
  // that hangs (padded to weigh the most) got a label-only update shed with 429.
  it('while their reads hang, a write that needs no read is answered; past that budget a Scale gets 503 unread', async () => {
    const labelOnly = JSON.stringify(
      fixtureReview('UPDATE', { oldObject: trainJob(), object: trainJob({}, { labels: { team: 'a' } }) }),
    );
    const scaleOf = (replicas: number) => ({
      apiVersion: 'autoscaling/v1',
      kind: 'Scale',
      metadata: {
        name: 'my-job',
        namespace: 'team-a',
        uid: '6f1c2a4e-0d7b-4a51-9a57-1f3c0b9e2d10',
        resourceVersion: '48213',
        // Padded so that a Scale review weighs at least what the label-only update does.
        annotations: { pad: 'x'.repeat(labelOnly.length) },
      },
      spec: { replicas },
    });
    const forged = fixtureReview('UPDATE', {
      kind: { group: 'autoscaling', version: 'v1', kind: 'Scale' },
      object: scaleOf(3),
      oldObject: scaleOf(1),
    }) as { request: Record<string, unknown> };
    forged.request.subResource = 'scale';
    const scaleReview = JSON.stringify(forged);
    const weightOf = (text: string) => decisionWeight(text.length, Math.ceil(text.length / 2));
    const w = weightOf(scaleReview);
    assert.ok(w >= weightOf(labelOnly) && scaleReview.length <= 8192, 'the heaviest, weighed unscanned');
    // Room for three Scale reviews in the decision budget, two in the count changes'.
    const decisionBudget = new DecisionBudget(3 * w, 0);
    const countChangeBudget = countChangeReadsBudget(2 * w);
    let reads = 0;
    let reached: () => void = () => {};
    let unstick!: () => void;
    const stuck = new Promise<void>((resolve) => (unstick = resolve));
    // The API server that does not answer the GET of the TrainJob until the test lets it go.
    const readTrainJob: TrainJobReader = async () => {
      reads++;
      reached();
      await stuck;
      return { kind: 'found', value: trainJob() };
    };
    const { logger } = captureLogs();
    const app = await buildAdmissionServer(
      { tls: await testCert(), decisionBudget, countChangeBudget },
      { validator: createValidator({ policy: buildPolicy() }), logger, metrics: createMetrics(), readTrainJob },
    );
    const post = (payload: string) =>
      app.inject({ method: 'POST', url: VALIDATE, headers: { 'content-type': 'application/json' }, payload });

    const waiting: Promise<unknown>[] = [];
    const early: { statusCode: number; code?: number }[] = [];
    for (let i = 0; i < 3; i++) {
      // Each is sent once the one before has reached its read or been answered.
      const atRead = new Promise<'read'>((resolve) => (reached = () => resolve('read')));
      const answered = post(scaleReview);
      waiting.push(answered);
      const first = await Promise.race([atRead, answered]);
      if (first !== 'read') early.push({ statusCode: first.statusCode, code: first.json().response?.status?.code });
    }
    const noRead = await post(labelOnly);
    const stillStuck = reads;
    unstick();
    await Promise.all(waiting);

    assert.equal(noRead.statusCode, 200, noRead.body);
    assert.equal(noRead.json().response.allowed, true, noRead.body);
    assert.equal(stillStuck, 2, 'two Scale reviews were waiting on their reads when it was answered');
    assert.deepEqual(early, [{ statusCode: 200, code: 503 }]);
    assert.equal(reads, 2, 'the refused one read nothing');
    await app.close();
    assert.equal(decisionBudget.used, 0);
    assert.equal(countChangeBudget.used, 0);
  });
});
