import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { elapsed, StepLines } from '../../src/plugin/progress-line.ts';

describe('progress lines', () => {
  it('not a terminal: one line per step as it ends, with its elapsed time', () => {
    let out = '';
    let t = 0;
    const lines = new StepLines({ write: (s) => (out += s), isTTY: false }, () => t);
    lines.step('waiting for the pods to stop', '2 pods left');
    t = 3_000;
    lines.step('waiting for the pods to stop', '1 pod left');
    t = 12_000;
    lines.step('setting numNodes to 2');
    t = 12_300;
    lines.end('✓');
    assert.equal(out, '✓ waiting for the pods to stop (12s)\n✓ setting numNodes to 2 (0.3s)\n');
  });
  it('elapsed', () => {
    assert.equal(elapsed(400), '0.4s');
    assert.equal(elapsed(65_000), '1m05s');
  });
});
