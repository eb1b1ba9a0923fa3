// Hostile AdmissionReviews, as a pod on the cluster network could send them: wrong types
// everywhere, huge strings and arrays, deep nesting, prototype keys, odd unicode, numbers beyond
// int64, missing and extra fields. Every answer is a 4xx or an in-band decision: never a 5xx,
// never a crash, and memory comes back once the requests are done.
// `npm test` runs a short form; `npm run test:faults` sets FAULT_CASES=100000.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import fc from 'fast-check';
import { review, trainJob } from '../webhook/fixtures.ts';
import { assertWellFormedAnswer, crdServer, faultCases } from './support.ts';

const CASES = faultCases(150);

/** JSON text put into the body as it is (numbers JSON.stringify cannot write, deep nesting). */
class Raw {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
}

function serialize(value: unknown): string {
  const raws: string[] = [];
  const text = JSON.stringify(value, (_k, v: unknown) => {
    if (v instanceof Raw) {
      raws.push(v.text);
      return `__RAW_${raws.length - 1}__`;
    }
    return typeof v === 'bigint' ? new Raw(v.toString()) : v;
  });
  // A bigint became a Raw above and is serialised on the second visit of the replacer.
  return (text ?? 'null').replace(/"__RAW_(\d+)__"/g, (_m, i: string) => raws[Number(i)]);
}

const KEYS = [
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'hasOwnProperty',
  'valueOf',
  '',
  ' ',
  'kind',
  'apiVersion',
  'metadata',
  'spec',
  'status',
  'trainer',
  'numNodes',
  'name',
  'uid',
  '\u0000',
  '\ud800',
  'ß',
  '\u{1d54f}',
  'a.b',
  'a[0]',
  'time',
  'manager',
];
const key = fc.constantFrom(...KEYS);

const oddString = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom(
    '\ud800',
    '\udfff',
    'a\ud800b',
    '\u0000',
    '\u202e',
    '\ufeff',
    'e\u0301',
    '\u{1d7d8}',
    '\u2028',
    '9223372036854775808',
    '-0',
    'NaN',
    'true',
    'null',
    'TrainJob',
    'admission.k8s.io/v1',
    'UPDATE',
    'CREATE',
    'trainer.kubeflow.org/v1alpha1',
  ),
);
const hugeString = fc
  .tuple(
    fc.constantFrom('a', '\u00e9', '\u{1f600}', '{', '"', '\\', '\u0000', '\ud800'),
    fc.integer({ min: 1_000, max: 300_000 }),
  )
  .map(([c, n]) => c.repeat(n));
const oddNumber = fc.oneof(
  fc
    .constantFrom(
      '1e400',
      '-1e400',
      '9223372036854775808',
      '-9223372036854775809',
      '18446744073709551616',
      '123456789012345678901234567890',
      '1e-400',
      '-0',
      '0.0',
      '4.9e-324',
      '1.7976931348623157e308',
      '9007199254740993',
      '1E2',
      '100000000000000000000.5',
    )
    .map((t) => new Raw(t)),
  fc.bigInt({ min: -(2n ** 100n), max: 2n ** 100n }),
  fc.double(),
  fc.integer(),
);
const scalar = fc.oneof(oddString, oddNumber, fc.boolean(), fc.constant(null));
const deep = fc
  .tuple(
    fc.integer({ min: 100, max: 9_990 }),
    fc.boolean(),
    fc.constantFrom('1', '"x"', '{}', '[]', 'null', '12345678901234567'),
  )
  .map(
    ([n, arrays, leaf]) =>
      new Raw(arrays ? '['.repeat(n) + leaf + ']'.repeat(n) : '{"a":'.repeat(n) + leaf + '}'.repeat(n)),
  );
const hugeArray = fc
  .tuple(fc.integer({ min: 1_000, max: 20_000 }), scalar)
  .map(([n, v]) => Array.from({ length: n }, () => v));
const manyKeys = fc
  .integer({ min: 1_000, max: 20_000 })
  .map((n) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i])));
const structured = fc.object({ key, values: [scalar], maxDepth: 3, maxKeys: 6 });
const hostile = fc.oneof(
  { weight: 6, arbitrary: scalar },
  { weight: 4, arbitrary: structured },
  { weight: 2, arbitrary: fc.array(structured, { maxLength: 5 }) },
  { weight: 1, arbitrary: hugeString },
  { weight: 1, arbitrary: deep },
  { weight: 1, arbitrary: hugeArray },
  { weight: 1, arbitrary: manyKeys },
);

type Path = (string | number)[];
const OBJECT_PATHS: Path[] = [
  [],
  ['apiVersion'],
  ['kind'],
  ['metadata'],
  ['metadata', 'name'],
  ['metadata', 'namespace'],
  ['metadata', 'uid'],
  ['metadata', 'generation'],
  ['metadata', 'annotations'],
  ['metadata', 'labels'],
  ['metadata', 'finalizers'],
  ['metadata', 'managedFields'],
  ['metadata', 'resourceVersion'],
  ['spec'],
  ['spec', 'suspend'],
  ['spec', 'managedBy'],
  ['spec', 'activeDeadlineSeconds'],
  ['spec', 'runtimeRef'],
  ['spec', 'runtimeRef', 'name'],
  ['spec', 'trainer'],
  ['spec', 'trainer', 'numNodes'],
  ['spec', 'trainer', 'image'],
  ['spec', 'trainer', 'env'],
  ['spec', 'trainer', 'command'],
  ['spec', 'trainer', 'resourcesPerNode'],
  ['spec', 'trainer', 'numProcPerNode'],
  ['spec', 'runtimePatches'],
  ['spec', 'runtimePatches', 0],
  ['spec', 'runtimePatches', 0, 'time'],
  ['spec', 'runtimePatches', 0, 'manager'],
  ['spec', 'podTemplateOverrides'],
  ['spec', 'initializer'],
  ['status'],
  ['status', 'conditions'],
  ['status', 'conditions', 0, 'type'],
];
const PATHS: Path[] = [
  [],
  ['apiVersion'],
  ['kind'],
  ['request'],
  ['request', 'uid'],
  ['request', 'operation'],
  ['request', 'kind'],
  ['request', 'kind', 'kind'],
  ['request', 'kind', 'group'],
  ['request', 'dryRun'],
  ['request', 'name'],
  ['request', 'namespace'],
  ['request', 'userInfo'],
  ['request', 'userInfo', 'username'],
  ['request', 'options'],
  ['request', 'subResource'],
  ...OBJECT_PATHS.map((p) => ['request', 'object', ...p]),
  ...OBJECT_PATHS.map((p) => ['request', 'oldObject', ...p]),
];

type Mutation =
  | { path: Path; action: 'set'; value: unknown }
  | { path: Path; action: 'delete' }
  | { path: Path; action: 'extra'; key: string; value: unknown };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({ path: fc.constantFrom(...PATHS), action: fc.constant('set' as const), value: hostile }),
  },
  { weight: 2, arbitrary: fc.record({ path: fc.constantFrom(...PATHS), action: fc.constant('delete' as const) }) },
  {
    weight: 2,
    arbitrary: fc.record({
      path: fc.constantFrom(...PATHS),
      action: fc.constant('extra' as const),
      key,
      value: hostile,
    }),
  },
);

/** Applies a mutation where its path still leads through objects and arrays. */
// eslint-disable-next-line complexity -- walks a fuzzed path (null, scalar, missing key), applies one of 3 actions
function apply(body: Record<string, unknown>, m: Mutation): unknown {
  if (m.path.length === 0) {
    if (m.action === 'set') return m.value;
    if (m.action === 'delete') return undefined;
  }
  let parent: any = body;
  for (const step of m.path.slice(0, -1)) {
    if (parent === null || typeof parent !== 'object' || !Object.hasOwn(parent, step)) return body;
    parent = parent[step];
  }
  if (parent === null || typeof parent !== 'object') return body;
  const last = m.path[m.path.length - 1];
  const target = m.action === 'extra' ? (last === undefined ? parent : parent[last]) : parent;
  if (m.action === 'delete') delete parent[last];
  else if (m.action === 'set')
    Object.defineProperty(parent, last, { value: m.value, enumerable: true, writable: true, configurable: true });
  else if (target !== null && typeof target === 'object' && !Array.isArray(target))
    Object.defineProperty(target, m.key, { value: m.value, enumerable: true, writable: true, configurable: true });
  return body;
}

const base = fc.constantFrom('CREATE', 'UPDATE', 'DELETE', 'CONNECT').map((operation) => {
  const old = trainJob({ runtimePatches: [{ manager: 'example.com/tuner', time: '2026-01-01T00:00:00Z' }] });
  const obj = trainJob({
    trainer: { image: 'ghcr.io/acme/train:1.0', numNodes: 4 },
    runtimePatches: [{ manager: 'example.com/tuner' }],
  });
  return review(operation, {
    object: operation === 'DELETE' ? null : obj,
    oldObject: operation === 'UPDATE' || operation === 'DELETE' ? old : null,
  });
});

const hostileReview = fc.oneof(
  {
    weight: 12,
    arbitrary: fc
      .tuple(base, fc.array(mutation, { minLength: 1, maxLength: 4 }))
      .map(([b, ms]) =>
        serialize(
          ms.reduce<unknown>(
            (acc, m) => (acc !== null && typeof acc === 'object' ? apply(acc as Record<string, unknown>, m) : acc),
            b,
          ),
        ),
      ),
  },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 200 }) },
  { weight: 1, arbitrary: fc.json({ maxDepth: 4 }) },
  { weight: 1, arbitrary: fc.tuple(base, fc.nat()).map(([b, n]) => serialize(b).slice(0, n % 2_000)) },
);

function heapAfterGc(): number {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

describe(`hostile AdmissionReviews (${CASES} cases)`, () => {
  let server: Awaited<ReturnType<typeof crdServer>>;
  before(async () => {
    server = await crdServer();
  });

  it('every answer is a 4xx or an in-band decision; no prototype is touched; memory comes back', async (t) => {
    // Warm up (compiled rules, JIT) before the baseline.
    for (const op of ['CREATE', 'UPDATE'])
      assertWellFormedAnswer(await server.validate(JSON.stringify(review(op))), 'warm-up');
    const heapBefore = heapAfterGc();
    await fc.assert(
      fc.asyncProperty(hostileReview, fc.boolean(), async (body, mutate) => {
        const answer = await (mutate ? server.mutate(body) : server.validate(body));
        assertWellFormedAnswer(answer, `${mutate ? 'mutate' : 'validate'} ${body.slice(0, 200)}`);
      }),
      { numRuns: CASES },
    );
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
    assert.deepEqual(
      Object.getOwnPropertyNames(Object.prototype).filter(
        (k) =>
          ![
            '__defineGetter__',
            '__defineSetter__',
            'hasOwnProperty',
            '__lookupGetter__',
            '__lookupSetter__',
            'isPrototypeOf',
            'propertyIsEnumerable',
            'toString',
            'valueOf',
            '__proto__',
            'toLocaleString',
            'constructor',
          ].includes(k),
      ),
      [],
    );
    // Nothing a request built is kept: the heap is back near where it started (64 MiB of slack for
    // caches and JIT code).
    const grown = heapAfterGc() - heapBefore;
    t.diagnostic(
      `heap after GC: ${(heapBefore / 1048576).toFixed(1)} MiB before, grew by ${(grown / 1048576).toFixed(1)} MiB over ${CASES} requests`,
    );
    assert.ok(grown < 64 * 1024 * 1024, `heap grew by ${(grown / 1048576).toFixed(1)} MiB over ${CASES} requests`);
  });
});
