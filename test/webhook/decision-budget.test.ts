// The decision budget's rules (src/webhook/decision-budget.ts): what is refused with 413, what is
// shed with 429, what waits and in which order, and the room kept for light bodies.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PassThrough } from 'node:stream';
import { IncomingMessage, ServerResponse } from 'node:http';
import {
  countChangeReadsBudget,
  DecisionBudget,
  decisionWeight,
  holdUntilDone,
  LIGHT_WEIGHT,
  moveHeld,
} from '../../src/webhook/decision-budget.ts';

const MiB = 1024 * 1024;
const never = () => assert.fail('granted, but it was not waiting');

describe('DecisionBudget', () => {
  it('weighs a body as its bytes plus 128 a value', () => {
    assert.equal(decisionWeight(1000, 10), 1000 + 1280);
  });

  it('refuses with 413 a body heavier than the budget less its reserve, even when the budget is empty', () => {
    const budget = new DecisionBudget(128 * MiB, 16 * MiB);
    assert.equal(budget.take(112 * MiB, true, never), undefined);
    budget.give(112 * MiB);
    const refused = budget.take(112 * MiB + 1, true, never);
    assert.ok(typeof refused === 'object');
    assert.equal(refused.statusCode, 413);
    assert.equal(budget.used, 0);
  });

  it('keeps the reserve for light bodies: a heavy one that does not fit is shed (429) unless it may wait', () => {
    const budget = new DecisionBudget(32 * MiB, 16 * MiB);
    assert.equal(budget.take(12 * MiB, false, never), undefined);
    const shed = budget.take(8 * MiB, false, never);
    assert.ok(typeof shed === 'object');
    assert.equal(shed.statusCode, 429);
    // Light bodies still fit, into the reserve, up to the whole budget.
    const light = Array.from({ length: 21 }, () => budget.take(LIGHT_WEIGHT, false, never));
    assert.deepEqual(new Set(light.map((t) => (typeof t === 'object' ? t.statusCode : t))), new Set([undefined, 429]));
    assert.equal(budget.used, 32 * MiB);
  });

  it('heavy bodies that may wait are granted first come, first served, as room is given back', () => {
    const budget = new DecisionBudget(32 * MiB, 16 * MiB);
    const granted: string[] = [];
    assert.equal(budget.take(10 * MiB, true, never), undefined);
    assert.equal(
      budget.take(10 * MiB, true, () => granted.push('a')),
      'waiting',
    );
    assert.equal(
      budget.take(2 * MiB, true, () => granted.push('b')),
      'waiting',
      'not ahead of the one waiting',
    );
    assert.equal(budget.take(LIGHT_WEIGHT, true, never), undefined, 'a light body never queues');
    budget.give(10 * MiB);
    assert.deepEqual(granted, ['a', 'b']);
    assert.equal(budget.used, 12 * MiB + LIGHT_WEIGHT);
  });

  it('a withdrawn wait leaves the queue, and those behind it that fit are granted', () => {
    const budget = new DecisionBudget(32 * MiB, 16 * MiB);
    const granted: string[] = [];
    assert.equal(budget.take(6 * MiB, true, never), undefined);
    const a = () => granted.push('a');
    assert.equal(budget.take(12 * MiB, true, a), 'waiting');
    assert.equal(
      budget.take(4 * MiB, true, () => granted.push('b')),
      'waiting',
    );
    assert.equal(budget.withdraw(a), true);
    assert.deepEqual(granted, ['b']);
    assert.equal(budget.waiting, 0);
    assert.equal(budget.withdraw(a), false, 'once');
    assert.equal(budget.used, 10 * MiB);
  });

  it("moveHeld moves what a response holds to the count changes' budget when it fits there, and back on close to that one", () => {
    const budget = new DecisionBudget(32 * MiB, 16 * MiB);
    const reads = countChangeReadsBudget(3 * MiB);
    const res = () => new ServerResponse(new IncomingMessage(new PassThrough() as never));
    const a = res();
    const b = res();
    for (const r of [a, b]) {
      assert.equal(budget.take(2 * MiB, false, never), undefined);
      holdUntilDone(budget, r, 2 * MiB);
    }
    assert.equal(moveHeld(a, reads), true);
    assert.equal(budget.used, 2 * MiB, 'given back here');
    assert.equal(reads.used, 2 * MiB, 'taken there');
    assert.equal(moveHeld(b, reads), false, 'no room there: nothing moves');
    assert.equal(budget.used, 2 * MiB);
    assert.equal(reads.used, 2 * MiB);
    a.emit('close');
    b.emit('close');
    assert.equal(reads.used, 0);
    assert.equal(budget.used, 0);
  });
  it('moveHeld leaves a hold heavier than all of the count changes budget where it is (it could never move: a retry would be refused for ever)', () => {
    const budget = new DecisionBudget(64 * MiB, 16 * MiB);
    const reads = countChangeReadsBudget(3 * MiB);
    const big = new ServerResponse(new IncomingMessage(new PassThrough() as never));
    assert.equal(budget.take(4 * MiB, true, never), undefined);
    holdUntilDone(budget, big, 4 * MiB);
    assert.equal(moveHeld(big, reads), true, 'judged on the budget that admitted it');
    assert.equal(budget.used, 4 * MiB);
    assert.equal(reads.used, 0);
    big.emit('close');
    assert.equal(budget.used, 0);
  });
});
