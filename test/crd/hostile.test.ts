// Untrusted objects: wrong types anywhere, prototype keys, huge nesting. Every entry point must
// answer with field errors (or nothing), never throw, and never touch Object.prototype.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { compileCrdSchema, type CompiledCrdSchema } from '../../src/crd/index.ts';
import { errorString, type FieldError } from '../../src/field/errors.ts';
import { parseJsonLossless } from '../../src/json/lossless.ts';
import { trainJob, trainJobCrd, widgetCrdObject } from './fixtures.ts';

const KEYS = [
  '__proto__',
  'constructor',
  'toString',
  'hasOwnProperty',
  'name',
  'value',
  'spec',
  'trainer',
  'numNodes',
  'env',
  'limits',
  'cpu',
  'kind',
  'apiVersion',
  'metadata',
  '',
];
const anything = fc.anything({ key: fc.constantFrom(...KEYS), withBigInt: true, maxDepth: 4, withNullPrototype: true });

function assertFieldErrors(errors: unknown): void {
  assert.ok(Array.isArray(errors));
  for (const e of errors as FieldError[]) {
    assert.equal(typeof e.type, 'string');
    assert.equal(typeof e.field, 'string');
    assert.equal(typeof errorString(e), 'string');
  }
}

/** Runs every entry point the webhook uses on one CREATE and one UPDATE. */
function exercise(crd: CompiledCrdSchema, obj: unknown, old: unknown): void {
  const { object } = crd.decode(obj);
  const created = crd.prepareForCreate(object);
  assertFieldErrors(crd.validate(created));
  const oldObject = crd.decode(old).object;
  const updated = crd.prepareForUpdate(object, oldObject);
  assertFieldErrors(crd.validateUpdate(updated, oldObject));
  const corr = crd.correlate(updated, oldObject);
  assert.equal(typeof corr.deepEqual(), 'boolean');
  for (const rule of crd.rules) crd.valuesAt(updated, rule.steps);
  assertFieldErrors(crd.validate(obj));
}

describe('hostile input', () => {
  const crd = trainJobCrd();

  it('random values in every place of a TrainJob: errors, never a throw', () => {
    fc.assert(
      fc.property(
        anything,
        anything,
        anything,
        anything,
        anything,
        anything,
        (runtimeRef, numNodes, env, limits, rest, old) => {
          const obj = trainJob({
            runtimeRef,
            trainer: { numNodes, env, resourcesPerNode: { limits } },
            ...(typeof rest === 'object' && rest !== null ? rest : { rest }),
          });
          exercise(crd, obj, old);
          exercise(crd, rest, obj);
        },
      ),
      { numRuns: 300 },
    );
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
  });

  it('a whole object of the wrong type', () => {
    for (const odd of [
      null,
      undefined,
      0,
      -0,
      NaN,
      Infinity,
      2n ** 70n,
      'x',
      true,
      [],
      [trainJob({})],
      new Date(0),
      Object.create(null),
    ]) {
      assert.doesNotThrow(() => exercise(crd, odd, odd));
    }
  });

  it('__proto__ keys from JSON stay data: pruned and reported, no prototype changes', () => {
    const text =
      '{"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"TrainJob","metadata":{"name":"j","__proto__":{"polluted":1}},"spec":{"__proto__":{"polluted":1},"runtimeRef":{"name":"r","__proto__":{"polluted":1}},"trainer":{"env":[{"name":"A","__proto__":{"polluted":1}}],"resourcesPerNode":{"limits":{"__proto__":"1","constructor":"2"}}}}}';
    const obj = parseJsonLossless(text);
    const { object, warnings } = crd.decode(obj);
    assert.deepEqual(warnings, [
      'unknown field "metadata.__proto__"',
      'unknown field "spec.__proto__"',
      'unknown field "spec.runtimeRef.__proto__"',
      'unknown field "spec.trainer.env[0].__proto__"',
    ]);
    // Map keys are data: `limits` may hold a key named __proto__, validated like any other.
    const limits = (object as any).spec.trainer.resourcesPerNode.limits;
    assert.deepEqual(Object.keys(limits), ['__proto__', 'constructor']);
    assert.equal(Object.getPrototypeOf(limits), Object.prototype);
    assert.deepEqual(crd.validate(crd.prepareForCreate(object)), []);
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
  });

  it('data nested 100,000 deep where a string list belongs, and under preserve-unknown-fields', () => {
    let deep: unknown = 'x';
    for (let i = 0; i < 100_000; i++) deep = [deep];
    const obj = trainJob({ runtimeRef: { name: 'r' }, trainer: { command: deep } });
    const errors = crd.validate(crd.prepareForCreate(crd.decode(obj).object));
    assert.deepEqual(
      errors.map((e) => e.field),
      ['spec.trainer.command[0]'],
    );

    const widget = compileCrdSchema(widgetCrdObject(true));
    const w = { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' }, spec: { free: { deep } } };
    assert.doesNotThrow(() => exercise(widget, w, w));
    assert.doesNotThrow(() => exercise(widget, w, { ...w, spec: { free: { deep: [deep] } } }));
  });

  it('a list of 100,000 items is checked in linear time (one maxItems error)', () => {
    const command = Array.from({ length: 100_000 }, (_, i) => `a${i}`);
    const errors = crd.validate(trainJob({ runtimeRef: { name: 'r' }, trainer: { command } }));
    assert.deepEqual(
      errors.map((e) => e.type),
      ['FieldValueTooMany'],
    );
  });
});
