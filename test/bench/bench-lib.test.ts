// The benchmark runner's pure parts: what a server decided, whether servers agree, percentiles,
// the ratio and markdown formatting, /proc memory parsing and the 1 MiB body.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MIB, withLargeCommand } from '../../bench/lib/bodies.ts';
import { decisionOf, disagreements, formatDecision, type Decision } from '../../bench/lib/decisions.ts';
import { loadTables, memoryTable, ms, ratio, table } from '../../bench/lib/markdown.ts';
import { parseProcStatus } from '../../bench/lib/proc.ts';
import { percentile } from '../../bench/lib/stats.ts';

const review = (response: unknown) => ({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response });
const allowed: Decision = { allowed: true, fields: [] };
const deniedNumNodes: Decision = { allowed: false, code: 403, fields: ['spec.trainer.numNodes'] };

describe('decisionOf', () => {
  const cases: { name: string; answer: unknown; want: Decision }[] = [
    { name: 'allowed (warnings ignored)', answer: review({ uid: 'u', allowed: true, warnings: ['w'] }), want: allowed },
    {
      name: "denied: code and the causes' fields, sorted, duplicates kept",
      answer: review({
        uid: 'u',
        allowed: false,
        status: {
          code: 422,
          details: {
            causes: [
              { field: 'spec.trainer.numNodes' },
              { field: 'spec.trainer.image' },
              { field: 'spec.trainer.numNodes' },
            ],
          },
        },
      }),
      want: {
        allowed: false,
        code: 422,
        fields: ['spec.trainer.image', 'spec.trainer.numNodes', 'spec.trainer.numNodes'],
      },
    },
    {
      name: 'denied without causes',
      answer: review({ uid: 'u', allowed: false, status: { code: 403 } }),
      want: { allowed: false, code: 403, fields: [] },
    },
    {
      name: 'a cause without a field counts as ""',
      answer: review({ allowed: false, status: { code: 422, details: { causes: [{ message: 'm' }] } } }),
      want: { allowed: false, code: 422, fields: [''] },
    },
  ];
  for (const c of cases) it(c.name, () => assert.deepEqual(decisionOf(c.answer), c.want));

  for (const [name, answer] of [
    ['not an object', 'x'],
    ['another kind', { kind: 'Status', response: {} }],
    ['no response', { kind: 'AdmissionReview' }],
    ['allowed missing', review({ uid: 'u' })],
  ] as const) {
    it(`throws a clear error: ${name}`, () => assert.throws(() => decisionOf(answer), /AdmissionReview|allowed/));
  }
});

describe('disagreements', () => {
  const table: { name: string; expected: 'allowed' | 'denied'; decisions: Decision[]; want: RegExp[] }[] = [
    {
      name: 'all alike and as meant',
      expected: 'denied',
      decisions: [deniedNumNodes, deniedNumNodes, deniedNumNodes],
      want: [],
    },
    {
      name: 'one allows',
      expected: 'denied',
      decisions: [deniedNumNodes, allowed],
      want: [/b answered allowed, a denied 403 \[spec.trainer.numNodes\]/],
    },
    {
      name: 'another code',
      expected: 'denied',
      decisions: [deniedNumNodes, { ...deniedNumNodes, code: 422 }],
      want: [/b answered denied 422/],
    },
    {
      name: 'another field',
      expected: 'denied',
      decisions: [deniedNumNodes, { ...deniedNumNodes, fields: ['spec.trainer.image'] }],
      want: [/b answered denied 403 \[spec.trainer.image\]/],
    },
    {
      name: 'one cause more',
      expected: 'denied',
      decisions: [deniedNumNodes, { ...deniedNumNodes, fields: ['spec.trainer.numNodes', 'spec.trainer.numNodes'] }],
      want: [/b answered/],
    },
    {
      name: 'all alike but not as meant',
      expected: 'allowed',
      decisions: [deniedNumNodes, deniedNumNodes],
      want: [/a answered denied .* meant to be allowed/],
    },
    { name: 'nothing to compare', expected: 'allowed', decisions: [], want: [] },
  ];
  for (const c of table) {
    it(c.name, () => {
      const got = disagreements(
        'body',
        c.expected,
        c.decisions.map((decision, i) => ({ server: 'abc'[i], decision })),
      );
      assert.equal(got.length, c.want.length, got.join('\n'));
      c.want.forEach((re, i) => assert.match(got[i], re));
    });
  }
  it('formats both kinds', () => {
    assert.equal(formatDecision(allowed), 'allowed');
    assert.equal(formatDecision(deniedNumNodes), 'denied 403 [spec.trainer.numNodes]');
  });
});

describe('percentile (nearest rank)', () => {
  const hundred = Array.from({ length: 100 }, (_, i) => 100 - i); // 100..1, unsorted
  for (const [p, want] of [
    [50, 50],
    [99, 99],
    [100, 100],
    [0, 1],
    [1, 1],
  ] as const) {
    it(`p${p} of 1..100 is ${want}`, () => assert.equal(percentile(hundred, p), want));
  }
  it('fractional samples sort numerically', () => assert.equal(percentile([0.9, 10.5, 2.25], 50), 2.25));
  it('none: NaN', () => assert.ok(Number.isNaN(percentile([], 50))));
});

describe('formatting', () => {
  it('ratios', () => {
    assert.equal(ratio(150, 100), 'x1.50');
    assert.equal(ratio(0.5, 0.25), 'x2.00');
    assert.equal(ratio(1, 0), 'n/a');
    assert.equal(ratio(NaN, 1), 'n/a');
  });
  it('milliseconds keep sub-millisecond digits', () => {
    assert.equal(ms(0.4567), '0.457');
    assert.equal(ms(12.34), '12.3');
    assert.equal(ms(NaN), 'n/a');
  });
  it('a markdown table escapes pipes and right-aligns numbers', () => {
    assert.equal(table(['a', 'b'], [['x|y', '1']]), '| a | b |\n| --- | ---: |\n| x\\|y | 1 |');
  });
  it('load tables: one per body and connection count, ratios to the baseline of that group', () => {
    const md = loadTables(
      [
        { server: 'bare', body: 'B', connections: 1, rps: 1000, p50: 0.5, p99: 2 },
        { server: 'hook', body: 'B', connections: 1, rps: 800, p50: 0.6, p99: 3 },
        { server: 'bare', body: 'B', connections: 16, rps: 2000, p50: 4, p99: 8 },
        { server: 'hook', body: 'B', connections: 16, rps: 1000, p50: 8, p99: 16 },
      ],
      'bare',
    );
    assert.match(md, /\*\*B\*\*, 1 connection\n/);
    assert.match(md, /\*\*B\*\*, 16 connections\n/);
    assert.match(md, /\| hook \| 800 \| x0.80 \| 0.600 \| x1.20 \| 3.000 \| x1.50 \|/);
    assert.match(md, /\| hook \| 1000 \| x0.50 \| 8.000 \| x2.00 \| 16.0 \| x2.00 \|/);
  });
  it('memory table: RSS after each body and the peak, with ratios to the baseline', () => {
    const md = memoryTable(
      [
        {
          server: 'bare',
          rssAfter: [
            { body: 'small', rss: 100 * MIB },
            { body: 'big', rss: 300 * MIB },
          ],
          peak: 400 * MIB,
        },
        {
          server: 'go',
          rssAfter: [
            { body: 'small', rss: 50 * MIB },
            { body: 'big', rss: 150 * MIB },
          ],
          peak: 100 * MIB,
        },
      ],
      'bare',
    );
    assert.match(
      md,
      /^\| server \| RSS after small, MiB \| ratio \| RSS after big, MiB \| ratio \| peak RSS MiB \| ratio \|$/m,
    );
    assert.match(md, /\| go \| 50.0 \| x0.50 \| 150.0 \| x0.50 \| 100.0 \| x0.25 \|/);
  });
});

describe('/proc/PID/status', () => {
  it('reads VmRSS and VmHWM in bytes', () => {
    assert.deepEqual(parseProcStatus('Name:\tnode\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\n'), {
      rss: 1024 * 1024,
      peak: 2048 * 1024,
    });
  });
  it('a missing line is a clear error', () => assert.throws(() => parseProcStatus('Name:\tnode\n'), /no VmRSS line/));
});

describe('the 1 MiB CREATE', () => {
  const create = JSON.stringify({
    kind: 'AdmissionReview',
    request: { operation: 'CREATE', object: { spec: { trainer: { command: ['torchrun'] } } } },
  });
  it('carries a command script of exactly the size asked', () => {
    const body = JSON.parse(withLargeCommand(create, MIB));
    const [python, flag, script] = body.request.object.spec.trainer.command;
    assert.deepEqual([python, flag], ['python', '-c']);
    assert.equal(script.length, MIB);
  });
  it('refuses anything but a CREATE', () =>
    assert.throws(
      () => withLargeCommand(JSON.stringify({ request: { operation: 'UPDATE' } }), 10),
      /expected a CREATE/,
    ));
});
