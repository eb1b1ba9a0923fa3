// The scan of JSON text before it is parsed (src/json/nesting-scan.ts): the depth it finds agrees
// with the parsed value's, brackets in strings (escaped quotes included) do not count, and the
// values it counts are the brackets that open, commas and colons outside strings.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { scanJsonText } from '../../src/json/nesting-scan.ts';
import { nestsDeeperThan } from '../../src/json/exact-parse.ts';

describe('scanJsonText', () => {
  const rows: Array<[string, number, { tooDeepAt: number; tokens: number }]> = [
    ['1', 0, { tooDeepAt: -1, tokens: 0 }],
    ['[]', 1, { tooDeepAt: -1, tokens: 1 }],
    ['[]', 0, { tooDeepAt: 0, tokens: 1 }],
    ['[[1,2],{"a":[3]}]', 3, { tooDeepAt: -1, tokens: 7 }],
    ['[[1,2],{"a":[3]}]', 2, { tooDeepAt: 12, tokens: 7 }],
    ['["[[[,:{"]', 1, { tooDeepAt: -1, tokens: 1 }],
    ['["a\\"[[", "\\\\"]', 1, { tooDeepAt: -1, tokens: 2 }],
    ['["\\\\\\"[["]', 1, { tooDeepAt: -1, tokens: 1 }],
    ['["unterminated [[[', 1, { tooDeepAt: -1, tokens: 1 }],
  ];
  for (const [text, maxDepth, want] of rows) {
    it(`${JSON.stringify(text)} within ${maxDepth}: ${JSON.stringify(want)}`, () => {
      assert.deepEqual(scanJsonText(text, maxDepth), want);
    });
  }

  it('agrees with the parsed value on whether it nests deeper than the bound (property)', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 8 }), fc.integer({ min: 0, max: 9 }), (value, maxDepth) => {
        const text = JSON.stringify(value);
        assert.equal(scanJsonText(text, maxDepth).tooDeepAt !== -1, nestsDeeperThan(JSON.parse(text), maxDepth));
      }),
      { numRuns: 2000 },
    );
  });
});
