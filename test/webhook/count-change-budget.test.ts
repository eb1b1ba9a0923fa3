// Count changes waiting on cluster reads hold their own budget, not the decision budget
// (decision-budget.ts moveHeld, issue 26): while their reads are stuck (a slow API server, or
// forged count changes anyone who reaches the port can send), a write that needs no read is still
// answered, and count changes past their budget are refused for now (503) without a read.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildPolicy } from '../../src/rules/policy.ts';
import type { ScaleCheck } from '../../src/rules/contract.ts';
import { createValidator } from '../../src/rules/validator.ts';
import { createMetrics } from '../../src/observability/metrics.ts';
import { buildAdmissionServer } from '../../src/webhook/server.ts';
import { countChangeReadsBudget, DecisionBudget, decisionWeight } from '../../src/webhook/decision-budget.ts';
import { captureLogs, review, testCert, trainJob, VALIDATE } from './fixtures.ts';

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
