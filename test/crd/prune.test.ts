import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compileCrdSchema } from '../../src/crd/index.ts';
import { deepClone } from '../../src/crd/values.ts';
import { trainJob, trainJobCrd, widgetCrdObject } from './fixtures.ts';

const crd = trainJobCrd();
const widget = compileCrdSchema(widgetCrdObject(false));
const w = (spec: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  apiVersion: 'example.com/v1',
  kind: 'Widget',
  metadata: { name: 'w' },
  spec,
  ...extra,
});
const spec = (obj: unknown): Record<string, any> => (obj as { spec: Record<string, any> }).spec;

// Expected paths and warnings were checked against kube-apiserver v1.35.8 (fieldValidation=Warn).
describe('prune: unknown fields are dropped and reported like the API server', () => {
  it('drops unknown fields under spec, in objects and list items, and reports sorted paths', () => {
    const input = trainJob(
      { foo: 2, runtimeRef: { name: 'torch', bar: 1 }, trainer: { numNodes: 2, env: [{ name: 'A', zz: 1 }] } },
      { metadata: { name: 'job', foo: 1 } },
    );
    const { object, pruned } = crd.prune(input);
    assert.deepEqual(pruned, ['metadata.foo', 'spec.foo', 'spec.runtimeRef.bar', 'spec.trainer.env[0].zz']);
    assert.deepEqual(spec(object), { runtimeRef: { name: 'torch' }, trainer: { numNodes: 2, env: [{ name: 'A' }] } });
  });

  it('keeps apiVersion, kind and metadata at the root; drops unknown root fields', () => {
    const { object, pruned } = crd.prune(trainJob({ runtimeRef: { name: 'x' } }, { extra: true }));
    assert.deepEqual(pruned, ['extra']);
    assert.equal((object as Record<string, unknown>).kind, crd.info.kind);
    assert.equal((object as Record<string, unknown>).apiVersion, crd.info.apiVersion);
  });

  it('round-trips metadata like ObjectMeta: unknown keys dropped, creationTimestamp null added', () => {
    const { object, pruned } = crd.prune(
      trainJob({}, { metadata: { name: 'j', labels: { a: 'b' }, ownerReferences: [{ name: 'o', zz: 1 }], bogus: 1 } }),
    );
    assert.deepEqual(pruned, ['metadata.bogus', 'metadata.ownerReferences[0].zz']);
    assert.deepEqual((object as Record<string, unknown>).metadata, {
      name: 'j',
      labels: { a: 'b' },
      ownerReferences: [{ name: 'o' }],
      creationTimestamp: null,
    });
  });

  it('drops a non-nullable null without a default; keeps one that defaulting will fill', () => {
    const { object } = crd.prune(
      trainJob({ runtimeRef: { name: 'x', kind: null }, trainer: { numNodes: null, image: null } }),
    );
    assert.deepEqual(spec(object), { runtimeRef: { name: 'x', kind: null }, trainer: {} });
  });

  it('keeps nulls inside lists (the validator reports them)', () => {
    const { object } = crd.prune(trainJob({ trainer: { command: [null, 'a'] } }));
    assert.deepEqual(spec(object).trainer.command, [null, 'a']);
  });

  it('leaves the input alone', () => {
    const input = trainJob({ foo: 1 });
    const before = deepClone(input);
    crd.prune(input);
    assert.deepEqual(input, before);
  });
});

describe('prune: x-kubernetes-preserve-unknown-fields and embedded resources', () => {
  it('keeps unknown fields under preserve-unknown-fields, still pruning known typed children', () => {
    const { object, pruned } = widget.prune(w({ free: { limit: 1, anything: { deep: [{ x: 1 }] } }, nope: 1 }));
    assert.deepEqual(pruned, ['spec.nope']);
    assert.deepEqual(spec(object).free, { limit: 1, anything: { deep: [{ x: 1 }] } });
  });

  it('keeps apiVersion, kind and metadata of an embedded resource, prunes the rest by its schema', () => {
    const template = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'p', x: 1, creationTimestamp: null },
      spec: { x: 'a', y: 'b' },
      status: {},
    };
    const { object, pruned } = widget.prune(w({ template }));
    // Structural pruning first (sorted), then the embedded ObjectMeta round trip (which also drops
    // a zero creationTimestamp).
    assert.deepEqual(pruned, ['spec.template.spec.y', 'spec.template.status', 'spec.template.metadata.x']);
    assert.deepEqual(spec(object).template, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'p' },
      spec: { x: 'a' },
    });
  });

  it('reports apiVersion/kind/metadata as unknown below the root when the schema lacks them', () => {
    const { pruned } = widget.prune(w({ nested: { kind: 'x', metadata: {} } }));
    assert.deepEqual(pruned, ['spec.nested.kind', 'spec.nested.metadata']);
  });
});

describe('prune: hostile input', () => {
  it('__proto__, constructor and toString are plain unknown keys; nothing is polluted', () => {
    const input = JSON.parse(
      '{"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"TrainJob","metadata":{"name":"j"},"spec":{"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}},"runtimeRef":{"name":"x","toString":"a","__proto__":{"kind":"Evil"}}}}',
    );
    const { object, pruned } = crd.prune(input);
    assert.deepEqual(pruned, [
      'spec.__proto__',
      'spec.constructor',
      'spec.runtimeRef.__proto__',
      'spec.runtimeRef.toString',
    ]);
    assert.deepEqual(spec(object), { runtimeRef: { name: 'x' } });
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
    assert.equal(Object.getPrototypeOf(spec(object)), Object.prototype);
  });

  it('an unknown field holding arrays nested 100,000 deep is dropped without recursion limits', () => {
    let deep: unknown = [];
    for (let i = 0; i < 100_000; i++) deep = [deep];
    const { pruned } = crd.prune(trainJob({ deep, runtimeRef: { name: 'x' } }));
    assert.deepEqual(pruned, ['spec.deep']);
  });
});
