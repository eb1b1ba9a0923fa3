// Slots: at most N at once, the rest in order; an abort while waiting takes no slot.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Slots } from '../../src/cluster/slots.ts';

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('Slots', () => {
  it('grants N at once, then one per release, first come first served', async () => {
    const slots = new Slots(2);
    const order: number[] = [];
    const never = new AbortController().signal;
    await slots.acquire(never);
    await slots.acquire(never);
    const waiting = [3, 4].map((n) => slots.acquire(never).then(() => order.push(n)));
    await tick();
    assert.deepEqual(order, []);
    slots.release();
    await tick();
    assert.deepEqual(order, [3]);
    slots.release();
    await Promise.all(waiting);
    assert.deepEqual(order, [3, 4]);
  });

  it('an abort while waiting rejects with its reason and leaves the queue; an aborted signal takes no slot', async () => {
    const slots = new Slots(1);
    await slots.acquire(new AbortController().signal);
    const ac = new AbortController();
    const waiting = slots.acquire(ac.signal);
    ac.abort(new Error('deadline'));
    await assert.rejects(waiting, { message: 'deadline' });
    await assert.rejects(slots.acquire(AbortSignal.abort(new Error('already'))), { message: 'already' });
    // The one release goes to the next acquire, not to the aborted waiter.
    slots.release();
    await slots.acquire(new AbortController().signal);
    let granted = false;
    void slots.acquire(new AbortController().signal).then(() => (granted = true));
    await tick();
    assert.equal(granted, false, 'one slot: taken');
  });
});
