// The table's fast path (src/rules/compiled-table.ts): a row whose field an update leaves as it
// was passes without CEL. That rests on every row's rule being `U || ...` with U "the field is
// unchanged" (checked here on the text), and it must give exactly the errors CEL gives: random
// updates are decided with and without it, by the table alone and behind Trainer v2.3.0's CRD.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { buildPolicy, type Policy } from '../../src/rules/policy.ts';
import { fieldUnchanged, runTable } from '../../src/rules/compiled-table.ts';
import { RULES } from '../../src/rules/table.ts';
import {
  immutableTrainerField,
  unchangedAtSpec,
  unchangedPath,
  UNNAMED_TRAINER_FIELD,
} from '../../src/rules/cel-snippets.ts';
import { RuleRun } from '../../src/cel/run-rules.ts';
import { correlate } from '../../src/crd/index.ts';
import { policyFromCrd } from '../../src/rules/crd-policy.ts';
import { trainJobCrdV230Object } from '../crd/fixtures.ts';
import { condition, trainJob } from './fixtures.ts';

describe('every row passes an update that leaves its field unchanged (its rule is `unchanged || ...`)', () => {
  /** The CEL that says the row's field is unchanged, as the snippets write it. */
  const unchangedSnippets = (field: string, scope: string): string[] => {
    if (field === scope) return ['self == oldSelf'];
    const relative = field.slice(scope.length).replace(/^\./, '');
    const trainerField = /^trainer\.(.+)$/.exec(relative)?.[1];
    const out = [unchangedPath(relative), unchangedAtSpec(relative)];
    if (trainerField)
      out.push(immutableTrainerField(trainerField === '<any other field>' ? UNNAMED_TRAINER_FIELD : trainerField));
    return out;
  };
  for (const row of RULES) {
    it(row.id, () => {
      const rest = unchangedSnippets(row.field, row.scope).flatMap((u) =>
        row.rule === u ? [''] : row.rule.startsWith(`${u} || `) ? [row.rule.slice(u.length)] : [],
      );
      assert.equal(rest.length > 0, true, `${row.id}: ${row.rule} does not start with its field's unchanged snippet`);
      // `U || a ? b : c` would parse as `(U || a) ? b : c`: no conditional may follow.
      assert.doesNotMatch(rest[0], /\?/, `${row.id}: a conditional after U`);
    });
  }
});

describe('fieldUnchanged', () => {
  const cases: [string, unknown, unknown, string[], boolean | undefined][] = [
    ['both absent', {}, {}, ['trainer', 'image'], true],
    ['parent absent on both', {}, { trainer: {} }, ['trainer', 'image'], true],
    ['equal strings', { trainer: { image: 'a' } }, { trainer: { image: 'a' } }, ['trainer', 'image'], true],
    ['added', { trainer: { image: 'a' } }, { trainer: {} }, ['trainer', 'image'], false],
    ['null on both', { trainer: { image: null } }, { trainer: { image: null } }, ['trainer', 'image'], true],
    ['null beside absent', { trainer: { image: null } }, { trainer: {} }, ['trainer', 'image'], false],
    ['lists in order', { a: [1, 2] }, { a: [1, 2] }, ['a'], true],
    ['lists reordered: CEL decides (a set or map list may be equal)', { a: [1, 2] }, { a: [2, 1] }, ['a'], false],
    ['objects in any key order', { a: { x: 1, y: 2 } }, { a: { y: 2, x: 1 } }, ['a'], true],
    [
      'a parent that is not an object: CEL decides (has() fails)',
      { trainer: 'x' },
      { trainer: 'x' },
      ['trainer', 'image'],
      undefined,
    ],
    ['a null parent: CEL decides', { trainer: null }, { trainer: null }, ['trainer', 'image'], undefined],
    ['a number beside a bigint: CEL decides', { n: 1 }, { n: 1n }, ['n'], undefined],
    ['equal bigints', { n: 9007199254740993n }, { n: 9007199254740993n }, ['n'], true],
    ['the scope itself', { a: 1 }, { a: 1 }, [], true],
    ['a key holding dots', { trainer: { 'a.b': 1 } }, { trainer: { 'a.b': 1 } }, ['trainer', 'a.b'], true],
  ];
  for (const [name, a, b, steps, want] of cases) it(name, () => assert.equal(fieldUnchanged(a, b, steps), want));
  it('a value nested deeper than CEL converts: CEL decides', () => {
    const deep = (): unknown => {
      let v: unknown = 1;
      for (let i = 0; i < 1_500; i++) v = [v];
      return v;
    };
    assert.equal(fieldUnchanged({ a: deep() }, { a: deep() }, ['a']), undefined);
  });
});

// Each field takes one of a few values, including wrong types and nulls (the table alone has no schema).
const FIELD_VALUES: Record<string, unknown[]> = {
  'spec.trainer.image': [undefined, 'a:1', 'a:2', null, 5, { x: 1 }],
  'spec.trainer.command': [undefined, ['a'], ['a', 'b'], ['b', 'a'], 'a'],
  'spec.trainer.env': [
    undefined,
    [],
    [
      { name: 'A', value: '1' },
      { name: 'B', value: '2' },
    ],
    [
      { name: 'B', value: '2' },
      { name: 'A', value: '1' },
    ],
    [{ name: 'A', value: '2' }],
  ],
  'spec.trainer.resourcesPerNode': [
    undefined,
    { limits: { cpu: '1' } },
    { limits: { cpu: 1 } },
    { limits: { cpu: 1.5 } },
  ],
  'spec.trainer.numNodes': [undefined, 0, 1, 2, -1, 9007199254740993n, 1.5, '2', null],
  'spec.trainer.numProcPerNode': [undefined, 1, 2, 'auto'],
  'spec.trainer.future': [undefined, 1, 'x', { a: [1] }],
  'spec.trainer.a.b': [undefined, 1, 2],
  'spec.suspend': [undefined, true, false, null, 'yes'],
  'spec.managedBy': [undefined, 'trainer.kubeflow.org/trainjob-controller', 'kueue.x-k8s.io/multikueue'],
  'spec.runtimeRef': [undefined, { name: 'torch' }, { name: 'mpi' }, 'torch'],
  'spec.activeDeadlineSeconds': [undefined, 10, 11, 9007199254740993n],
  'spec.runtimePatches': [
    undefined,
    [],
    [{ manager: 'a' }],
    [{ manager: 'b' }],
    [{ manager: 'a', time: '2026-01-01T00:00:00Z' }],
    [{ manager: 'a' }, { manager: 'b' }],
  ],
  status: [
    undefined,
    { conditions: [condition('Complete', 'True', 'JobSetCompleted')] },
    { conditions: [condition('Failed', 'True', 'DeadlineExceeded')] },
    { conditions: [condition('Failed', 'True', 'JobSetFailed')] },
    { conditions: 'x' },
  ],
};
const SHAPES = ['object', 'trainer absent', 'trainer null', 'trainer a string', 'spec absent', 'spec a list'] as const;

function build(choices: Record<string, number>, shape: (typeof SHAPES)[number]): Record<string, any> {
  const o: Record<string, any> = structuredClone(trainJob());
  for (const [path, values] of Object.entries(FIELD_VALUES)) {
    const value = structuredClone(values[choices[path] % values.length]);
    const [head, ...rest] = path === 'spec.trainer.a.b' ? ['spec', 'trainer', 'a.b'] : path.split('.');
    let parent = o;
    let key = head;
    for (const step of rest) {
      parent = parent[key];
      key = step;
    }
    if (value === undefined) delete parent[key];
    else parent[key] = value;
  }
  if (shape === 'trainer absent') delete o.spec.trainer;
  if (shape === 'trainer null') o.spec.trainer = null;
  if (shape === 'trainer a string') o.spec.trainer = 'x';
  if (shape === 'spec absent') delete o.spec;
  if (shape === 'spec a list') o.spec = [1];
  return o;
}

const choicesArb = fc.record(
  Object.fromEntries(Object.keys(FIELD_VALUES).map((k) => [k, fc.nat(20)])) as Record<string, fc.Arbitrary<number>>,
);
const updateArb = fc.record({
  old: choicesArb,
  fresh: choicesArb,
  keep: fc.record(
    Object.fromEntries(Object.keys(FIELD_VALUES).map((k) => [k, fc.boolean()])) as Record<
      string,
      fc.Arbitrary<boolean>
    >,
  ),
  oldShape: fc.constantFrom(...SHAPES),
  newShape: fc.oneof(fc.constant('same' as const), fc.constantFrom(...SHAPES)),
});

type Update = typeof updateArb extends fc.Arbitrary<infer T> ? T : never;

function decideBothWays(policy: Policy, update: Update): void {
  const newChoices = Object.fromEntries(
    Object.keys(FIELD_VALUES).map((k) => [k, update.keep[k] ? update.old[k] : update.fresh[k]]),
  );
  const oldObj = build(update.old, update.oldShape);
  const obj = build(newChoices, update.newShape === 'same' ? update.oldShape : update.newShape);
  const root = policy.tableRoot;
  const correlation = policy.crd ? policy.crd.checks.correlate(obj, oldObj) : correlate(root, obj, oldObj);
  const fast = runTable(policy.table, new RuleRun(true), root, obj, correlation);
  const full = runTable(policy.table, new RuleRun(true), root, obj, correlation, { fastPath: false });
  assert.deepEqual(fast, full);
}

describe('the fast path gives exactly the errors CEL gives', () => {
  it('the table alone, 1,500 random updates', () => {
    const policy = buildPolicy();
    fc.assert(
      fc.property(updateArb, (u) => decideBothWays(policy, u)),
      { numRuns: 1_500 },
    );
  });
  it("behind Trainer v2.3.0's CRD (typed values), 700 random updates", () => {
    const policy = policyFromCrd(trainJobCrdV230Object());
    fc.assert(
      fc.property(updateArb, (u) => decideBothWays(policy, u)),
      { numRuns: 700 },
    );
  });
});

describe('long lists (converted when first read) compare as CEL compares them', () => {
  const env = (n: number) => Array.from({ length: n }, (_, i) => ({ name: `V${i}`, value: String(i) }));
  const cases: [string, (o: Record<string, any>) => void, string[]][] = [
    ['200 env entries reordered (list-type map: no change)', (o) => o.spec.trainer.env.reverse(), []],
    [
      'one of 200 env entries changed',
      (o) => (o.spec.trainer.env[150].value = 'x'),
      ['spec.trainer.env trainer-env-immutable'],
    ],
    [
      '200 args reordered (atomic list)',
      (o) => o.spec.trainer.args.reverse(),
      ['spec.trainer.args trainer-args-immutable'],
    ],
    ['200 args unchanged, numNodes changed while suspended', (o) => (o.spec.trainer.numNodes = 3), []],
  ];
  for (const policy of [buildPolicy(), policyFromCrd(trainJobCrdV230Object())]) {
    for (const [name, change, want] of cases) {
      it(`${policy.crd ? 'CRD' : 'table'}: ${name}`, () => {
        const oldObj: Record<string, any> = structuredClone(trainJob());
        oldObj.spec.trainer.env = env(200);
        oldObj.spec.trainer.args = env(200).map((e) => e.name);
        const obj = structuredClone(oldObj);
        change(obj);
        const correlation = policy.crd
          ? policy.crd.checks.correlate(obj, oldObj)
          : correlate(policy.tableRoot, obj, oldObj);
        for (const fastPath of [true, false]) {
          const errors = runTable(policy.table, new RuleRun(true), policy.tableRoot, obj, correlation, { fastPath });
          assert.deepEqual(
            errors.map((e) => `${e.field} ${e.origin}`),
            want,
            `fastPath ${fastPath}`,
          );
        }
      });
    }
  }
});
