// Long waits are logged once per change of what they wait on and polled less often; short waits
// keep the caller's quick poll.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { WAIT_POLL, WaitMemo } from '../../src/reconciler/wait-memo.ts';

describe('WaitMemo', () => {
  const poll = 3_000;
  const rows: { name: string; steps: { at: number; detail: string }[]; news: boolean[]; delays: number[] }[] = [
    {
      name: 'a short wait keeps the quick poll; only its first note is news',
      steps: [
        { at: 0, detail: 'pod p' },
        { at: 3_000, detail: 'pod p' },
        { at: 6_000, detail: 'pod p' },
      ],
      news: [true, false, false],
      delays: [poll, poll, poll],
    },
    {
      name: 'what it waits on changed: news again, the age kept',
      steps: [
        { at: 0, detail: 'pods p, q' },
        { at: 40_000, detail: 'pod q' },
      ],
      news: [true, true],
      delays: [poll, 4_000],
    },
    {
      name: 'a long wait is polled at a tenth of its age',
      steps: [
        { at: 0, detail: 'x' },
        { at: 100_000, detail: 'x' },
      ],
      news: [true, false],
      delays: [poll, 10_000],
    },
    {
      name: 'a very long wait, at most a minute apart',
      steps: [
        { at: 0, detail: 'x' },
        { at: 3_600_000, detail: 'x' },
      ],
      news: [true, false],
      delays: [poll, WAIT_POLL.maxDelayMs],
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      const memo = new WaitMemo();
      const out = row.steps.map((s) => memo.note('ns/tj', s.detail, s.at, poll));
      assert.deepEqual(
        out.map((o) => o.news),
        row.news,
      );
      assert.deepEqual(
        out.map((o) => o.delayMs),
        row.delays,
      );
    });
  }

  it('cleared, a key starts over (quick poll, news); keys are apart', () => {
    const memo = new WaitMemo();
    memo.note('ns/a', 'x', 0, poll);
    memo.note('ns/b', 'x', 0, poll);
    memo.clear('ns/a');
    assert.deepEqual(memo.note('ns/a', 'x', 100_000, poll), { news: true, delayMs: poll });
    assert.deepEqual(memo.note('ns/b', 'x', 100_000, poll), { news: false, delayMs: 10_000 });
  });
});
