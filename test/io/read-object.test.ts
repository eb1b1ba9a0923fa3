// Files given to the CLI are read the way kubectl reads them (sigs.k8s.io/yaml on go-yaml v2,
// YAML 1.1): the scalars below resolve as go-yaml v2's resolve.go and decode.go resolve them into
// interface{}, so `review` checks what the API server would receive.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InputError, parseObjectText } from '../../src/io/read-object.ts';

const cases: Array<[string, string, unknown]> = [
  [
    'a date stays the string written (go-yaml v2 keeps timestamps as strings in interface{})',
    '2024-01-01',
    '2024-01-01',
  ],
  ['a full timestamp stays a string', '2001-12-14t21:59:43.10-05:00', '2001-12-14t21:59:43.10-05:00'],
  ['base-60 is not a number (go-yaml v2: "purposefully unsupported")', '1:30', '1:30'],
  ['base-60 float is not a number', '190:20:30.15', '190:20:30.15'],
  ['!!binary is the string of its bytes', '!!binary aGVsbG8=', 'hello'],
  ['YAML 1.1 booleans: yes', 'yes', true],
  ['YAML 1.1 booleans: off', 'off', false],
  ['a leading 0 is octal (Go ParseInt base 0)', '0777', 511],
  ['hex', '0x1F', 31],
  ['underscores in numbers', '1_000', 1000],
  ['exponent floats', '1e3', 1000],
  ['integers beyond 2^53 stay exact', '12345678901234567890', 12345678901234567890n],
  ['a quoted date is a string', '"2024-01-01"', '2024-01-01'],
];

describe('YAML files are read as kubectl reads them', () => {
  for (const [what, yaml, expected] of cases) {
    it(what, async () => {
      assert.deepEqual(((await parseObjectText(`v: ${yaml}\n`, 'f.yaml')) as { v: unknown }).v, expected);
    });
  }
  it('a date inside an object the CLI reviews is not lost', async () => {
    const obj = (await parseObjectText('metadata:\n  annotations:\n    since: 2024-01-01\n', 'f.yaml')) as {
      metadata: { annotations: Record<string, unknown> };
    };
    assert.deepEqual(obj.metadata.annotations, { since: '2024-01-01' });
  });
  it('several documents are refused with a clear error', async () => {
    await assert.rejects(
      parseObjectText('a: 1\n---\nb: 2\n', 'f.yaml'),
      (e: unknown) => e instanceof InputError && /exactly one YAML document, found 2/.test(e.message),
    );
  });
});
