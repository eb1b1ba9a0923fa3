import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { defaultRuntimePatchTimes, metav1Time, equalNilAsEmpty } from '../../src/webhook/defaulting.ts';

const NOW = new Date('2026-03-04T05:06:07.891Z');
const STAMP = '2026-03-04T05:06:07Z';
const OLD_TIME = '2025-12-01T10:00:00Z';
const OWN_TIME = '2026-01-15T08:30:00Z';

function job(patches: unknown[] | undefined) {
  return {
    apiVersion: 'trainer.kubeflow.org/v1alpha1',
    kind: 'TrainJob',
    metadata: { name: 'j' },
    spec: patches === undefined ? {} : { runtimePatches: patches },
  };
}
function patch(manager: string, labels: Record<string, string>, time?: string | null) {
  const p: Record<string, unknown> = { manager, trainingRuntimeSpec: { template: { metadata: { labels } } } };
  if (time !== undefined) p.time = time;
  return p;
}
const at = (i: number) => `/spec/runtimePatches/${i}/time`;

describe('metav1Time', () => {
  it('is RFC 3339 in UTC with whole seconds', () => {
    assert.equal(metav1Time(NOW), STAMP);
    assert.equal(metav1Time(new Date('2026-03-04T05:06:07Z')), STAMP);
  });
});

describe('defaulting on CREATE', () => {
  const table = [
    { name: 'no runtimePatches: no patch', patches: undefined, want: [] },
    { name: 'empty runtimePatches: no patch', patches: [], want: [] },
    {
      name: 'stamps every patch without a time',
      patches: [patch('kueue', { a: '1' }), patch('user', { b: '2' })],
      want: [
        { op: 'add', path: at(0), value: STAMP },
        { op: 'add', path: at(1), value: STAMP },
      ],
    },
    {
      name: 'keeps a time a patch carries',
      patches: [patch('kueue', { a: '1' }, OWN_TIME), patch('user', {})],
      want: [{ op: 'add', path: at(1), value: STAMP }],
    },
    {
      name: 'a null time is replaced',
      patches: [patch('kueue', { a: '1' }, null)],
      want: [{ op: 'replace', path: at(0), value: STAMP }],
    },
  ];
  for (const row of table) {
    it(row.name, () =>
      assert.deepEqual(defaultRuntimePatchTimes('CREATE', job(row.patches), undefined, NOW), row.want),
    );
  }
});

describe('defaulting on UPDATE (matched by manager)', () => {
  const table = [
    {
      name: 'unchanged patch without a time gets the old time back',
      old: [patch('kueue', { a: '1' }, OLD_TIME)],
      now: [patch('kueue', { a: '1' })],
      want: [{ op: 'add', path: at(0), value: OLD_TIME }],
    },
    {
      name: 'unchanged patch already carrying the old time: no patch',
      old: [patch('kueue', { a: '1' }, OLD_TIME)],
      now: [patch('kueue', { a: '1' }, OLD_TIME)],
      want: [],
    },
    {
      name: 'unchanged patch with a different time gets the old time back (only time changed)',
      old: [patch('kueue', { a: '1' }, OLD_TIME)],
      now: [patch('kueue', { a: '1' }, OWN_TIME)],
      want: [{ op: 'replace', path: at(0), value: OLD_TIME }],
    },
    {
      name: 'changed patch without a time is stamped',
      old: [patch('kueue', { a: '1' }, OLD_TIME)],
      now: [patch('kueue', { a: '2' })],
      want: [{ op: 'add', path: at(0), value: STAMP }],
    },
    {
      name: 'changed patch keeps a time it carries',
      old: [patch('kueue', { a: '1' }, OLD_TIME)],
      now: [patch('kueue', { a: '2' }, OWN_TIME)],
      want: [],
    },
    {
      name: 'new patch is stamped, new patch with its own time keeps it',
      old: [patch('kueue', { a: '1' }, OLD_TIME)],
      now: [patch('kueue', { a: '1' }, OLD_TIME), patch('user', { b: '1' }), patch('other', { c: '1' }, OWN_TIME)],
      want: [{ op: 'add', path: at(1), value: STAMP }],
    },
    {
      name: 'matching is by manager, not by position',
      old: [patch('a', { x: '1' }, OLD_TIME), patch('b', { y: '1' }, OWN_TIME)],
      now: [patch('b', { y: '1' }), patch('a', { x: '1' })],
      want: [
        { op: 'add', path: at(0), value: OWN_TIME },
        { op: 'add', path: at(1), value: OLD_TIME },
      ],
    },
    {
      name: 'same content under another manager is new',
      old: [patch('a', { x: '1' }, OLD_TIME)],
      now: [patch('b', { x: '1' })],
      want: [{ op: 'add', path: at(0), value: STAMP }],
    },
    {
      name: 'unchanged since an old version without a time: the time the update adds is dropped (upstream: patch.Time = old.Time)',
      old: [patch('kueue', { a: '1' })],
      now: [patch('kueue', { a: '1' }, OWN_TIME)],
      want: [{ op: 'remove', path: at(0) }],
    },
    {
      name: 'unchanged, neither side has a time: nothing',
      old: [patch('kueue', { a: '1' })],
      now: [patch('kueue', { a: '1' })],
      want: [],
    },
    {
      name: 'empty list equals absent list (Go nil and empty slices)',
      old: [{ manager: 'm', time: OLD_TIME, trainingRuntimeSpec: { template: { spec: { replicatedJobs: [] } } } }],
      now: [{ manager: 'm', trainingRuntimeSpec: { template: { spec: {} } } }],
      want: [{ op: 'add', path: at(0), value: OLD_TIME }],
    },
  ];
  for (const row of table) {
    it(row.name, () => assert.deepEqual(defaultRuntimePatchTimes('UPDATE', job(row.now), job(row.old), NOW), row.want));
  }

  it('DELETE and CONNECT are never patched', () => {
    assert.deepEqual(defaultRuntimePatchTimes('DELETE', job([patch('a', {})]), undefined, NOW), []);
    assert.deepEqual(defaultRuntimePatchTimes('CONNECT', job([patch('a', {})]), undefined, NOW), []);
  });

  it('ignores what is not a list of objects (the schema check reports it)', () => {
    assert.deepEqual(defaultRuntimePatchTimes('CREATE', { spec: { runtimePatches: 'x' } }, undefined, NOW), []);
    assert.deepEqual(defaultRuntimePatchTimes('CREATE', job(['x', null, patch('a', {})]), undefined, NOW), [
      { op: 'add', path: at(2), value: STAMP },
    ]);
    assert.deepEqual(defaultRuntimePatchTimes('CREATE', null, undefined, NOW), []);
  });
});

describe('equalNilAsEmpty', () => {
  it('treats absent, null and [] alike, but not {}', () => {
    assert.ok(equalNilAsEmpty({ a: 1 }, { a: 1, b: null }));
    assert.ok(equalNilAsEmpty({ a: [] }, {}));
    assert.ok(!equalNilAsEmpty({ a: {} }, {}));
    assert.ok(!equalNilAsEmpty([1, 2], [2, 1]));
    assert.ok(equalNilAsEmpty(2n ** 60n, 2n ** 60n));
  });
});
