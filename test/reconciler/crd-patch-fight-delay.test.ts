// The CRD patch restorer restores at once, unless its restores keep being undone (a GitOps tool
// re-applying Trainer's CRD): then each further restore waits twice as long as the one before
// (1 s, 2 s, ...), up to 5 minutes, and a quiet minute starts over.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fightDelayMs } from '../../src/reconciler/crd-patch-restorer.ts';

describe('the restorer backs off from a fight over the CRD', () => {
  it('the first three restores of a minute wait for nothing', () => {
    assert.equal(fightDelayMs([], 0), 0);
    assert.equal(fightDelayMs([1000, 2000], 3000), 0);
  });
  it('after three, the next waits 1 s after the last, the one after 2 s; capped at 5 minutes', () => {
    assert.equal(fightDelayMs([1000, 2000, 3000], 3500), 500);
    assert.equal(fightDelayMs([1000, 2000, 3000, 4000], 4000), 2000);
    assert.equal(fightDelayMs([1000, 2000, 3000, 4000], 7000), 0);
    const many = Array.from({ length: 30 }, (_, i) => i * 100);
    assert.equal(fightDelayMs(many, 3000), 2900 + 300_000 - 3000);
  });
  it('restores older than a minute no longer count', () => {
    assert.equal(fightDelayMs([0, 1000, 2000, 3000], 62_500), 0);
  });
});
