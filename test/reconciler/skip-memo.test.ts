// SkipMemo: what was said of each TrainJob left alone, so that its reason is logged once per change
// (of uid, generation or reason), and a bound on what it holds.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SkipMemo } from '../../src/reconciler/skip-memo.ts';

describe('SkipMemo', () => {
  const rows: { name: string; notes: [uid: string, generation: unknown, reason: string][]; news: boolean[] }[] = [
    {
      name: 'the same skip again (a resync, a watch event) is not news',
      notes: [
        ['u1', 1, 'managed elsewhere'],
        ['u1', 1, 'managed elsewhere'],
        ['u1', 1, 'managed elsewhere'],
      ],
      news: [true, false, false],
    },
    {
      name: 'a new generation (a numNodes change) is news once',
      notes: [
        ['u1', 1, 'managed elsewhere'],
        ['u1', 2, 'managed elsewhere'],
        ['u1', 2, 'managed elsewhere'],
      ],
      news: [true, true, false],
    },
    {
      name: 'another reason at the same generation is news',
      notes: [
        ['u1', 2, 'managed elsewhere'],
        ['u1', 2, 'being deleted'],
        ['u1', 2, 'being deleted'],
      ],
      news: [true, true, false],
    },
    {
      name: 'a TrainJob of the same name created again (another uid) is news',
      notes: [
        ['u1', 1, 'being deleted'],
        ['u2', 1, 'being deleted'],
      ],
      news: [true, true],
    },
    {
      name: 'a generation that is not a number is still an identity',
      notes: [
        ['u1', undefined, 'unreadable'],
        ['u1', undefined, 'unreadable'],
        ['u1', 'x', 'unreadable'],
      ],
      news: [true, false, true],
    },
  ];
  for (const row of rows)
    it(row.name, () => {
      const memo = new SkipMemo();
      assert.deepEqual(
        row.notes.map(([uid, generation, reason]) => memo.note('ns/tj', uid, generation, reason)),
        row.news,
      );
    });

  it('forgotten (gone, or acted on), the same skip is news again; keys are apart', () => {
    const memo = new SkipMemo();
    memo.note('ns/a', 'ua', 1, 'r');
    memo.note('ns/b', 'ub', 1, 'r');
    memo.forget('ns/a');
    assert.equal(memo.size, 1);
    assert.equal(memo.note('ns/a', 'ua', 1, 'r'), true);
    assert.equal(memo.note('ns/b', 'ub', 1, 'r'), false);
  });

  it('holds at most maxKeys keys: the one noted longest ago goes first, and is said again once', () => {
    const memo = new SkipMemo(3);
    for (const k of ['a', 'b', 'c']) memo.note(k, k, 1, 'r');
    memo.note('a', 'a', 1, 'r'); // noted again: now the newest
    memo.note('d', 'd', 1, 'r'); // over the bound: b, noted longest ago, is forgotten
    assert.equal(memo.size, 3);
    assert.deepEqual(
      ['a', 'c', 'd'].map((k) => memo.note(k, k, 1, 'r')),
      [false, false, false],
    );
    assert.equal(memo.note('b', 'b', 1, 'r'), true);
    assert.equal(memo.size, 3);
  });

  it('a long reason: the same again is not news, one that differs only at its end is', () => {
    const memo = new SkipMemo();
    const long = 'x'.repeat(1_000_000);
    memo.note('ns/a', 'u', 1, long);
    assert.equal(memo.note('ns/a', 'u', 1, long), false);
    assert.equal(memo.note('ns/a', 'u', 1, long + 'y'), true);
  });
});
