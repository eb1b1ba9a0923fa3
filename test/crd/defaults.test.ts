import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { applyDefaults, compileCrdSchema } from '../../src/crd/index.ts';
import { deepClone } from '../../src/crd/values.ts';
import { schemaAt, trainJob, trainJobCrd, widgetCrdObject } from './fixtures.ts';

const crd = trainJobCrd();
/** The CRD's own default at a schema path: what each expectation below is built from. */
const defaultOf = (path: string): unknown => {
  const s = schemaAt(crd.schema, path);
  assert.ok(Object.hasOwn(s, 'default'), `the CRD has a default at ${path}`);
  return s.default;
};

const spec = (obj: unknown): Record<string, any> => (obj as { spec: Record<string, any> }).spec;

describe('applyDefaults: the TrainJob CRD defaults', () => {
  it('fills suspend, managedBy and runtimeRef.apiGroup/kind when absent', () => {
    const out = spec(crd.defaults(trainJob({ runtimeRef: { name: 'torch' } })));
    assert.equal(out.suspend, defaultOf('spec.suspend'));
    assert.equal(out.managedBy, defaultOf('spec.managedBy'));
    assert.equal(out.runtimeRef.apiGroup, defaultOf('spec.runtimeRef.apiGroup'));
    assert.equal(out.runtimeRef.kind, defaultOf('spec.runtimeRef.kind'));
    assert.equal(out.runtimeRef.name, 'torch');
  });

  it('keeps values that are set', () => {
    const input = trainJob({
      suspend: true,
      managedBy: 'kueue.x-k8s.io/multikueue',
      runtimeRef: { name: 'torch', kind: 'TrainingRuntime' },
    });
    const out = spec(crd.defaults(input));
    assert.equal(out.suspend, true);
    assert.equal(out.managedBy, 'kueue.x-k8s.io/multikueue');
    assert.equal(out.runtimeRef.kind, 'TrainingRuntime');
  });

  it('replaces null with the default where the schema is not nullable', () => {
    const out = spec(crd.defaults(trainJob({ suspend: null, runtimeRef: { name: 'torch', kind: null } })));
    assert.equal(out.suspend, defaultOf('spec.suspend'));
    assert.equal(out.runtimeRef.kind, defaultOf('spec.runtimeRef.kind'));
  });

  it('applies a property default only when its parent object exists', () => {
    // runtimeRef's defaults need a runtimeRef; trainer has no defaults of its own.
    const out = spec(crd.defaults(trainJob({})));
    assert.equal(out.runtimeRef, undefined);
    assert.equal(out.trainer, undefined);
    assert.equal(out.suspend, defaultOf('spec.suspend'));
  });

  it('applies defaults inside list items (env[*].valueFrom.secretKeyRef.name)', () => {
    const env = [
      { name: 'A', valueFrom: { secretKeyRef: { key: 'k' } } },
      { name: 'B', value: 'b' },
    ];
    const out = spec(crd.defaults(trainJob({ runtimeRef: { name: 'torch' }, trainer: { env } })));
    assert.equal(
      out.trainer.env[0].valueFrom.secretKeyRef.name,
      defaultOf('spec.trainer.env.[*].valueFrom.secretKeyRef.name'),
    );
    assert.deepEqual(out.trainer.env[1], { name: 'B', value: 'b' });
  });

  it('returns a new object and leaves the input alone; defaults are copies', () => {
    const input = trainJob({ runtimeRef: { name: 'torch' } });
    const before = deepClone(input);
    const a = crd.defaults(input);
    const b = crd.defaults(input);
    assert.deepEqual(input, before);
    assert.notEqual(spec(a).runtimeRef, spec(b).runtimeRef);
  });

  it('leaves non-objects and wrong types alone', () => {
    for (const odd of [
      null,
      7,
      'x',
      [1, 2],
      trainJob('spec' as never),
      trainJob({ runtimeRef: 'torch', trainer: [1] }),
    ]) {
      assert.doesNotThrow(() => crd.defaults(odd));
    }
    assert.equal(spec(crd.defaults(trainJob({ runtimeRef: 'torch' }))).runtimeRef, 'torch');
  });
});

describe('applyDefaults: nullable, list items and additionalProperties (structural defaulting rules)', () => {
  const widget = compileCrdSchema(widgetCrdObject(false));
  const w = (s: Record<string, unknown>) => ({
    apiVersion: 'example.com/v1',
    kind: 'Widget',
    metadata: { name: 'w' },
    spec: s,
  });

  it('defaults every map-list item', () => {
    const out = spec(widget.defaults(w({ items: [{ name: 'a' }, { name: 'b', note: 'mine' }] })));
    const note = schemaAt(widget.schema, 'spec.items.[*].note').default;
    assert.deepEqual(out.items, [
      { name: 'a', note },
      { name: 'b', note: 'mine' },
    ]);
  });

  it('keeps null where the schema is nullable (no default there)', () => {
    assert.equal(spec(widget.defaults(w({ ratio: null }))).ratio, null);
  });

  it('does not touch an embedded resource’s metadata or unknown fields kept by preserve-unknown-fields', () => {
    const out = spec(
      widget.defaults(
        w({ free: { anything: { deep: [1] } }, template: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' } } }),
      ),
    );
    assert.deepEqual(out.free, { anything: { deep: [1] } });
    assert.deepEqual(out.template.metadata, { name: 'p' });
  });

  it('applyDefaults(schema, obj) is the same function on a compiled node', () => {
    assert.deepEqual(applyDefaults(widget.root, w({})), widget.defaults(w({})));
  });
});
