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
  it('prints a detail from the cluster without its terminal controls, on a terminal too', () => {
    let out = '';
    const lines = new StepLines({ write: (s) => (out += s), isTTY: true }, () => 0);
    lines.step(
      'waiting for Kueue to admit the job',
      'Kueue has not admitted Workload w: \u001b]0;pwned\u0007\u001b[2JFAKE',
    );
    lines.end('✓');
    // The line's own redraw (CR, erase line) and nothing else.
    const ownControls = out.replaceAll('\r\u001b[K', '');
    // eslint-disable-next-line no-control-regex -- no control but the newline that ends the line
    assert.doesNotMatch(ownControls, /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
    assert.match(
      out,
      // eslint-disable-next-line no-control-regex -- the line's own redraw
      /\r\u001b\[K✓ waiting for Kueue to admit the job: Kueue has not admitted Workload w: \^\[\]0;pwned\^G\^\[\[2JFAKE \(0\.0s\)\n$/,
    );
  });
  it('elapsed', () => {
    assert.equal(elapsed(400), '0.4s');
    assert.equal(elapsed(65_000), '1m05s');
  });
});
