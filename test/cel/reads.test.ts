// What a rule reads of self/oldSelf (src/cel/reads.ts) and the views built from it
// (toCelView): a rule evaluated over the view must answer exactly as over the whole values, the
// outcome, the error text and the cost alike. Random values under a typed schema with wrong
// types, nulls and absent fields, for rules of every shape the CRDs and the table use and more;
// then the table and the embedded CRD's rules over random TrainJob updates.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { createCelEnvironment } from '../../src/cel/environment.ts';
import { compileRule } from '../../src/cel/compile.ts';
import { readsOf, WHOLE, type Reads } from '../../src/cel/reads.ts';
import { RuleRun } from '../../src/cel/run-rules.ts';
import { runCrdRules } from '../../src/cel/crd-rules.ts';
import type { CelSchema } from '../../src/cel/values.ts';
import { runTable } from '../../src/rules/compiled-table.ts';
import { loadEmbeddedPolicy } from '../../src/rules/crd-policy.ts';
import { condition } from '../rules/fixtures.ts';
import { trainJobVariants } from '../support/trainjob-variants.ts';

const env = createCelEnvironment();

/** Reads as plain JSON: WHOLE as "whole", maps as objects. */
const plain = (r: Reads): unknown =>
  r === WHOLE ? 'whole' : Object.fromEntries([...r].map(([k, v]) => [k, plain(v)]));

describe('readsOf', () => {
  const cases: [string, string, unknown, unknown][] = [
    ['a chain of selections', 'self.a.b == 1', { a: { b: 'whole' } }, {}],
    ['has() reads presence only', 'has(self.a.b)', { a: { b: {} } }, {}],
    ['has() beside a read of the same field', 'has(self.a) && self.a.b == 1', { a: { b: 'whole' } }, {}],
    [
      'a whole read beside a selection below it',
      'self.a == oldSelf.a && self.a.b == 1',
      { a: 'whole' },
      { a: 'whole' },
    ],
    ['the variable itself', 'self == oldSelf', 'whole', 'whole'],
    ['an index ends the chain', "self.a['b'] == 1", { a: 'whole' }, {}],
    ['`in` reads the map whole', "'b' in self.a", { a: 'whole' }, {}],
    ['a receiver ends the chain', "self.a.b.matches('x')", { a: { b: 'whole' } }, {}],
    ['a macro range is read whole', 'self.l.exists(c, c.t == 1)', { l: 'whole' }, {}],
    ['optional selection', 'self.?a.?b.orValue(1) == 1', { a: { b: 'whole' } }, {}],
    ['a comprehension variable named self reads everything', 'self.l.all(self, self.x == 1)', 'whole', {}],
    ['size() of a field', 'size(self.metadata.name) <= 63', { metadata: { name: 'whole' } }, {}],
    ['a variable not used', 'true', {}, {}],
    [
      'oldSelf alone',
      'has(oldSelf.status) && oldSelf.status.conditions.exists(c, c.type == "x")',
      {},
      { status: { conditions: 'whole' } },
    ],
  ];
  for (const [name, rule, self, oldSelf] of cases) {
    it(name, () => {
      const c = compileRule(env, rule);
      assert.deepEqual(plain(c.selfReads), self);
      assert.deepEqual(plain(c.oldSelfReads), oldSelf);
      assert.deepEqual(plain(readsOf(undefined, 'self')), {}); // no AST: nothing read
    });
  }
});

// A typed schema with the shapes conversion distinguishes: objects, int/number/int-or-string,
// set and map lists, atomic lists, maps (additionalProperties), untyped (preserve-unknown) parts.
const SCHEMA: CelSchema = {
  type: 'object',
  properties: {
    metadata: { type: 'object' },
    a: {
      type: 'object',
      properties: {
        b: { type: 'integer' },
        c: { type: 'string' },
        d: { type: 'object', properties: { e: { type: 'number' }, f: { 'x-kubernetes-int-or-string': true } } },
        m: { type: 'object', additionalProperties: { type: 'integer' } },
      },
    },
    l: {
      type: 'array',
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['t'],
      items: { type: 'object', properties: { t: { type: 'string' }, v: { type: 'integer' } } },
    },
    s: { type: 'array', 'x-kubernetes-list-type': 'set', items: { type: 'integer' } },
    u: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
    n: { type: 'number' },
  },
};

const KEYS = ['a', 'b', 'c', 'd', 'e', 'f', 'm', 'l', 's', 'u', 'n', 't', 'v', 'x', 'metadata', 'name', 'generateName'];
const scalar = fc.oneof(fc.integer({ min: -3, max: 3 }), fc.constantFrom(1.5, 'x', 'y', '', true, false, null));
const { value } = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small', withCrossShrink: true }, scalar, tie('list'), tie('object')),
  list: fc.array(tie('value'), { maxLength: 3 }),
  object: fc.dictionary(fc.constantFrom(...KEYS), tie('value'), { maxKeys: 5 }),
}));
const objectArb = fc.dictionary(fc.constantFrom(...KEYS), value, { maxKeys: 7 });

/** Rules of every shape: chains, has(), optionals, whole reads, operands, macros, errors. */
const RULE_TEXTS = [
  'self.a.b == oldSelf.a.b',
  'has(self.a) && has(self.a.b) && self.a.b > 0',
  'has(self.a.d.e)',
  'self.a.d.e == 1.5 || self.a.d.f == 1',
  'self.?a.?c.orValue("z") == oldSelf.?a.?c.orValue("z")',
  'self.a == oldSelf.a',
  'self.l == oldSelf.l && self.s == oldSelf.s',
  'self.l.exists(i, i.t == "x")',
  'self.a.m.all(k, self.a.m[k] > 0)',
  "'b' in self.a",
  'size(self.a) > 1',
  'self.u.x == oldSelf.u.x',
  'has(self.u.x.y)',
  'self.metadata.name == "x" || has(self.metadata.generateName)',
  'has(oldSelf.metadata.name)',
  'self.n + 1.0 > 0.0',
  'self.a.c.startsWith("x")',
  'self == oldSelf',
  'self.a.b == self.a.c',
  'self.x.y.z == 1',
  'has(self.a.b.c)',
  'self.a.?d.e.orValue(0.0) == 0.0',
  'type(self.a) == map',
];
const RULES = RULE_TEXTS.map((r) => compileRule(env, r));

function outcomes(views: boolean, self: unknown, oldSelf: unknown, path: string): unknown[] {
  const run = new RuleRun(true, { views });
  return RULES.map((compiled) =>
    run.evaluate({ compiled }, { path, value: self, oldValue: oldSelf, schema: SCHEMA, ratchet: false }),
  );
}

describe('a rule over its view answers as over the whole values', () => {
  it('every rule shape, 1,000 random pairs, below the root and at it', () => {
    fc.assert(
      fc.property(objectArb, objectArb, fc.constantFrom('x', ''), (self, oldSelf, path) => {
        assert.deepEqual(outcomes(true, self, oldSelf, path), outcomes(false, self, oldSelf, path));
      }),
      { numRuns: 1_000 },
    );
  });
  it('the same cost: a rule over its view runs out of the per-call limit exactly when the whole one does', async () => {
    // ~1,000,000 cost units in exists() over a long list: the view reads the list whole, so the count is the same.
    const compiled = compileRule(env, 'self.a.b == 1 && self.l.all(i, i.all(j, j.all(k, k > 0)))');
    const long = Array.from({ length: 120 }, () =>
      Array.from({ length: 120 }, () => Array.from({ length: 80 }, () => 1)),
    );
    const schema: CelSchema = {
      type: 'object',
      properties: { a: { type: 'object', properties: { b: { type: 'integer' } } } },
    };
    const at = { path: 'x', value: { a: { b: 1 }, l: long }, oldValue: undefined, schema, ratchet: false };
    const withViews = new RuleRun(false).evaluate({ compiled }, at);
    const whole = new RuleRun(false, { views: false }).evaluate({ compiled }, at);
    assert.equal(withViews.kind, 'error');
    assert.deepEqual(withViews, whole);
  });
});

describe('at the root, metadata is name and generateName to selections, the whole map to size() and equality (model.WithTypeAndObjectMeta narrows the schema, not the value)', () => {
  for (const views of [true, false]) {
    it(views ? 'with views' : 'converted whole', () => {
      const at = (labels: string) => ({
        path: '',
        value: { metadata: { name: 'a', labels: { x: labels } } },
        oldValue: { metadata: { name: 'a', generation: 1, labels: { x: 'y' } } },
        schema: SCHEMA,
        ratchet: false,
      });
      const run = (rule: string, labels: string) =>
        new RuleRun(true, { views }).evaluate({ compiled: compileRule(env, rule) }, at(labels));
      // A label changed: the whole maps differ (unstructuredMap.Equal); the declared fields do not.
      assert.deepEqual(run('self.metadata == oldSelf.metadata', 'z'), { kind: 'failed' });
      assert.deepEqual(run('self == oldSelf', 'z'), { kind: 'failed' });
      assert.deepEqual(run('self.metadata.name == oldSelf.metadata.name', 'z'), { kind: 'passed' });
      // size() counts every key of the map (unstructuredMap.Size): name, generation, labels.
      assert.deepEqual(run('size(oldSelf.metadata) == 3', 'y'), { kind: 'passed' });
      // A non-string name is not there for CEL, with views and without.
      const badName = {
        path: '',
        value: { metadata: { name: 0 } },
        oldValue: { metadata: { name: 0 } },
        schema: SCHEMA,
        ratchet: false,
      };
      assert.equal(
        new RuleRun(true, { views }).evaluate({ compiled: compileRule(env, 'has(self.metadata.name)') }, badName).kind,
        'failed',
      );
    });
  }
});

// Random TrainJob updates: the fields the table and the embedded CRD's rules read, each from a few
// values (wrong types and nulls included).
const FIELDS: Record<string, unknown[]> = {
  'metadata.name': ['llama-ft', 'Bad_Name', 'x'.repeat(70), undefined],
  'spec.suspend': [true, false, undefined, 'yes'],
  'spec.managedBy': ['trainer.kubeflow.org/trainjob-controller', 'kueue.x-k8s.io/multikueue', 'other', undefined],
  'spec.trainer.numNodes': [1, 2, -1, undefined, '2'],
  'spec.trainer.image': ['a:1', 'a:2', undefined],
  'spec.trainer.env': [[{ name: 'A', value: '1' }], [{ name: 'A', value: '2' }], undefined],
  'spec.trainer.future': [undefined, 1],
  'spec.runtimeRef': [{ name: 'torch' }, { name: 'mpi' }],
  'spec.initializer': [undefined, { dataset: { storageUri: 'hf://x' } }, { dataset: { storageUri: 'bad' } }],
  'spec.runtimePatches': [undefined, [{ manager: 'a' }], [{ manager: 'b' }]],
  status: [
    undefined,
    { conditions: [condition('Complete', 'True', 'JobSetCompleted')] },
    { conditions: [condition('Failed', 'True', 'JobSetFailed')] },
    { trainerStatus: {} },
  ],
};

const { build, choiceArb } = trainJobVariants(FIELDS, 10);

describe("the table and the embedded CRD's rules give the same errors and warnings with views", () => {
  it('400 random updates', async () => {
    const policy = await loadEmbeddedPolicy();
    const crd = policy.crd!;
    const decide = (views: boolean, obj: unknown, oldObj: unknown) => {
      const correlation = crd.checks.correlate(obj, oldObj);
      const run = new RuleRun(true, { views });
      const crdRules = runCrdRules(crd.rules, run, crd.checks.root, obj, correlation);
      return { crdRules, table: runTable(policy.table, run, policy.tableRoot, obj, correlation, { fastPath: false }) };
    };
    let failures = 0;
    fc.assert(
      fc.property(choiceArb, choiceArb, (a, b) => {
        const [obj, oldObj] = [build(a), build(b)];
        const got = decide(true, obj, oldObj);
        failures += got.table.length + got.crdRules.errors.length;
        assert.deepEqual(got, decide(false, obj, oldObj));
      }),
      { numRuns: 400 },
    );
    assert.ok(failures > 0, 'the random updates never failed a rule: the comparison would prove little');
  });
});
