import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { counterTotal } from '../../src/observability/metrics.ts';
import { ADMISSION_BODY_LIMIT, ADMISSION_TIMEOUTS, buildAdmissionServer } from '../../src/webhook/server.ts';
import { VALIDATE, captureLogs, fakeValidator, post, review, testCert, testServer, trainJob } from './fixtures.ts';
import { createMetrics } from '../../src/observability/metrics.ts';

const MiB = 1024 * 1024;

/** A TrainJob whose JSON is about `bytes` long (the bulk in one annotation). */
function bigTrainJob(bytes: number, tag: string) {
  return trainJob(
    {},
    { annotations: { 'example.com/blob': tag.repeat(Math.ceil(bytes / tag.length)).slice(0, bytes) } },
  );
}

describe('admission server limits', () => {
  it('accepts a 6 MiB UPDATE (two 3 MiB objects)', async () => {
    const validator = fakeValidator();
    const { app } = await testServer({ validator });
    const body = JSON.stringify(
      review('UPDATE', { object: bigTrainJob(3 * MiB - 4096, 'n'), oldObject: bigTrainJob(3 * MiB - 4096, 'o') }),
    );
    assert.ok(body.length > 6 * MiB - 16384 && body.length < ADMISSION_BODY_LIMIT, `body is ${body.length} bytes`);
    const res = await post(app, VALIDATE, body);
    assert.equal(res.statusCode, 200);
    assert.equal(res.json.response.allowed, true);
    assert.equal(validator.calls.length, 1);
  });

  it('refuses a body over 7 MiB with a clear 413', async () => {
    const { app, metrics, validator } = await testServer();
    const body = JSON.stringify(
      review('UPDATE', { object: bigTrainJob(4 * MiB, 'n'), oldObject: bigTrainJob(3 * MiB + 1024, 'o') }),
    );
    assert.ok(body.length > ADMISSION_BODY_LIMIT);
    const res = await post(app, VALIDATE, body);
    assert.equal(res.statusCode, 413);
    assert.deepEqual(res.json, {
      error: 'request body is too large: the limit is 7340032 bytes (7 MiB, an UPDATE with two 3 MiB objects)',
    });
    assert.equal((validator as ReturnType<typeof fakeValidator>).calls.length, 0);
    assert.deepEqual(
      (await metrics.rejected.get()).values.map((v) => v.labels.code),
      ['413'],
    );
  });

  it('sets timeouts explicitly', async () => {
    const { app } = await testServer();
    assert.equal(app.server.requestTimeout, ADMISSION_TIMEOUTS.requestTimeout);
    assert.equal(app.server.keepAliveTimeout, ADMISSION_TIMEOUTS.keepAliveTimeout);
    assert.equal(app.server.timeout, ADMISSION_TIMEOUTS.connectionTimeout);
    assert.ok(app.server.headersTimeout <= app.server.requestTimeout);
    assert.equal(app.initialConfig.bodyLimit, ADMISSION_BODY_LIMIT);
  });
});

describe('admission server edge', () => {
  it('has no health or metrics endpoints', async () => {
    const { app } = await testServer();
    for (const url of ['/healthz', '/readyz', '/metrics']) {
      const res = await app.inject({ method: 'GET', url });
      assert.equal(res.statusCode, 404, url);
      assert.match(
        res.json().error,
        /this port serves POST \/validate-trainer-kubeflow-org-v1alpha1-trainjob and POST \/mutate-/,
      );
    }
  });

  it('an unexpected error is a 500 without stack or internals; details go to the log', async () => {
    const { logger, lines } = captureLogs();
    const app = await buildAdmissionServer(
      { tls: await testCert() },
      { validator: fakeValidator(), logger, metrics: createMetrics() },
    );
    app.post('/boom', async () => {
      throw new Error('secret internal detail');
    });
    const res = await app.inject({
      method: 'POST',
      url: '/boom',
      payload: '{}',
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(res.statusCode, 500);
    assert.deepEqual(res.json(), { error: 'internal error while handling the request; see the webhook logs' });
    assert.doesNotMatch(res.body, /secret internal detail|\.ts:\d+/);
    assert.ok(lines.some((l) => l.msg === 'request failed'));
  });

  it('many requests in a row keep one process answering (no state leaks between them)', async () => {
    const { app, metrics } = await testServer();
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => post(app, VALIDATE, review('CREATE', { uid: `u${i}` }))),
    );
    assert.deepEqual(
      answers.map((a) => a.json.response.uid),
      Array.from({ length: 20 }, (_, i) => `u${i}`),
    );
    assert.equal(await counterTotal(metrics.requests), 20);
  });
});
