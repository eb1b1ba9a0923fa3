import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { completeWords, completionAnswer, splitCommand } from '../../src/plugin/complete.ts';

describe('completion', () => {
  const cases: [string[], unknown][] = [
    [[''], { candidates: ['scale', 'status', 'completion'] }],
    [['st'], { candidates: ['status'] }],
    [['scale', ''], { names: true }],
    [['-n', 'x', 'scale', ''], { names: true }],
    [['scale', 'llama', ''], { candidates: [] }],
    [['scale', 'llama', '--no'], { candidates: ['--nodes', '--no-resume'] }],
    [['status', '-o', ''], { candidates: ['json', 'yaml'] }],
    [['completion', ''], { candidates: ['bash', 'zsh'] }],
  ];
  for (const [words, want] of cases) it(JSON.stringify(words), () => assert.deepEqual(completeWords(words), want));
  it('the command is the first word that is no flag or flag value', () => {
    assert.deepEqual(splitCommand(['-n', 'ml', 'status', 'a']), { command: 'status', rest: ['-n', 'ml', 'a'] });
  });
  it("cobra's answer ends with the no-file directive", () => assert.equal(completionAnswer(['a']), 'a\n:4'));
});
