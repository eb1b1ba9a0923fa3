import assert from 'node:assert/strict';
import { request as httpsRequest } from 'node:https';
import { describe, it } from 'node:test';
import { waitFor } from '../harness/wait.ts';
import { logAdmission } from '../../src/observability/logger.ts';
import { MUTATE, VALIDATE, captureLogs, fakeValidator, post, review, testServer } from '../webhook/fixtures.ts';
import { CONTROLLER_RUNTIME_LATENCY_BUCKETS } from '../../src/observability/metrics.ts';
import type { WebhookMetrics } from '../../src/observability/metrics.ts';

describe('logger', () => {
  it('redacts anything object-like that slips into a log call', () => {
    const { logger, lines } = captureLogs();
    logger.info(
      {
        object: { spec: { trainer: { env: [{ name: 'TOKEN', value: 's3cret' }] } } },
        request: { oldObject: { x: 's3cret' } },
      },
      'oops',
    );
    logger.info({ ctx: { body: 's3cret', env: ['s3cret'] } }, 'oops');
    assert.doesNotMatch(JSON.stringify(lines), /s3cret/);
    assert.equal(lines[0].object, '[redacted]');
  });

  it('one admission line: uid as reqId, level as a name', () => {
    const { logger, lines } = captureLogs();
    logAdmission(logger, {
      reqId: 'u1',
      webhook: 'validate',
      operation: 'UPDATE',
      namespace: 'ns',
      name: 'j',
      user: 'alice',
      dryRun: false,
      decision: 'denied',
      code: 422,
      rules: ['trainer.image'],
      latencyMs: 1.5,
    });
    assert.equal(lines.length, 1);
    assert.equal(lines[0].level, 'info');
    assert.equal(lines[0].reqId, 'u1');
    assert.equal(lines[0].msg, 'admission');
    assert.deepEqual(lines[0].rules, ['trainer.image']);
    logAdmission(logger, {
      reqId: 'u2',
      webhook: 'validate',
      operation: 'CREATE',
      dryRun: false,
      decision: 'error',
      error: 'boom',
      latencyMs: 1,
    });
    assert.equal(lines[1].level, 'error');
  });
});

/** Series of one metric as { "label=value,...": value }. */
async function seriesOf(metrics: WebhookMetrics, name: string): Promise<Record<string, number>> {
  const metric = metrics.registry.getSingleMetric(name);
  assert.ok(metric, `${name} is registered`);
  const { values } = await metric.get();
  return Object.fromEntries(
    values.map((v) => [
      Object.entries(v.labels)
        .map(([k, x]) => `${k}=${x}`)
        .join(','),
      v.value,
    ]),
  );
}

describe("controller-runtime's webhook series", () => {
  it('a request whose client goes away while sending its body leaves the in-flight count, uncounted by code', async () => {
    const { app, metrics } = await testServer();
    const url = await app.listen({ host: '127.0.0.1', port: 0 });
    const inFlight = async () =>
      (await seriesOf(metrics, 'controller_runtime_webhook_requests_in_flight'))[`webhook=${VALIDATE}`];
    try {
      const req = httpsRequest(`${url}${VALIDATE}`, {
        method: 'POST',
        rejectUnauthorized: false,
        headers: { 'content-type': 'application/json', 'content-length': 1000 },
      });
      req.on('error', () => {});
      req.write('{"kind":');
      await waitFor('the request in flight', async () => (await inFlight()) === 1, { intervalMs: 5 });
      assert.equal(await inFlight(), 1);
      req.destroy();
      await waitFor('the request no longer in flight', async () => (await inFlight()) === 0, { intervalMs: 5 });
      assert.equal(await inFlight(), 0);
      assert.deepEqual(await seriesOf(metrics, 'controller_runtime_webhook_requests_total'), {
        [`webhook=${VALIDATE},code=200`]: 0,
        [`webhook=${VALIDATE},code=500`]: 0,
        [`webhook=${MUTATE},code=200`]: 0,
        [`webhook=${MUTATE},code=500`]: 0,
      });
    } finally {
      await app.close();
    }
  });

  it('count every request to an admission path by path and HTTP status, time it, and leave nothing in flight', async () => {
    const { app, metrics } = await testServer({ bodyLimit: 4096 });
    // Before any request: 200 and 500 exist at 0 for both paths, as controller-runtime makes them.
    assert.deepEqual(await seriesOf(metrics, 'controller_runtime_webhook_requests_total'), {
      [`webhook=${VALIDATE},code=200`]: 0,
      [`webhook=${VALIDATE},code=500`]: 0,
      [`webhook=${MUTATE},code=200`]: 0,
      [`webhook=${MUTATE},code=500`]: 0,
    });
    assert.equal((await post(app, VALIDATE, review('CREATE'))).statusCode, 200);
    assert.equal((await post(app, `${VALIDATE}?timeout=10s`, review('UPDATE'))).statusCode, 200);
    assert.equal((await post(app, MUTATE, review('CREATE'))).statusCode, 200);
    assert.equal((await post(app, VALIDATE, { kind: 'NotAReview' })).statusCode, 400);
    assert.equal((await post(app, VALIDATE, 'x'.repeat(5000))).statusCode, 413);
    assert.equal((await post(app, MUTATE, '{not json')).statusCode, 400);
    assert.equal((await post(app, '/elsewhere', review('CREATE'))).statusCode, 404);

    assert.deepEqual(await seriesOf(metrics, 'controller_runtime_webhook_requests_total'), {
      [`webhook=${VALIDATE},code=200`]: 2,
      [`webhook=${VALIDATE},code=500`]: 0,
      [`webhook=${VALIDATE},code=400`]: 1,
      [`webhook=${VALIDATE},code=413`]: 1,
      [`webhook=${MUTATE},code=200`]: 1,
      [`webhook=${MUTATE},code=500`]: 0,
      [`webhook=${MUTATE},code=400`]: 1,
    });
    const latency = await seriesOf(metrics, 'controller_runtime_webhook_latency_seconds');
    assert.equal(latency[`le=+Inf,webhook=${VALIDATE}`], 4);
    assert.equal(latency[`le=+Inf,webhook=${MUTATE}`], 2);
    assert.deepEqual(
      Object.keys(latency)
        .filter((k) => k.endsWith(`webhook=${VALIDATE}`) && k.startsWith('le='))
        .map((k) => k.slice(3, k.indexOf(','))),
      [...CONTROLLER_RUNTIME_LATENCY_BUCKETS.map(String), '+Inf'],
    );
    assert.deepEqual(await seriesOf(metrics, 'controller_runtime_webhook_requests_in_flight'), {
      [`webhook=${VALIDATE}`]: 0,
      [`webhook=${MUTATE}`]: 0,
    });
    // Our own series keep the decision; the HTTP-level refusals stay in theirs.
    assert.equal(
      Object.values(await seriesOf(metrics, 'trainjob_webhook_requests_total')).reduce((a, b) => a + b, 0),
      3,
    );
  });

  it('a request being decided is in flight until answered', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let entered!: () => void;
    const inside = new Promise<void>((r) => (entered = r));
    const validator = fakeValidator(async () => {
      entered();
      await gate;
      return { causes: [], warnings: [] };
    });
    const { app, metrics } = await testServer({ validator });
    const pending = post(app, VALIDATE, review('CREATE'));
    await inside;
    assert.equal((await seriesOf(metrics, 'controller_runtime_webhook_requests_in_flight'))[`webhook=${VALIDATE}`], 1);
    release();
    assert.equal((await pending).statusCode, 200);
    assert.equal((await seriesOf(metrics, 'controller_runtime_webhook_requests_in_flight'))[`webhook=${VALIDATE}`], 0);
    assert.equal(
      (await seriesOf(metrics, 'controller_runtime_webhook_requests_total'))[`webhook=${VALIDATE},code=200`],
      1,
    );
  });
});
