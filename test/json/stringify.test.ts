// stringifyJson writes what JSON.stringify writes, at any depth.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { stringifyJson } from '../../src/json/stringify.ts';

describe('stringifyJson', () => {
  it('agrees with JSON.stringify on any value', () => {
    fc.assert(
      fc.property(
        fc.anything({
          maxDepth: 5,
          withNullPrototype: true,
          withDate: true,
          withMap: true,
          withSet: true,
          withSparseArray: true,
        }),
        (v) => {
          assert.equal(stringifyJson(v), JSON.stringify(v) ?? 'null');
        },
      ),
      { numRuns: 3000 },
    );
  });

  it('writes BigInts as plain integers', () => {
    assert.equal(stringifyJson({ a: [9223372036854775808n, -1n] }), '{"a":[9223372036854775808,-1]}');
  });

  it('writes values nested 100,000 deep', () => {
    let v: unknown = 1;
    for (let i = 0; i < 100_000; i++) v = i % 2 ? [v] : { a: v };
    const text = stringifyJson(v);
    // 50,000 times `{"a":…}` (6 characters) and 50,000 times `[…]` (2), around the 1.
    assert.equal(text.length, 50_000 * 6 + 50_000 * 2 + 1);
    assert.ok(text.startsWith('[{"a":[{"a":') && text.includes('[{"a":1}]}]') && text.endsWith('}]'));
    assert.throws(() => JSON.stringify(v), RangeError);
  });
});
