// ObjectMeta checks the API server runs on every custom resource. The messages were compared
// with kube-apiserver v1.35.8's answers to the same objects.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compileCrdSchema, validateObjectMeta, validateObjectMetaUpdate } from '../../src/crd/index.ts';
import { messages, trainJob, trainJobCrd, trainJobCrdObject } from './fixtures.ts';

const crd = trainJobCrd();
const withMeta = (metadata: Record<string, unknown>) =>
  trainJob({ runtimeRef: { name: 'torch' } }, { metadata: { name: 'job', namespace: 'default', ...metadata } });
const check = (obj: unknown) => messages(crd.validate(crd.prepareForCreate(crd.decode(obj).object)));

const LABEL_KEY_RULE =
  "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

describe('ObjectMeta on create', () => {
  const cases: Array<[string, Record<string, unknown>, string[]]> = [
    [
      'a label key with a space',
      { labels: { 'bad key': 'v' } },
      [`metadata.labels: Invalid value: "bad key": name part ${LABEL_KEY_RULE}`],
    ],
    [
      'a label value with punctuation',
      { labels: { k: 'bad value!' } },
      [
        `metadata.labels: Invalid value: "bad value!": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`,
      ],
    ],
    [
      'a label value over 63 bytes',
      { labels: { k: 'v'.repeat(64) } },
      [`metadata.labels: Invalid value: "${'v'.repeat(64)}": must be no more than 63 bytes`],
    ],
    [
      'an empty prefix',
      { labels: { '/x': 'y' } },
      ['metadata.labels: Invalid value: "/x": prefix part must be non-empty'],
    ],
    [
      'an upper-case prefix',
      { labels: { 'EXAMPLE.com/x': 'z' } },
      [
        `metadata.labels: Invalid value: "EXAMPLE.com/x": prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
      ],
    ],
    [
      'two slashes in an annotation key (keys are lower-cased first)',
      { annotations: { 'Bad/Key/x': 'v', 'Example.com/OK': 'x' } },
      [
        `metadata.annotations: Invalid value: "Bad/Key/x": a valid label key ${LABEL_KEY_RULE} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`,
      ],
    ],
    [
      'an empty annotation key',
      { annotations: { '': 'e' } },
      [
        'metadata.annotations: Invalid value: "": name part must be non-empty',
        `metadata.annotations: Invalid value: "": name part ${LABEL_KEY_RULE}`,
      ],
    ],
    [
      'finalizers',
      { finalizers: ['bad finalizer', 'orphan', 'foregroundDeletion'] },
      [
        `metadata.finalizers: Invalid value: "bad finalizer": name part ${LABEL_KEY_RULE}`,
        'metadata.finalizers: Invalid value: ["bad finalizer","orphan","foregroundDeletion"]: finalizer orphan and foregroundDeletion cannot be both set',
      ],
    ],
    [
      'owner references',
      {
        ownerReferences: [
          { apiVersion: 'v1', kind: 'Event', name: '', uid: 'u', controller: true },
          { apiVersion: 'g/', kind: '', name: 'n', uid: '', controller: true },
        ],
      },
      [
        'metadata.ownerReferences.name: Invalid value: "": must not be empty',
        'metadata.ownerReferences: Invalid value: {"apiVersion":"v1","kind":"Event","name":"","uid":"u","controller":true}: /v1, Kind=Event is disallowed from being an owner',
        'metadata.ownerReferences.apiVersion: Invalid value: "g/": version must not be empty',
        'metadata.ownerReferences.kind: Invalid value: "": must not be empty',
        'metadata.ownerReferences.uid: Invalid value: "": must not be empty',
        'metadata.ownerReferences: Invalid value: [{"apiVersion":"v1","kind":"Event","name":"","uid":"u","controller":true},{"apiVersion":"g/","kind":"","name":"n","uid":"","controller":true}]: Only one reference can have Controller set to true. Found "true" in references for Event/ and /n',
      ],
    ],
    [
      'generateName is checked as a prefix',
      { name: '', generateName: 'Bad-' },
      [
        `metadata.generateName: Invalid value: "Bad-": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
      ],
    ],
  ];
  for (const [name, meta, expected] of cases) it(name, () => assert.deepEqual(check(withMeta(meta)), expected));

  it('a name the API server fills in is not required unless asked for', () => {
    const obj = trainJob({ runtimeRef: { name: 'torch' } }, { metadata: {} });
    assert.deepEqual(messages(validateObjectMeta(obj, { namespaced: true })), []);
    assert.deepEqual(messages(validateObjectMeta(obj, { namespaced: true, requireServerFields: true })), [
      'metadata.name: Required value: name or generateName is required',
      'metadata.namespace: Required value',
    ]);
    const strict = compileCrdSchema(trainJobCrdObject(), { requireServerFields: true });
    assert.deepEqual(messages(strict.validate(obj)), [
      'metadata.name: Required value: name or generateName is required',
      'metadata.namespace: Required value',
    ]);
  });
});

describe('ObjectMeta on update', () => {
  const old = {
    ...withMeta({ uid: 'u1', resourceVersion: '5', generation: 3, creationTimestamp: '2025-01-01T00:00:00Z' }),
  };
  const next = (meta: Record<string, unknown>) =>
    withMeta({ uid: 'u1', resourceVersion: '5', generation: 3, creationTimestamp: '2025-01-01T00:00:00Z', ...meta });

  const cases: Array<[string, unknown, unknown, string[]]> = [
    ['renaming', next({ name: 'other' }), old, ['metadata.name: Invalid value: "other": field is immutable']],
    ['a new uid', next({ uid: 'u2' }), old, ['metadata.uid: Invalid value: "u2": field is immutable']],
    [
      'generation going back',
      next({ generation: 2 }),
      old,
      ['metadata.generation: Invalid value: 2: must not be decremented'],
    ],
    [
      'a finalizer added while deleting',
      next({ deletionTimestamp: '2025-02-01T00:00:00Z', finalizers: ['example.com/a'] }),
      withMeta({
        uid: 'u1',
        resourceVersion: '5',
        generation: 3,
        creationTimestamp: '2025-01-01T00:00:00Z',
        deletionTimestamp: '2025-02-01T00:00:00Z',
      }),
      [
        'metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{"example.com/a"}',
      ],
    ],
  ];
  for (const [name, n, o, expected] of cases)
    it(name, () => assert.deepEqual(messages(validateObjectMetaUpdate(n, o, { namespaced: true })), expected));

  it('a hand-written new object lacking uid, generation and timestamps is prepared like the API server prepares it', () => {
    const raw = trainJob(
      { runtimeRef: { name: 'torch' }, suspend: true },
      { metadata: { name: 'job', namespace: 'default' }, status: { bogus: 1 } },
    );
    assert.deepEqual(messages(crd.validateUpdate(raw, crd.decode(old).object)), []);
  });

  it('whole-update validation lists a bad new label three times, like the API server (rest.BeforeUpdate + strategy)', () => {
    const n = crd.prepareForUpdate(next({ labels: { 'bad key': 'x' } }), old);
    const expected = `metadata.labels: Invalid value: "bad key": name part ${LABEL_KEY_RULE}`;
    assert.deepEqual(messages(crd.validateUpdate(n, old)), [expected, expected, expected]);
  });
});
