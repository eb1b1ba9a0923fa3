import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { collectCelRules, compileSchema, parseLocation, valuesAt, type JSONSchemaProps } from '../../src/crd/index.ts';
import { trainJob, trainJobCrd } from './fixtures.ts';

const crd = trainJobCrd();

/** An independent walk of the raw schema: every x-kubernetes-validations entry and its location. */
type RawRule = { location: string; index: number; rule: string; message?: string };
function rawRules(s: JSONSchemaProps, at = ''): RawRule[] {
  const out: RawRule[] = (s['x-kubernetes-validations'] ?? []).map((r, index) => ({
    location: at,
    index,
    rule: r.rule,
    message: r.message,
  }));
  for (const [name, child] of Object.entries(s.properties ?? {}))
    out.push(...rawRules(child, at ? `${at}.${name}` : name));
  if (s.items) out.push(...rawRules(s.items, `${at}[*]`));
  if (typeof s.additionalProperties === 'object') out.push(...rawRules(s.additionalProperties, `${at}[*]`));
  return out;
}

describe('collectCelRules: the TrainJob CRD', () => {
  const rules = collectCelRules(crd.root);

  it('finds every rule the CRD file has, with its location, index, rule and message', () => {
    const expected = rawRules(crd.schema);
    assert.ok(expected.length > 0);
    const got = rules.map((r) => ({ location: r.location, index: r.index, rule: r.rule, message: r.message }));
    assert.deepEqual(
      [...got].sort((a, b) => `${a.location}#${a.index}`.localeCompare(`${b.location}#${b.index}`)),
      [...expected].sort((a, b) => `${a.location}#${a.index}`.localeCompare(`${b.location}#${b.index}`)),
    );
  });

  it('root rules sit at the empty location, list items at [*]', () => {
    assert.ok(rules.some((r) => r.location === '' && r.rule.includes('metadata.name')));
    assert.ok(rules.some((r) => r.location === 'spec.runtimePatches[*].manager'));
  });

  it('each rule carries the schema node that types `self`', () => {
    for (const r of rules) {
      const expectedType = r.location === '' ? 'object' : undefined;
      if (expectedType) assert.equal(r.schema.type, expectedType);
      assert.equal(r.schema, r.nodeSchema, 'no allOf rules in this CRD');
    }
    const procs = rules.find((r) => r.location === 'spec.trainer.numProcPerNode')!;
    assert.equal(procs.schema.type, 'integer');
    assert.equal(procs.optionalOldSelf, false);
  });
});

describe('collectCelRules: allOf branches and optional fields', () => {
  const root = compileSchema({
    type: 'object',
    properties: {
      spec: {
        type: 'object',
        properties: { a: { type: 'string' } },
        allOf: [
          {
            'x-kubernetes-validations': [{ rule: 'has(self.a)', reason: 'FieldValueRequired', fieldPath: '.a' }],
            properties: {
              a: { 'x-kubernetes-validations': [{ rule: 'self != ""', messageExpression: '"a: " + self' }] },
            },
          },
        ],
        'x-kubernetes-validations': [{ rule: 'self == oldSelf', optionalOldSelf: true }],
      },
    },
  });
  const rules = collectCelRules(root);

  it('lists the node’s own rules, then its allOf branches’ (with their nested properties), then children', () => {
    assert.deepEqual(
      rules.map((r) => [r.location, r.branch ?? '', r.rule]),
      [
        ['spec', '', 'self == oldSelf'],
        ['spec', 'allOf[0]', 'has(self.a)'],
        ['spec.a', 'allOf[0]', 'self != ""'],
      ],
    );
    assert.equal(rules[0].optionalOldSelf, true);
    assert.equal(rules[1].reason, 'FieldValueRequired');
    assert.equal(rules[1].fieldPath, '.a');
    assert.equal(rules[2].messageExpression, '"a: " + self');
    assert.equal(rules[2].nodeSchema.type, 'string', 'an allOf rule still knows the structural node at its location');
  });
});

describe('valuesAt: concrete values for a location', () => {
  const obj = trainJob({
    runtimeRef: { name: 'torch' },
    runtimePatches: [{ manager: 'a' }, { manager: 'b' }, { time: 'x' }],
    trainer: { resourcesPerNode: { limits: { cpu: '1', 'nvidia.com/gpu': 2, none: null } }, env: [{ name: 'A' }] },
  });

  const cases: Array<[string, Array<[string, unknown]>]> = [
    ['', [['', obj]]],
    [
      'spec.runtimePatches[*].manager',
      [
        ['spec.runtimePatches[0].manager', 'a'],
        ['spec.runtimePatches[1].manager', 'b'],
      ],
    ],
    [
      'spec.trainer.resourcesPerNode.limits[*]',
      [
        ['spec.trainer.resourcesPerNode.limits[cpu]', '1'],
        ['spec.trainer.resourcesPerNode.limits[nvidia.com/gpu]', 2],
      ],
    ],
    ['spec.trainer.env[*]', [['spec.trainer.env[0]', { name: 'A' }]]],
    ['spec.initializer', []],
    ['spec.nonexistent', []],
  ];
  for (const [location, expected] of cases) {
    it(location || '<root>', () => {
      assert.deepEqual(
        crd.valuesAt(obj, location).map((v) => [v.path, v.value]),
        expected,
      );
    });
  }

  it('gives segments and the schema of each value', () => {
    const [v] = valuesAt(crd.root, obj, 'spec.trainer.resourcesPerNode.limits[*]');
    assert.deepEqual(v.segments, ['spec', 'trainer', 'resourcesPerNode', 'limits', 'cpu']);
    assert.equal(v.schema.intOrString, true);
  });

  it('parseLocation resolves [*] to items or map values by the schema, and rejects unknown locations', () => {
    assert.deepEqual(parseLocation(crd.root, 'spec.trainer.env[*]'), [
      { field: 'spec' },
      { field: 'trainer' },
      { field: 'env' },
      { items: true },
    ]);
    assert.deepEqual(parseLocation(crd.root, 'spec.trainer.resourcesPerNode.limits[*]')?.at(-1), { values: true });
    assert.equal(parseLocation(crd.root, 'spec.nope'), undefined);
    assert.equal(parseLocation(crd.root, 'spec.suspend[*]'), undefined);
  });
});
