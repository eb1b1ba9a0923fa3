// Lossless JSON: exact integers beyond 2^53, plain parsing otherwise.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { JsonDepthError, parseJsonLossless, stringifyJsonLossless } from '../../src/json/lossless.ts';

describe('parseJsonLossless', () => {
  const cases: [string, unknown][] = [
    ['{"a": 9007199254740993}', { a: 9007199254740993n }],
    ['{"a": -9007199254740993}', { a: -9007199254740993n }],
    ['{"a": 9223372036854775807}', { a: 9223372036854775807n }],
    ['{"a": 9007199254740991}', { a: 9007199254740991 }], // the largest safe integer stays a number
    ['{"a": 1e20}', { a: 1e20 }], // not an integer literal: a double, as in Go
    // eslint-disable-next-line no-loss-of-precision -- deliberate: a fraction past 2^53 stays a (rounded) double
    ['{"a": 12345678901234567.5}', { a: 12345678901234567.5 }],
    ['{"a": "12345678901234567890", "b": 1}', { a: '12345678901234567890', b: 1 }],
    ['[1, 2.5, "x", null, true]', [1, 2.5, 'x', null, true]],
  ];
  for (const [text, want] of cases) it(text, () => assert.deepEqual(parseJsonLossless(text), want));
  it('keeps a __proto__ key as plain data (no prototype change)', () => {
    const v = parseJsonLossless('{"__proto__": {"polluted": 1}, "big": 99999999999999999}') as Record<string, unknown>;
    assert.equal(Object.getPrototypeOf(v), Object.prototype);
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
  });
  it('throws on malformed JSON', () => assert.throws(() => parseJsonLossless('{"a": '), SyntaxError));
  it('round-trips through stringifyJsonLossless', () => {
    assert.equal(
      stringifyJsonLossless(parseJsonLossless('{"a":9223372036854775807,"b":[1,"x"]}')),
      '{"a":9223372036854775807,"b":[1,"x"]}',
    );
  });
});

describe('parseJsonLossless nesting (Go allows 10,000 levels)', () => {
  const deepObject = (levels: number, inner: string) => '{"a":'.repeat(levels - 1) + inner + '}'.repeat(levels - 1);

  it('a document 10,000 levels deep holding a 16-digit run parses (a recursive reviver overflows the stack near 3,000)', () => {
    for (const levels of [3_000, 10_000]) {
      const v = parseJsonLossless(deepObject(levels, '{"id":"1234567890123456","n":9007199254740993}'));
      let inner: any = v;
      for (let i = 1; i < levels; i++) inner = inner.a;
      assert.deepEqual(inner, { id: '1234567890123456', n: 9007199254740993n });
    }
  });

  it('one level more is refused like Go: "exceeded max depth", with or without long digits', () => {
    for (const inner of ['{"n":1}', '{"n":12345678901234567}']) {
      assert.throws(
        () => parseJsonLossless(deepObject(10_001, inner)),
        (err: unknown) => err instanceof JsonDepthError && /^exceeded max depth/.test(err.message),
      );
      assert.throws(() => parseJsonLossless('['.repeat(200_000) + ']'.repeat(200_000)), JsonDepthError);
    }
  });

  it('the limit can be given', () => {
    assert.deepEqual(parseJsonLossless('[[1]]', 2), [[1]]);
    assert.throws(() => parseJsonLossless('[[[1234567890123456]]]', 2), JsonDepthError);
  });
});
