// Issue 8 at the HTTP edge, with the real validator: the AdmissionReview answers for suspend and
// scale in one update while pods run (admitted, with warnings), a running-to-running change
// (denied, without the rebuild warning), a negative count and a finished job (denied), and a JobSet
// read that fails (admitted, with a warning).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildPolicy } from '../../src/rules/policy.ts';
import type { ScaleCheckResult } from '../../src/rules/contract.ts';
import { OMIT_VALUE } from '../../src/field/errors.ts';
import { createValidator } from '../../src/rules/validator.ts';
import { post, review, testServer, trainJob, VALIDATE } from './fixtures.ts';

const policy = buildPolicy();
const twoPods: ScaleCheckResult = {
  causes: [],
  warnings: [
    'JobSet team-a/my-job still has 2 pods (2 pending or running; Job my-job-node-0: 2 active): the rebuild waits',
  ],
};
const refusal = (detail: string, transient?: true): ScaleCheckResult => ({
  causes: [{ type: 'FieldValueForbidden', field: 'spec.trainer.numNodes', value: OMIT_VALUE, detail }],
  warnings: [],
  ...(transient ? { transient } : {}),
});
/** The cluster judgment stood in for (scale-check.ts meets the API server in test/e2e/scale-carried-out.test.ts). */
const server = (judged: ScaleCheckResult | Error) =>
  testServer({
    validator: createValidator({
      policy,
      scaleCheck: async () => (judged instanceof Error ? Promise.reject(judged) : judged),
    }),
  });
const running = (
  trainer: Record<string, unknown> = { image: 'ghcr.io/acme/train:1.0', numNodes: 1 },
  status?: unknown,
) => ({
  ...trainJob({ suspend: false, trainer }),
  ...(status ? { status } : {}),
});
const condition = (type: string, reason: string) => ({
  type,
  status: 'True',
  reason,
  message: reason,
  lastTransitionTime: '2026-11-30T08:00:00Z',
});

describe('numNodes at the validating webhook (issue 8)', () => {
  it('suspend and scale in one update while 2 pods run: allowed; warns about the rebuild (not "on resume") and the 2 pods', async () => {
    const { app } = await server(twoPods);
    const res = await post(
      app,
      VALIDATE,
      review('UPDATE', {
        oldObject: running(),
        object: trainJob({ suspend: true, trainer: { image: 'ghcr.io/acme/train:1.0', numNodes: 2 } }),
      }),
    );
    const { allowed, warnings, status } = res.json.response;
    assert.equal(allowed, true, JSON.stringify(status));
    assert.equal(warnings.length, 2, warnings.join('\n'));
    assert.match(
      warnings[0],
      /^spec\.trainer\.numNodes changes from 1 to 2: the JobSet is rebuilt with 2 nodes as soon as it is suspended and none of its pods runs or is terminating/,
    );
    assert.ok(!warnings.some((w: string) => /on resume/.test(w)));
    assert.match(
      warnings[1],
      /^JobSet team-a\/my-job still has 2 pods \(2 pending or running; Job my-job-node-0: 2 active\): the rebuild waits/,
    );
  });

  it('a judgment that fails refuses for now: 503 ServiceUnavailable (no Retry-After: client-go would retry it silently), the cause on spec.trainer.numNodes', async () => {
    const { app } = await server(new Error('connect ECONNREFUSED'));
    const res = await post(
      app,
      VALIDATE,
      review('UPDATE', {
        oldObject: running(),
        object: trainJob({ suspend: true, trainer: { image: 'ghcr.io/acme/train:1.0', numNodes: 2 } }),
      }),
    );
    const { allowed, status } = res.json.response;
    assert.equal(allowed, false);
    assert.equal(status.code, 503);
    assert.equal(status.reason, 'ServiceUnavailable');
    assert.equal(status.details.retryAfterSeconds, undefined);
    assert.equal(status.details.causes[0].field, 'spec.trainer.numNodes');
    assert.match(
      status.message,
      /^TrainJob\.trainer\.kubeflow\.org "my-job" cannot be changed now: spec\.trainer\.numNodes: Forbidden: the change could not be judged \(connect ECONNREFUSED\)/,
    );
  });

  it('no reconciler leads: 503, transient, with the reason', async () => {
    const { app } = await server(
      refusal('no reconciler leads to carry the rebuild out: its Lease does not exist', true),
    );
    const res = await post(
      app,
      VALIDATE,
      review('UPDATE', {
        oldObject: trainJob({ suspend: true, trainer: { image: 'ghcr.io/acme/train:1.0', numNodes: 1 } }),
        object: trainJob({ suspend: true, trainer: { image: 'ghcr.io/acme/train:1.0', numNodes: 2 } }),
      }),
    );
    const { allowed, status, warnings } = res.json.response;
    assert.equal(allowed, false);
    assert.equal(status.code, 503);
    assert.match(status.message, /no reconciler leads to carry the rebuild out/);
    assert.equal(warnings, undefined);
  });

  it('a change that cannot be carried out: 403 Forbidden with the reason, and no rebuild warning', async () => {
    const { app } = await server(refusal('JobSet my-job has workspace claims; copy the data out'));
    const res = await post(
      app,
      VALIDATE,
      review('UPDATE', {
        oldObject: trainJob({ suspend: true, trainer: { image: 'ghcr.io/acme/train:1.0', numNodes: 1 } }),
        object: trainJob({ suspend: true, trainer: { image: 'ghcr.io/acme/train:1.0', numNodes: 2 } }),
      }),
    );
    const { allowed, status, warnings } = res.json.response;
    assert.equal(allowed, false);
    assert.equal(status.code, 403);
    assert.equal(status.details.retryAfterSeconds, undefined);
    assert.match(status.message, /spec\.trainer\.numNodes: Forbidden: JobSet my-job has workspace claims/);
    assert.equal(warnings, undefined);
  });

  it('running on both sides: denied 403, says to suspend, no rebuild warning', async () => {
    const { app } = await server(twoPods);
    const res = await post(
      app,
      VALIDATE,
      review('UPDATE', { oldObject: running(), object: running({ image: 'ghcr.io/acme/train:1.0', numNodes: 2 }) }),
    );
    const { allowed, warnings, status } = res.json.response;
    assert.equal(allowed, false);
    assert.equal(status.code, 403);
    assert.match(
      status.message,
      /spec\.trainer\.numNodes: Forbidden: numNodes may only change while the TrainJob is suspended/,
    );
    assert.equal(warnings, undefined);
  });

  it('to a negative count: denied 422, says what is allowed', async () => {
    const { app } = await server(twoPods);
    const res = await post(
      app,
      VALIDATE,
      review('UPDATE', { object: trainJob({ trainer: { image: 'ghcr.io/acme/train:1.0', numNodes: -1 } }) }),
    );
    const { allowed, warnings, status } = res.json.response;
    assert.equal(allowed, false);
    assert.equal(status.code, 422);
    assert.match(status.message, /spec\.trainer\.numNodes: Invalid value: -1: numNodes may only change to 0 or more/);
    assert.equal(warnings, undefined);
  });

  it('on a finished job (Complete): denied 403, says it has finished and will not run again', async () => {
    const { app } = await server(twoPods);
    const done = (numNodes: number) => ({
      ...trainJob({ trainer: { image: 'ghcr.io/acme/train:1.0', numNodes } }),
      status: { conditions: [condition('Complete', 'JobSetCompleted')] },
    });
    const res = await post(app, VALIDATE, review('UPDATE', { oldObject: done(1), object: done(2) }));
    const { allowed, status } = res.json.response;
    assert.equal(allowed, false);
    assert.equal(status.code, 403);
    assert.match(
      status.message,
      /numNodes may not change once the TrainJob has finished .*Trainer never reconciles it again/,
    );
  });
});
