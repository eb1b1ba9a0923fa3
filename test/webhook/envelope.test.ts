import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EnvelopeError, answer, parseAdmissionReview, wrongKind } from '../../src/webhook/envelope.ts';
import { review, trainJob } from './fixtures.ts';

function rejects(body: unknown, message: RegExp) {
  assert.throws(
    () => parseAdmissionReview(body),
    (err: unknown) => err instanceof EnvelopeError && message.test(err.message),
  );
}

describe('parseAdmissionReview rejects what is not an AdmissionReview', () => {
  const table: { name: string; body: unknown; message: RegExp }[] = [
    { name: 'empty body', body: undefined, message: /request body is empty/ },
    { name: 'an array', body: [], message: /is an array, expected an AdmissionReview/ },
    { name: 'a string', body: 'hi', message: /is a string/ },
    {
      name: 'wrong kind',
      body: { ...review('CREATE'), kind: 'Pod' },
      message: /kind must be "AdmissionReview", got "Pod"/,
    },
    {
      name: 'missing kind',
      body: { apiVersion: 'admission.k8s.io/v1', request: {} },
      message: /kind must be "AdmissionReview", got nothing/,
    },
    {
      name: 'wrong apiVersion',
      body: { ...review('CREATE'), apiVersion: 'admission.k8s.io/v2' },
      message: /apiVersion must be one of admission\.k8s\.io\/v1, admission\.k8s\.io\/v1beta1/,
    },
    {
      name: 'missing request',
      body: { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview' },
      message: /^request is missing$/,
    },
    {
      name: 'request not an object',
      body: { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request: 3 },
      message: /request must be an object, got a number/,
    },
    { name: 'missing uid', body: withRequest({ uid: undefined }), message: /^request\.uid is missing$/ },
    { name: 'empty uid', body: withRequest({ uid: '' }), message: /request\.uid must be a non-empty string, got ""/ },
    { name: 'numeric uid', body: withRequest({ uid: 7 }), message: /request\.uid must be a non-empty string, got 7/ },
    {
      name: 'bad operation',
      body: withRequest({ operation: 'PATCH' }),
      message: /request\.operation must be one of CREATE, UPDATE, DELETE, CONNECT, got "PATCH"/,
    },
    {
      name: 'object not an object',
      body: withRequest({ object: 'x' }),
      message: /request\.object must be an object or null, got a string/,
    },
    {
      name: 'CREATE without object',
      body: withRequest({ object: null }),
      message: /request\.object is required for CREATE/,
    },
    {
      name: 'UPDATE without oldObject',
      body: { ...review('UPDATE', { oldObject: null }) },
      message: /request\.oldObject is required for UPDATE/,
    },
    {
      name: 'dryRun not a boolean',
      body: withRequest({ dryRun: 'yes' }),
      message: /request\.dryRun must be a boolean/,
    },
    {
      name: 'request.kind malformed',
      body: withRequest({ kind: 'TrainJob' }),
      message: /request\.kind must be an object/,
    },
  ];
  for (const row of table) it(row.name, () => rejects(row.body, row.message));
});

function withRequest(patch: Record<string, unknown>) {
  const r = review('CREATE');
  return { ...r, request: { ...(r.request as object), ...patch } };
}

describe('parseAdmissionReview accepts', () => {
  it('a v1 CREATE, with name and namespace from the request', () => {
    const req = parseAdmissionReview(review('CREATE', { dryRun: true }));
    assert.equal(req.apiVersion, 'admission.k8s.io/v1');
    assert.equal(req.operation, 'CREATE');
    assert.equal(req.name, 'my-job');
    assert.equal(req.namespace, 'team-a');
    assert.equal(req.username, 'alice@example.com');
    assert.equal(req.dryRun, true);
    assert.equal(req.oldObject, null);
  });

  it('a v1beta1 DELETE with only oldObject; name falls back to metadata', () => {
    const body = review('DELETE', {
      apiVersion: 'admission.k8s.io/v1beta1',
      object: null,
      oldObject: trainJob({}, { name: 'other' }),
    });
    delete (body.request as Record<string, unknown>).name;
    const req = parseAdmissionReview(body);
    assert.equal(req.apiVersion, 'admission.k8s.io/v1beta1');
    assert.equal(req.name, 'other');
  });

  it('a hand-written review without request.kind, dryRun or userInfo', () => {
    const req = parseAdmissionReview({
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      request: { uid: 'u', operation: 'CREATE', object: trainJob() },
    });
    assert.equal(req.kind, undefined);
    assert.equal(req.dryRun, false);
    assert.equal(req.name, 'my-job');
    assert.equal(wrongKind(req), undefined);
  });
});

describe('wrongKind', () => {
  it('accepts any version of trainer.kubeflow.org TrainJob', () => {
    assert.equal(
      wrongKind(
        parseAdmissionReview(
          review('CREATE', { kind: { group: 'trainer.kubeflow.org', version: 'v1', kind: 'TrainJob' } }),
        ),
      ),
      undefined,
    );
  });
  it('names the kind it got', () => {
    assert.equal(
      wrongKind(parseAdmissionReview(review('CREATE', { kind: { group: 'apps', version: 'v1', kind: 'Deployment' } }))),
      'apps/v1, Kind=Deployment',
    );
    assert.equal(
      wrongKind(parseAdmissionReview(review('CREATE', { kind: { group: '', version: 'v1', kind: 'Pod' } }))),
      'core/v1, Kind=Pod',
    );
  });
  it("without request.kind, checks the object's apiVersion and kind", () => {
    const req = parseAdmissionReview(
      review('CREATE', { kind: undefined, object: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' } } }),
    );
    assert.equal(wrongKind(req), '"v1", Kind="Pod"');
  });
});

describe('answer', () => {
  const req = { apiVersion: 'admission.k8s.io/v1beta1' as const, uid: 'abc' };
  it('echoes apiVersion and uid; leaves out empty warnings and empty patches', () => {
    assert.deepEqual(answer(req, { allowed: true, warnings: [], patch: [] }), {
      apiVersion: 'admission.k8s.io/v1beta1',
      kind: 'AdmissionReview',
      response: { uid: 'abc', allowed: true },
    });
  });
  it('encodes a patch as base64 JSONPatch', () => {
    const ops = [{ op: 'add', path: '/spec/runtimePatches/0/time', value: '2026-01-01T00:00:00Z' }];
    const res = answer(req, { allowed: true, patch: ops, warnings: ['w'] }).response;
    assert.equal(res.patchType, 'JSONPatch');
    assert.deepEqual(JSON.parse(Buffer.from(res.patch!, 'base64').toString()), ops);
    assert.deepEqual(res.warnings, ['w']);
  });
});

describe('parseAdmissionReview: hostile values in messages', () => {
  const nested = (depth: number): unknown => {
    let v: unknown = 'x';
    for (let i = 0; i < depth; i++) v = [v];
    return v;
  };

  for (const field of ['kind', 'apiVersion', 'operation'] as const) {
    it(`${field} nested 10,000 arrays deep is described by its type, not serialised`, () => {
      const body = review('CREATE');
      if (field === 'operation') (body.request as Record<string, unknown>).operation = nested(10_000);
      else body[field] = nested(10_000);
      const at = field === 'operation' ? 'request.operation' : field;
      rejects(body, new RegExp(`^${at.replace('.', '\\.')} must be .*, got an array$`));
    });
  }

  it('an object where a string belongs is named as an object', () => {
    rejects({ ...review('CREATE'), kind: { a: { b: 1 } } }, /^kind must be "AdmissionReview", got an object$/);
    rejects(withRequest({ uid: { x: 1 } }), /^request\.uid must be a non-empty string, got an object$/);
  });

  it('a huge string is cut to 80 characters', () => {
    const body = { ...review('CREATE'), kind: 'K'.repeat(5_000_000) };
    assert.throws(
      () => parseAdmissionReview(body),
      (err: Error) =>
        err instanceof EnvelopeError && err.message === `kind must be "AdmissionReview", got "${'K'.repeat(77)}"...`,
    );
  });

  it('an object of the wrong kind nested deep gets a bounded in-band reason', () => {
    const req = parseAdmissionReview(
      review('CREATE', { kind: null, object: { apiVersion: nested(10_000), kind: nested(10_000) } }),
    );
    assert.equal(wrongKind(req), 'an array, Kind=an array');
  });

  it('scalars keep their JSON form', () => {
    rejects(withRequest({ uid: 2n ** 70n }), /got 1180591620717411303424$/);
    rejects(withRequest({ operation: false }), /got false$/);
    rejects(withRequest({ operation: null }), /got null$/);
  });
});
