// hasLongDigitRun decides when the exact parser is needed: it must agree with /\d{16}/ exactly.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { hasLongDigitRun, parseJsonLossless } from '../../src/json/lossless.ts';

const REFERENCE = /\d{16}/;

describe('hasLongDigitRun', () => {
  it('agrees with /\\d{16}/ for every run length 14-18 at every offset 0-40, in texts of every length around it', () => {
    for (let offset = 0; offset <= 40; offset++) {
      for (let run = 14; run <= 18; run++) {
        for (const tail of [0, 1, 7, 16]) {
          const text = 'x'.repeat(offset) + '7'.repeat(run) + 'y'.repeat(tail);
          assert.equal(hasLongDigitRun(text), REFERENCE.test(text), `offset ${offset}, run ${run}, tail ${tail}`);
        }
      }
    }
  });
  it('agrees with /\\d{16}/ on random texts of digits and separators', () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom('0', '5', '9', 'a', ' ', '"', '-', '.'), { maxLength: 200 }), (chars) => {
        const text = chars.join('');
        return hasLongDigitRun(text) === REFERENCE.test(text);
      }),
      { numRuns: 2000 },
    );
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 40 }), { maxLength: 12 }), (runs) => {
        const text = runs.map((n) => '1'.repeat(n)).join(',');
        return hasLongDigitRun(text) === REFERENCE.test(text);
      }),
      { numRuns: 2000 },
    );
  });
  it('sends a 16-digit integer at any offset to the exact parser', () => {
    for (let pad = 0; pad < 20; pad++) {
      const v = parseJsonLossless(`{"${'k'.repeat(pad)}":9007199254740993}`) as Record<string, unknown>;
      assert.equal(v['k'.repeat(pad)], 9007199254740993n);
    }
  });
});
