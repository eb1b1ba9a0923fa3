// Correlation.deepEqual without a tree of Correlations (src/crd/ratchet.ts correlatedEqual) must
// answer as the tree does at every correlatable node: random TrainJob pairs under Trainer's CRD,
// with map lists reordered, keyless and duplicate-keyed items, unknown fields, nulls, absent
// fields, wrong types, and numbers beside bigints.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { correlate, type Correlation } from '../../src/crd/index.ts';
import { useCorrelationTreeEquality } from '../../src/crd/ratchet.ts';
import { trainJobCrd } from './fixtures.ts';
import { trainJobVariants } from '../support/trainjob-variants.ts';

/** Every correlatable node's deepEqual, by path, walking the new value. */
function equalities(corr: Correlation, path = '', out: Record<string, boolean> = {}): Record<string, boolean> {
  out[path || '<root>'] = corr.deepEqual();
  const v = corr.value;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const child = corr.index(i);
      if (child) equalities(child, `${path}[${i}]`, out);
    }
  } else if (v !== null && typeof v === 'object') {
    for (const k of Object.keys(v)) {
      const child = corr.key(k);
      if (child) equalities(child, `${path}.${k}`, out);
    }
  }
  return out;
}

const FIELDS: Record<string, unknown[]> = {
  'spec.trainer.env': [
    [
      { name: 'A', value: '1' },
      { name: 'B', value: '2' },
    ],
    [
      { name: 'B', value: '2' },
      { name: 'A', value: '1' },
    ],
    [
      { name: 'A', value: '1' },
      { name: 'A', value: '2' },
    ],
    [{ name: 'A', value: '1' }, { value: '2' }],
    [
      { name: 'A', value: '1', extra: 1 },
      { name: 'B', value: '2' },
    ],
    [
      { name: 'A', value: null },
      { name: 'B', value: '2' },
    ],
    [],
    undefined,
    null,
    'x',
  ],
  'spec.trainer.command': [['a', 'b'], ['b', 'a'], [], undefined, [1]],
  'spec.trainer.numNodes': [1, 1n, 2, 1.5, undefined, null, '1'],
  'spec.trainer.resourcesPerNode': [
    { limits: { cpu: '1' } },
    { limits: { cpu: 1 } },
    { limits: { cpu: 1n } },
    { limits: {} },
    undefined,
  ],
  'spec.runtimePatches': [
    [{ manager: 'a', time: 't' }, { manager: 'b' }],
    [{ manager: 'b' }, { manager: 'a', time: 't' }],
    [{ manager: 'a' }, { manager: 'a', time: 't' }],
    [{ time: 't' }],
    undefined,
  ],
  'spec.unknown': [undefined, 1],
  'metadata.labels': [undefined, { a: 'b' }, { a: 'c' }],
  status: [
    undefined,
    { conditions: [{ type: 'A', status: 'True' }] },
    {
      conditions: [
        { type: 'A', status: 'False' },
        { type: 'A', status: 'True' },
      ],
    },
    null,
  ],
};

const { build, choiceArb } = trainJobVariants(FIELDS, 12);

describe('correlated equality without a tree of Correlations', () => {
  it('answers as the tree at every node, 1,000 random TrainJob pairs', () => {
    const root = trainJobCrd().root;
    let unequal = 0;
    let equal = 0;
    fc.assert(
      fc.property(choiceArb, choiceArb, fc.boolean(), (a, b, same) => {
        const [obj, oldObj] = [build(a), build(same ? a : b)];
        useCorrelationTreeEquality(true);
        const want = equalities(correlate(root, obj, oldObj));
        useCorrelationTreeEquality(false);
        const got = equalities(correlate(root, obj, oldObj));
        for (const eq of Object.values(got)) {
          if (eq) equal++;
          else unequal++;
        }
        assert.deepEqual(got, want);
      }),
      { numRuns: 1_000 },
    );
    assert.ok(equal > 0 && unequal > 0);
  });
});
