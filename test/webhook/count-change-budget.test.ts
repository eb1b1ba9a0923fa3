// Count changes waiting on cluster reads hold their own budget, not the decision budget
// (decision-budget.ts moveHeld, issue 26): while their reads are stuck (a slow API server, or
// forged count changes anyone who reaches the port can send), a write that needs no read is still
// answered, and count changes past their budget are refused for now (503) without a read.
import assert from 'node:assert/strict';
import { request } from 'node:https';
import { describe, it } from 'node:test';
import { buildPolicy } from '../../src/rules/policy.ts';
import type { ScaleCheck, Validator } from '../../src/rules/contract.ts';
import { createValidator } from '../../src/rules/validator.ts';
import { createMetrics } from '../../src/observability/metrics.ts';
import { buildAdmissionServer } from '../../src/webhook/server.ts';
import { countChangeReadsBudget, DecisionBudget, decisionWeight } from '../../src/webhook/decision-budget.ts';
import { captureLogs, review, testCert, trainJob, VALIDATE } from './fixtures.ts';
import { waitFor } from '../harness/wait.ts';

const countChange = JSON.stringify(
  review('UPDATE', {
    oldObject: trainJob(),
    object: trainJob({ trainer: { image: 'ghcr.io/acme/train:1.0', numNodes: 2 } }),
  }),
);
const labelOnly = JSON.stringify(
  review('UPDATE', { oldObject: trainJob(), object: trainJob({}, { labels: { team: 'a' } }) }),
);
/** As json-body.ts weighs a body this small: its bytes plus 128 for each two of them. */
const weightOf = (text: string) => decisionWeight(text.length, Math.ceil(text.length / 2));

describe('count changes waiting on reads hold their own budget', () => {
  it('while count-change reads are stuck, a write that needs no read is answered; past their budget count changes get 503 unread', async () => {
    const w = Math.max(weightOf(countChange), weightOf(labelOnly));
    assert.ok(countChange.length <= 8192 && labelOnly.length <= 8192, 'weighed unscanned');
    // Room for three such reviews in the decision budget, two in the count changes'.
    const decisionBudget = new DecisionBudget(3 * w, 0);
    const countChangeBudget = countChangeReadsBudget(2 * w);
    let reads = 0;
    let reached: () => void = () => {};
    let unstick!: () => void;
    const stuck = new Promise<void>((resolve) => (unstick = resolve));
    // The API server that does not answer: the judgment waits until the test lets it go.
    const scaleCheck: ScaleCheck = async () => {
      reads++;
      reached();
      await stuck;
      return { causes: [], warnings: [] };
    };
    const { logger } = captureLogs();
    const app = await buildAdmissionServer(
      { tls: await testCert(), decisionBudget, countChangeBudget },
      { validator: createValidator({ policy: buildPolicy(), scaleCheck }), logger, metrics: createMetrics() },
    );
    const post = (payload: string) =>
      app.inject({ method: 'POST', url: VALIDATE, headers: { 'content-type': 'application/json' }, payload });

    const waiting: Promise<unknown>[] = [];
    const early: { statusCode: number; code?: number }[] = [];
    for (let i = 0; i < 4; i++) {
      // Each is sent once the one before has reached its read or been answered.
      const atRead = new Promise<'read'>((resolve) => (reached = () => resolve('read')));
      const answered = post(countChange);
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
    assert.equal(stillStuck, 2, 'two count changes were waiting on their reads when it was answered');
    assert.deepEqual(early, [
      { statusCode: 200, code: 503 },
      { statusCode: 200, code: 503 },
    ]);
    assert.equal(reads, 2, 'the refused ones read nothing');
    await app.close();
    assert.equal(decisionBudget.used, 0);
    assert.equal(countChangeBudget.used, 0);
  });
});

describe('a count change whose client has gone', () => {
  it('reads nothing: it holds no budget once its client left, so it may not start reads past the budget', async () => {
    // No room at all for count changes: a connected one is refused for now without a read.
    const countChangeBudget = countChangeReadsBudget(1);
    const decisionBudget = new DecisionBudget();
    let reads = 0;
    const scaleCheck: ScaleCheck = async () => {
      reads++;
      return { causes: [], warnings: [] };
    };
    const real = createValidator({ policy: buildPolicy(), scaleCheck });
    // The rules decide only once the client has gone (as a slow decision or a client that sends and leaves).
    let entered!: () => void;
    const inValidator = new Promise<void>((resolve) => (entered = resolve));
    let judged!: (d: unknown) => void;
    const decided = new Promise((resolve) => (judged = resolve));
    let goneNow!: () => void;
    const gone = new Promise<void>((resolve) => (goneNow = resolve));
    const validator: Validator = {
      describe: () => real.describe(),
      async validate(input) {
        entered();
        await gone;
        const decision = await real.validate(input);
        judged(decision);
        return decision;
      },
    };
    const { logger } = captureLogs();
    const app = await buildAdmissionServer(
      { tls: await testCert(), decisionBudget, countChangeBudget },
      { validator, logger, metrics: createMetrics() },
    );
    const url = new URL(await app.listen({ host: '127.0.0.1', port: 0 }));
    try {
      const req = request({
        host: url.hostname,
        port: url.port,
        path: VALIDATE,
        method: 'POST',
        rejectUnauthorized: false,
        headers: { 'content-type': 'application/json' },
      });
      req.on('error', () => {});
      req.end(countChange);
      await inValidator;
      assert.ok(decisionBudget.used > 0, 'it holds its weight while decided');
      req.destroy();
      // The server has seen its client go once the response's 'close' gave its weight back.
      await waitFor('the client gone', () => decisionBudget.used === 0, { intervalMs: 5 });
      goneNow();
      await decided;
      assert.equal(reads, 0, 'a count change nobody waits for read the cluster past the budget');
      assert.equal(countChangeBudget.used, 0);
    } finally {
      await app.close();
    }
  });
});
