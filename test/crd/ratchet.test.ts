// UPDATE ratcheting. The widget cases mirror updates sent to kube-apiserver v1.35.8 after
// tightening a CRD the objects were created under; every expectation here matched its answer.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  compileCrdSchema,
  correlatedOld,
  ratchetStateAt,
  semanticEqual,
  shouldRatchet,
  type CompiledCrdSchema,
} from '../../src/crd/index.ts';
import { messages, schemaAt, trainJob, trainJobCrd, trainJobCrdV230, widgetCrdObject } from './fixtures.ts';

type Obj = Record<string, any>;

/** The stored object as the API server would keep it under `crd`. */
function stored(crd: CompiledCrdSchema, obj: unknown): Obj {
  const created = crd.prepareForCreate(crd.decode(obj).object) as Obj;
  assert.deepEqual(messages(crd.validate(created)), [], 'the old object was valid when it was created');
  return {
    ...created,
    metadata: { ...created.metadata, uid: 'u1', resourceVersion: '1', creationTimestamp: '2025-01-01T00:00:00Z' },
  };
}

/** An UPDATE decided by `crd`: decode, the registry's update preparation, then validation. */
function update(crd: CompiledCrdSchema, old: Obj, edit: (o: Obj) => void): string[] {
  const next = structuredClone(old);
  edit(next);
  const decoded = crd.decode(next).object;
  return messages(crd.validateUpdate(crd.prepareForUpdate(decoded, old), old));
}

describe('ratcheting: a TrainJob created under Trainer v2.3.0’s CRD, updated under the current one', () => {
  const current = trainJobCrd();
  const v230 = trainJobCrdV230();
  const min = schemaAt(current.schema, 'spec.trainer.numNodes').minimum as number;
  assert.equal(schemaAt(v230.schema, 'spec.trainer.numNodes').minimum, undefined, 'v2.3.0 has no numNodes minimum');
  const tooFew = min - 1;
  const error = (v: number) =>
    `spec.trainer.numNodes: Invalid value: ${v}: spec.trainer.numNodes in body should be greater than or equal to ${min}`;
  const old = stored(v230, trainJob({ runtimeRef: { name: 'torch' }, trainer: { numNodes: tooFew, image: 'img:1' } }));

  it('the same object is refused on create under the current CRD', () => {
    assert.deepEqual(messages(current.validate(old)), [error(tooFew)]);
  });

  const cases: Array<[string, (o: Obj) => void, string[]]> = [
    ['labels change: allowed', (o) => (o.metadata.labels = { team: 'a' }), []],
    ['suspend: allowed', (o) => (o.spec.suspend = true), []],
    ['a finalizer is removed/added: allowed', (o) => (o.metadata.finalizers = ['example.com/cleanup']), []],
    [
      'another spec.trainer field changes: numNodes itself is unchanged, allowed',
      (o) => (o.spec.trainer.image = 'img:2'),
      [],
    ],
    [
      'numNodes changes to another invalid value: refused',
      (o) => (o.spec.trainer.numNodes = tooFew - 1),
      [error(tooFew - 1)],
    ],
    ['numNodes changes to a valid value: allowed', (o) => (o.spec.trainer.numNodes = min + 1), []],
    ['numNodes is removed: allowed', (o) => delete o.spec.trainer.numNodes, []],
  ];
  for (const [name, edit, expected] of cases) it(name, () => assert.deepEqual(update(current, old, edit), expected));

  it('numProcPerNode (a CEL bound): correlate() tells the CEL code the value is unchanged', () => {
    const before = stored(v230, trainJob({ runtimeRef: { name: 'torch' }, trainer: { numProcPerNode: 0 } }));
    const after = structuredClone(before);
    after.spec.suspend = true;
    const corr = current.correlate(after, before);
    assert.equal(shouldRatchet(ratchetStateAt(corr, 'spec.trainer.numProcPerNode')), true);
    assert.deepEqual(correlatedOld(corr, 'spec.trainer.numProcPerNode'), { correlated: true, oldValue: 0 });
    after.spec.trainer.numProcPerNode = -1;
    const changed = current.correlate(after, before);
    assert.equal(shouldRatchet(ratchetStateAt(changed, 'spec.trainer.numProcPerNode')), false);
  });
});

describe('ratcheting: correlation through maps, map lists, sets and atomic lists', () => {
  const loose = compileCrdSchema(widgetCrdObject(false));
  const tight = compileCrdSchema(widgetCrdObject(true));
  const w = (spec: Obj) => ({
    apiVersion: 'example.com/v1',
    kind: 'Widget',
    metadata: { name: 'w', namespace: 'd' },
    spec,
  });
  const tooLong = (p: string) => `${p}: Too long: may not be more than 3 bytes`;
  const belowZero = (p: string, v: number) =>
    `${p}: Invalid value: ${v}: ${p} in body should be greater than or equal to 0`;

  const cases: Array<[string, Obj, (o: Obj) => void, string[]]> = [
    [
      'metadata-only change: every old error is ratcheted',
      {
        count: -1,
        mode: 'zz',
        items: [{ name: 'a', size: -1 }],
        tags: ['long1'],
        cmd: ['long'],
        labels: { k: 'long' },
        nested: { a: { b: -1 } },
        free: { limit: 9, x: 1 },
      },
      (o) => (o.metadata.labels = { x: 'y' }),
      [],
    ],
    [
      'a map list reordered: items correlate by key',
      {
        count: 1,
        items: [
          { name: 'a', size: -1 },
          { name: 'b', size: -2 },
        ],
      },
      (o) => o.spec.items.reverse(),
      [],
    ],
    [
      'a sibling in a map-list item changes: the unchanged bad value is ratcheted',
      { items: [{ name: 'a', size: -1, note: 'x' }] },
      (o) => (o.spec.items[0].note = 'y'),
      [],
    ],
    [
      'a new map-list item is checked',
      { items: [{ name: 'a', size: -1 }] },
      (o) => o.spec.items.push({ name: 'c', size: -3 }),
      [belowZero('spec.items[1].size', -3)],
    ],
    [
      'a renamed map-list item is new',
      { items: [{ name: 'a', size: -1 }] },
      (o) => (o.spec.items[0].name = 'b'),
      [belowZero('spec.items[0].size', -1)],
    ],
    [
      'a set reordered: set items do not correlate, the list differs in order',
      { tags: ['long1', 'long2'], count: -1 },
      (o) => o.spec.tags.reverse(),
      [tooLong('spec.tags[0]'), tooLong('spec.tags[1]')],
    ],
    [
      'an atomic list appended to: its old items are checked again',
      { cmd: ['long'], count: 5 },
      (o) => o.spec.cmd.push('ok'),
      [tooLong('spec.cmd[0]')],
    ],
    [
      'an unchanged atomic list over maxItems: ratcheted',
      { cmd: ['long', 'long2', 'x'], count: 5 },
      (o) => (o.spec.count = 6),
      [],
    ],
    ['map values correlate by key', { labels: { k: 'long', j: 'ok' } }, (o) => (o.spec.labels.j = 'ok2'), []],
    ['a nested sibling changes', { nested: { a: { b: -1, c: 'x' } } }, (o) => (o.spec.nested.a.c = 'y'), []],
    [
      'under preserve-unknown-fields, known fields correlate',
      { free: { limit: 9, x: 1 } },
      (o) => (o.spec.free.x = 2),
      [],
    ],
    ['an enum value that stays: ratcheted', { mode: 'zz', count: 1 }, (o) => (o.spec.count = 2), []],
    [
      'list types: duplicates the old object already had are not reported',
      { dups: ['a', 'a'] },
      (o) => o.spec.dups.push('b', 'b'),
      [],
    ],
    [
      'list types: new duplicates are',
      { dups: ['a', 'b'] },
      (o) => (o.spec.dups = ['a', 'a']),
      ['spec.dups[1]: Duplicate value: "a"'],
    ],
    ['status changes are ignored (status subresource)', { count: 1 }, (o) => (o.status = { phase: 'Z' }), []],
  ];
  for (const [name, spec, edit, expected] of cases) {
    it(name, () => assert.deepEqual(update(tight, stored(loose, w(spec)), edit), expected));
  }
});

describe('correlate(): the old value a new value correlates with', () => {
  const widget = compileCrdSchema(widgetCrdObject(false));
  const old = {
    apiVersion: 'example.com/v1',
    kind: 'Widget',
    metadata: { name: 'w' },
    spec: {
      items: [
        { name: 'a', size: 1 },
        { name: 'b', size: 2 },
      ],
      tags: ['x', 'y'],
      cmd: ['p', 'q'],
      labels: { k: 'v' },
      ports: [{ port: 80, protocol: 'TCP' }],
      free: { limit: 1, extra: 1 },
    },
  };
  const next = structuredClone(old);
  next.spec.items.reverse();
  next.spec.tags.reverse();
  const corr = widget.correlate(next, old);

  const cases: Array<[string, ReturnType<typeof correlatedOld>]> = [
    ['spec.items[0]', { correlated: true, oldValue: old.spec.items[1] }],
    ['spec.items[1].size', { correlated: true, oldValue: 1 }],
    ['spec.ports[0]', { correlated: true, oldValue: old.spec.ports[0] }],
    ['spec.tags[0]', { correlated: false }],
    ['spec.cmd[0]', { correlated: false }],
    ['spec.labels[k]', { correlated: true, oldValue: 'v' }],
    ['spec.free.limit', { correlated: true, oldValue: 1 }],
    ['spec.free.extra', { correlated: false }],
    ['spec.missing', { correlated: false }],
    ['kind', { correlated: false }],
  ];
  for (const [path, expected] of cases) it(path, () => assert.deepEqual(correlatedOld(corr, path), expected));

  it('deep equality follows the list types: a reordered map list is equal, a reordered set is not', () => {
    assert.equal(corr.key('spec')!.key('items')!.deepEqual(), true);
    assert.equal(corr.key('spec')!.key('tags')!.deepEqual(), false);
    assert.equal(corr.key('spec')!.key('cmd')!.deepEqual(), true);
  });

  it('an object holding fields the schema does not know is never "unchanged" (CorrelatedObject.Key returns nil)', () => {
    assert.equal(corr.key('spec')!.key('free')!.deepEqual(), false);
    assert.equal(corr.key('metadata')!.deepEqual(), false);
  });

  it('below an uncorrelatable node, ratcheting asks the nearest correlatable ancestor', () => {
    assert.equal(shouldRatchet(ratchetStateAt(corr, 'spec.tags[0]')), false);
    const same = widget.correlate(old, structuredClone(old));
    assert.equal(shouldRatchet(ratchetStateAt(same, 'spec.cmd[1]')), true);
    assert.equal(shouldRatchet(ratchetStateAt(same, ['spec', 'items', 0, 'size'])), true);
  });
});

describe('semanticEqual', () => {
  const cases: Array<[unknown, unknown, boolean]> = [
    [5, 5n, true],
    [{ a: 2n ** 60n }, { a: 2n ** 60n }, true],
    [2n ** 53n + 1n, 2 ** 53 + 1, false],
    [{ a: 1, b: [1, { c: 'x' }] }, { b: [1, { c: 'x' }], a: 1 }, true],
    [[1, 2], [2, 1], false],
    [1.5, 1n, false],
    [null, undefined, false],
    [{ a: undefined }, {}, true],
    [{}, [], false],
    ['1', 1, false],
  ];
  for (const [a, b, expected] of cases) {
    it(`${String(typeof a === 'bigint' ? `${a}n` : JSON.stringify(a, (_k, v) => (typeof v === 'bigint' ? `${v}n` : v)))} vs ${String(typeof b === 'bigint' ? `${b}n` : JSON.stringify(b, (_k, v) => (typeof v === 'bigint' ? `${v}n` : v)))}`, () => {
      assert.equal(semanticEqual(a, b), expected);
      assert.equal(semanticEqual(b, a), expected);
    });
  }

  it('compares arrays nested 100,000 deep without recursion', () => {
    let a: unknown = [];
    let b: unknown = [];
    for (let i = 0; i < 100_000; i++) {
      a = [a];
      b = [b];
    }
    assert.equal(semanticEqual(a, b), true);
  });
});
