// The watch body's line splitter (src/cluster/watch-lines.ts): the same lines however the bytes
// are chunked (a multi-byte character split too), blank lines skipped, and an unfinished line over
// the limit refused, not buffered.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { lineSplitter } from '../../src/cluster/watch-lines.ts';

const BODY = Buffer.from('{"type":"ADDED","object":{"n":"é"}}\n\n{"type":"MODIFIED"}\r\n{"type":"DELETED"}\n');
const LINES = ['{"type":"ADDED","object":{"n":"é"}}', '{"type":"MODIFIED"}', '{"type":"DELETED"}'];

function split(chunks: Buffer[], max = 1024): { lines: string[]; ok: boolean } {
  const lines: string[] = [];
  const s = lineSplitter(max, (l) => lines.push(l));
  let ok = true;
  for (const c of chunks) ok &&= s.push(c);
  return { lines, ok };
}

describe('watch line splitter', () => {
  it('one chunk, one byte at a time, and every two-way split give the same lines', () => {
    assert.deepEqual(split([BODY]), { lines: LINES, ok: true });
    assert.deepEqual(split([...BODY].map((b) => Buffer.from([b]))), { lines: LINES, ok: true });
    for (let i = 0; i <= BODY.length; i++)
      assert.deepEqual(split([BODY.subarray(0, i), BODY.subarray(i)]), { lines: LINES, ok: true }, `split at ${i}`);
  });
  it('a line of exactly the limit passes; one byte more is refused, complete or still arriving', () => {
    const line = 'x'.repeat(16);
    assert.deepEqual(split([Buffer.from(`${line}\n`)], 16), { lines: [line], ok: true });
    assert.equal(split([Buffer.from(`${line}y\n`)], 16).ok, false);
    assert.equal(split([Buffer.from(line), Buffer.from('y')], 16).ok, false, 'refused before its newline arrives');
  });
  it('lines before an over-long one are delivered', () => {
    assert.deepEqual(split([Buffer.from(`a\nb\n${'x'.repeat(20)}`)], 16), { lines: ['a', 'b'], ok: false });
  });
});
