import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fieldError } from '../../src/field/errors.ts';
import type { Hint } from '../../src/handoff/hint.ts';
import type { HandoffSender } from '../../src/webhook/handoff-sender.ts';
import { counterTotal } from '../../src/observability/metrics.ts';
import { VALIDATE, fakeValidator, post, review, testServer, trainJob } from './fixtures.ts';

const imageChanged = fieldError.invalid('spec.trainer.image', 'ghcr.io/acme/train:2.0', 'field is immutable');
imageChanged.origin = 'trainer.image';

function recordingHandoff(): HandoffSender & { hints: Hint[] } {
  const hints: Hint[] = [];
  return { hints, send: (h) => void hints.push(h), idle: async () => {} };
}

describe('validating webhook: envelope errors are HTTP 400 with a clear message', () => {
  const table: { name: string; body: unknown; message: RegExp }[] = [
    {
      name: 'malformed JSON',
      body: '{"apiVersion": "admission.k8s.io/v1", ',
      message: /^request body is not valid JSON: /,
    },
    {
      name: 'missing request',
      body: { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview' },
      message: /not a valid AdmissionReview: request is missing/,
    },
    {
      name: 'missing uid',
      body: {
        apiVersion: 'admission.k8s.io/v1',
        kind: 'AdmissionReview',
        request: { operation: 'CREATE', object: {} },
      },
      message: /not a valid AdmissionReview: request\.uid is missing/,
    },
    {
      name: 'wrong kind',
      body: { apiVersion: 'admission.k8s.io/v1', kind: 'TrainJob', request: { uid: 'u' } },
      message: /not a valid AdmissionReview: kind must be "AdmissionReview", got "TrainJob"/,
    },
    { name: 'empty body', body: '', message: /request body is empty/ },
  ];
  for (const row of table) {
    it(row.name, async () => {
      const { app, metrics, validator } = await testServer();
      const res = await post(app, VALIDATE, row.body);
      assert.equal(res.statusCode, 400);
      assert.deepEqual(Object.keys(res.json), ['error']);
      assert.match(res.json.error, row.message);
      assert.equal((validator as ReturnType<typeof fakeValidator>).calls.length, 0);
      assert.equal(await counterTotal(metrics.rejected), 1);
    });
  }

  it('accepts a body sent without a JSON content type (curl -d)', async () => {
    const { app } = await testServer();
    const res = await post(app, VALIDATE, review('CREATE'), 'application/x-www-form-urlencoded');
    assert.equal(res.statusCode, 200);
    assert.equal(res.json.response.allowed, true);
  });

  it('a request for another kind is denied in-band with 400 BadRequest, not decided', async () => {
    const validator = fakeValidator();
    const { app } = await testServer({ validator });
    const res = await post(
      app,
      VALIDATE,
      review('CREATE', { kind: { group: 'apps', version: 'v1', kind: 'Deployment' } }),
    );
    assert.equal(res.statusCode, 200);
    assert.equal(res.json.response.allowed, false);
    assert.equal(res.json.response.status.code, 400);
    assert.equal(res.json.response.status.reason, 'BadRequest');
    assert.match(res.json.response.status.message, /only admits TrainJobs .* got apps\/v1, Kind=Deployment/);
    assert.equal(validator.calls.length, 0);
  });
});

describe('validating webhook: answers', () => {
  it('allowed CREATE: v1 answer, uid echoed, warnings carried, input passed on', async () => {
    const validator = fakeValidator(() => ({
      causes: [],
      warnings: ['spec.trainer.numNodes: the change was not judged against the cluster'],
    }));
    const { app, lines } = await testServer({ validator });
    const res = await post(app, VALIDATE, review('CREATE', { uid: 'uid-1' }));
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json, {
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      response: {
        uid: 'uid-1',
        allowed: true,
        warnings: ['spec.trainer.numNodes: the change was not judged against the cluster'],
      },
    });
    assert.equal(validator.calls.length, 1);
    assert.deepEqual(validator.calls[0], {
      uid: 'uid-1',
      operation: 'CREATE',
      namespace: 'team-a',
      name: 'my-job',
      object: trainJob(),
      oldObject: undefined,
      dryRun: false,
    });
    const line = lines.find((l) => l.msg === 'admission');
    assert.ok(line);
    assert.equal(line.reqId, 'uid-1');
    assert.equal(line.user, 'alice@example.com');
    assert.equal(line.decision, 'allowed');
    assert.equal(typeof line.latencyMs, 'number');
  });

  it('v1beta1 is answered in v1beta1', async () => {
    const { app } = await testServer();
    const res = await post(app, VALIDATE, review('UPDATE', { apiVersion: 'admission.k8s.io/v1beta1', uid: 'b1' }));
    assert.equal(res.json.apiVersion, 'admission.k8s.io/v1beta1');
    assert.equal(res.json.kind, 'AdmissionReview');
    assert.equal(res.json.response.uid, 'b1');
  });

  it('denied UPDATE: 422 status with every cause, rule ids logged, objects never logged', async () => {
    const validator = fakeValidator(() => ({
      causes: [
        imageChanged,
        { ...fieldError.invalid('spec.trainer.args', ['--lr', '0.1'], 'field is immutable'), origin: 'trainer.args' },
      ],
      warnings: [],
    }));
    const { app, lines } = await testServer({ validator });
    const old = trainJob({
      trainer: { image: 'ghcr.io/acme/train:1.0', numNodes: 1, env: [{ name: 'HF_TOKEN', value: 'hf_secret_value' }] },
    });
    const res = await post(app, VALIDATE, review('UPDATE', { oldObject: old }));
    const r = res.json.response;
    assert.equal(r.allowed, false);
    assert.equal(r.status.code, 422);
    assert.equal(r.status.reason, 'Invalid');
    assert.equal(r.status.details.causes.length, 2);
    assert.match(
      r.status.message,
      /^TrainJob\.trainer\.kubeflow\.org "my-job" is invalid: \[spec\.trainer\.image: .*, spec\.trainer\.args: .*\]$/,
    );
    assert.equal('warnings' in r, false);
    const line = lines.find((l) => l.msg === 'admission')!;
    assert.deepEqual(line.rules, ['trainer.image', 'trainer.args']);
    assert.equal(line.code, 422);
    assert.doesNotMatch(JSON.stringify(lines), /hf_secret_value/);
  });

  it('DELETE and CONNECT are allowed without asking the validator', async () => {
    const validator = fakeValidator(() => ({ causes: [imageChanged], warnings: [] }));
    const { app } = await testServer({ validator });
    for (const op of ['DELETE', 'CONNECT']) {
      const res = await post(app, VALIDATE, review(op, { object: null, oldObject: trainJob() }));
      assert.equal(res.json.response.allowed, true, op);
    }
    assert.equal(validator.calls.length, 0);
  });

  it('a validator that throws gives an in-band 500 answer, and the server keeps answering', async () => {
    let calls = 0;
    const validator = fakeValidator(() => {
      if (calls++ === 0) throw new TypeError("Cannot read properties of undefined (reading 'numNodes')");
      return { causes: [], warnings: [] };
    });
    const { app, metrics, lines } = await testServer({ validator });
    const res = await post(app, VALIDATE, review('UPDATE', { uid: 'boom' }));
    assert.equal(res.statusCode, 200);
    assert.equal(res.json.response.uid, 'boom');
    assert.equal(res.json.response.allowed, false);
    assert.equal(res.json.response.status.code, 500);
    assert.equal(res.json.response.status.reason, 'InternalError');
    assert.equal(
      res.json.response.status.message,
      "Internal error occurred: Cannot read properties of undefined (reading 'numNodes')",
    );
    assert.doesNotMatch(JSON.stringify(res.json), /\.ts:\d+/);
    assert.equal(lines.find((l) => l.msg === 'admission')?.decision, 'error');
    const again = await post(app, VALIDATE, review('UPDATE'));
    assert.equal(again.json.response.allowed, true);
    const { values } = await metrics.requests.get();
    assert.deepEqual(values.map((v) => [v.labels.decision, v.value]).sort(), [
      ['allowed', 1],
      ['error', 1],
    ]);
  });

  it('a validator that rejects with a non-Error is handled too', async () => {
    const { app } = await testServer({ validator: fakeValidator(() => Promise.reject('plain string')) });
    const res = await post(app, VALIDATE, review('CREATE'));
    assert.equal(res.json.response.status.message, 'Internal error occurred: plain string');
  });
});

describe('validating webhook: hand-off', () => {
  it('an admitted, non-dry-run UPDATE is handed on with the stored identity', async () => {
    const handoff = recordingHandoff();
    const { app } = await testServer({ handoff });
    await post(app, VALIDATE, review('UPDATE'));
    assert.deepEqual(handoff.hints, [
      { namespace: 'team-a', name: 'my-job', uid: '6f1c2a4e-0d7b-4a51-9a57-1f3c0b9e2d10', generation: 3 },
    ]);
  });

  it('a dry run is answered the same and nothing is handed on', async () => {
    const handoff = recordingHandoff();
    const validator = fakeValidator(() => ({
      causes: [],
      warnings: [
        'spec.trainer.numNodes changes from 1 to 2: the JobSet is rebuilt with 2 nodes as soon as it is suspended and none of its pods remain',
      ],
    }));
    const { app } = await testServer({ handoff, validator });
    const real = await post(app, VALIDATE, review('UPDATE', { uid: 'x' }));
    const dry = await post(app, VALIDATE, review('UPDATE', { uid: 'x', dryRun: true }));
    assert.deepEqual(dry.json, real.json);
    assert.equal(handoff.hints.length, 1);
    assert.equal(validator.calls[1].dryRun, true);
  });

  it('denied requests and DELETEs are not handed on', async () => {
    const handoff = recordingHandoff();
    const { app } = await testServer({
      handoff,
      validator: fakeValidator(() => ({ causes: [imageChanged], warnings: [] })),
    });
    await post(app, VALIDATE, review('UPDATE'));
    await post(app, VALIDATE, review('DELETE', { object: null, oldObject: trainJob() }));
    assert.equal(handoff.hints.length, 0);
  });

  it('int64 values beyond 2^53 reach the validator exactly', async () => {
    const validator = fakeValidator();
    const { app } = await testServer({ validator });
    const body = JSON.stringify(review('CREATE')).replace(
      '"suspend":true',
      '"suspend":true,"activeDeadlineSeconds":9007199254740993',
    );
    await post(app, VALIDATE, body);
    const spec = (validator.calls[0].object as { spec: { activeDeadlineSeconds: unknown } }).spec;
    assert.equal(spec.activeDeadlineSeconds, 9007199254740993n);
  });
});
