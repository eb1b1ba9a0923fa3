// Cluster text made safe for a terminal: controls written out, long strings cut.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_PRINTED, printable } from '../../src/plugin/printable.ts';

describe('printable', () => {
  it('writes out C0 and C1 controls and DEL, keeps newlines and the rest of Unicode', () => {
    assert.equal(printable('a\u001b[31mb\u0007c\rd\te\u007ff\u009bg\nh ✓ é'), 'a^[[31mb^Gc\\rd\\te^?f\\u009bg\nh ✓ é');
    assert.equal(printable('\u0000\u001f'), '^@^_');
  });
  it('is the same when applied twice', () => {
    const once = printable('x\u001b]0;pwned\u0007');
    assert.equal(printable(once), once);
  });
  it('cuts a long string at MAX_PRINTED characters, with an ellipsis, without splitting a character', () => {
    assert.equal(printable('a'.repeat(MAX_PRINTED)), 'a'.repeat(MAX_PRINTED));
    const cut = printable('😀'.repeat(MAX_PRINTED + 1));
    assert.equal(Array.from(cut).length, MAX_PRINTED);
    assert.ok(cut.endsWith('😀…'));
    assert.equal(printable('abcdef', 4), 'abc…');
  });
});
