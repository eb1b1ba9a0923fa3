// WindowCap (src/scale/reads/window-cap.ts): at most `limit` takes per window, a new window after it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { WindowCap } from '../../../src/scale/reads/window-cap.ts';

describe('WindowCap', () => {
  it('gives `limit` per window, none more until the window has passed', () => {
    let t = 1_000;
    const cap = new WindowCap(3, 1_000, () => t);
    assert.deepEqual(
      Array.from({ length: 5 }, () => cap.take()),
      [true, true, true, false, false],
    );
    t += 999;
    assert.equal(cap.take(), false);
    t += 1;
    assert.deepEqual(
      Array.from({ length: 4 }, () => cap.take()),
      [true, true, true, false],
    );
  });
  it('a clock that steps back starts a new window rather than none', () => {
    let t = 5_000;
    const cap = new WindowCap(1, 1_000, () => t);
    assert.equal(cap.take(), true);
    t = 10;
    assert.equal(cap.take(), true);
  });
});
