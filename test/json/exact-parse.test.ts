// The iterative parser behind parseJsonLossless: it must accept exactly what JSON.parse accepts
// and build the same values as JSON.parse reviving exact integers, at any depth up to its limit.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { JsonDepthError, nestsDeeperThan, parseJsonExact } from '../../src/json/exact-parse.ts';

/** The oracle: JSON.parse reviving unsafe integer literals from their source (recursive, fine when shallow). */
function reviveExact(_key: string, value: unknown, context?: { source?: string }): unknown {
  return typeof value === 'number' && !Number.isSafeInteger(value) && /^-?\d+$/.test(context?.source ?? '')
    ? BigInt(context!.source!)
    : value;
}

function both(text: string): void {
  let want: unknown;
  let wantError = false;
  try {
    want = JSON.parse(text, reviveExact as (key: string, value: unknown) => unknown);
  } catch {
    wantError = true;
  }
  let got: unknown;
  let gotError: unknown;
  try {
    got = parseJsonExact(text, 10_000);
  } catch (err) {
    gotError = err;
  }
  assert.equal(gotError !== undefined, wantError, `${JSON.stringify(text)}: ${gotError}`);
  if (gotError !== undefined) assert.ok(gotError instanceof SyntaxError);
  else assert.deepEqual(got, want);
}

const TWEAKS = [
  '',
  '"',
  '\\',
  ',',
  ']',
  '}',
  '[',
  '{',
  ':',
  '0',
  '-',
  '.',
  'e',
  'E+',
  't',
  'x',
  '\u0001',
  '\u2028',
  ' ',
  '01',
  '1.',
  '-0',
  '\\u12',
  '\\uZZZZ',
  '\\x',
  'tru',
  'nul',
  '\ud800',
];

describe('parseJsonExact agrees with JSON.parse', () => {
  it('on valid JSON with any whitespace', () => {
    fc.assert(
      fc.property(fc.json({ maxDepth: 6 }), fc.constantFrom('', ' ', '\n\t\r '), (text, ws) =>
        both(text.replace(/([,:[\]{}])/g, `${ws}$1${ws}`)),
      ),
      { numRuns: 2000 },
    );
  });

  it('on JSON with one character inserted or deleted', () => {
    fc.assert(
      fc.property(
        fc.json({ maxDepth: 4 }),
        fc.nat(),
        fc.constantFrom(...TWEAKS),
        fc.boolean(),
        (text, pos, tweak, remove) => {
          const p = pos % (text.length + 1);
          both(remove ? text.slice(0, p) + text.slice(p + 1) : text.slice(0, p) + tweak + text.slice(p));
        },
      ),
      { numRuns: 5000 },
    );
  });

  it('on integers of any size, in arrays and objects', () => {
    fc.assert(
      fc.property(fc.array(fc.bigInt({ min: -(2n ** 80n), max: 2n ** 80n })), (xs) => {
        both(`[${xs.join(',')}]`);
        both(`{${xs.map((x, i) => `"k${i}": ${x}`).join(', ')}}`);
      }),
      { numRuns: 500 },
    );
  });

  const table = [
    '',
    ' ',
    '{',
    '[',
    '[1,]',
    '{"a":1,}',
    '{"a" 1}',
    '{1:2}',
    '"\\u0041\\n"',
    '"a\tb"',
    '-',
    '-01',
    '1e',
    '1e+',
    '.5',
    '[1 2]',
    'truefalse',
    '"\\',
    '"',
    '{"a":1}x',
    '[[]]',
    '{"":{}}',
    '1E400',
    '-0',
    '"\u2028"',
    ' \n9007199254740993 ',
  ];
  for (const text of table) it(JSON.stringify(text), () => both(text));
});

describe('parseJsonExact values', () => {
  it('integers beyond 2^53 are exact BigInts; fractions and exponents stay doubles', () => {
    assert.deepEqual(
      parseJsonExact(
        '[9007199254740993, -9223372036854775808, 99999999999999999999, 9007199254740991, 1e20, 12345678901234567.5, -0]',
        10,
      ),
      [
        9007199254740993n,
        -9223372036854775808n,
        99999999999999999999n,
        9007199254740991,
        1e20,
        // eslint-disable-next-line no-loss-of-precision -- deliberate: a fraction past 2^53 stays a (rounded) double
        12345678901234567.5,
        -0,
      ],
    );
  });

  it('__proto__ and constructor keys are own data; duplicate keys keep the last value in the first place', () => {
    const v = parseJsonExact('{"a":1,"__proto__":{"polluted":1},"constructor":2,"a":3}', 10) as Record<string, unknown>;
    assert.equal(Object.getPrototypeOf(v), Object.prototype);
    assert.deepEqual(Object.keys(v), ['a', '__proto__', 'constructor']);
    assert.equal(v.a, 3);
    assert.deepEqual(Object.getOwnPropertyDescriptor(v, '__proto__')?.value, { polluted: 1 });
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
  });
});

describe('nesting', () => {
  const arrays = (n: number) => '['.repeat(n) + ']'.repeat(n);
  const objects = (n: number) => '{"a":'.repeat(n - 1) + '{}' + '}'.repeat(n - 1);

  it('accepts exactly maxDepth levels and refuses one more (arrays and objects)', () => {
    for (const nest of [arrays, objects]) {
      assert.ok(
        Array.isArray(parseJsonExact(nest(10_000), 10_000)) || typeof parseJsonExact(nest(10_000), 10_000) === 'object',
      );
      assert.throws(
        () => parseJsonExact(nest(10_001), 10_000),
        (err: unknown) => err instanceof JsonDepthError && /exceeded max depth/.test(err.message),
      );
    }
  });

  it('1,000,000 levels are refused without exhausting the stack', () => {
    assert.throws(() => parseJsonExact(arrays(1_000_000), 10_000), JsonDepthError);
  });

  it('nestsDeeperThan counts levels like the parser', () => {
    assert.equal(nestsDeeperThan(JSON.parse(arrays(10_000)), 10_000), false);
    assert.equal(nestsDeeperThan(JSON.parse(arrays(10_001)), 10_000), true);
    assert.equal(nestsDeeperThan(JSON.parse(objects(3)), 2), true);
    assert.equal(nestsDeeperThan(7, 0), false);
  });
});
