// Issue 8 at the HTTP edge, with the real validator: the AdmissionReview answers for suspend and
// scale in one update while pods run (admitted, with warnings), a running-to-running change
// (denied, without the rebuild warning), a negative count and a finished job (denied), and a JobSet
// read that fails (admitted, with a warning).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildPolicy } from '../../src/rules/policy.ts';
import type { JobSetRead } from '../../src/rules/jobset-pods.ts';
import { createValidator } from '../../src/rules/validator.ts';
import { post, review, testServer, trainJob, VALIDATE } from './fixtures.ts';

const policy = buildPolicy();
const twoPods: JobSetRead = {
  kind: 'read',
  jobs: [{ metadata: { name: 'my-job-node-0' }, status: { active: 2, ready: 2 } }],
};
const server = (read: JobSetRead | Error) =>
  testServer({
    validator: createValidator({
      policy,
      readJobSet: async () => (read instanceof Error ? Promise.reject(read) : read),
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

  it('a JobSet read that fails does not refuse: allowed with a warning', async () => {
    const { app } = await server(new Error('connect ECONNREFUSED'));
    const res = await post(
      app,
      VALIDATE,
      review('UPDATE', {
        oldObject: running(),
        object: trainJob({ suspend: true, trainer: { image: 'ghcr.io/acme/train:1.0', numNodes: 2 } }),
      }),
    );
    assert.equal(res.json.response.allowed, true);
    assert.ok(res.json.response.warnings.some((w: string) => /could not be counted \(connect ECONNREFUSED\)/.test(w)));
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
