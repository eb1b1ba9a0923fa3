// Where an admission request's time goes (src/observability/admission-stages.ts): each request's
// stages are laps of its own clock, summed per stage and exposed at scrape time; a request whose
// clock never started adds nothing.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { AdmissionStages } from '../../src/observability/admission-stages.ts';
import { createMetrics } from '../../src/observability/metrics.ts';
import { post, testServer } from '../webhook/fixtures.ts';
import { sumOf } from '../../bench/lib/stages.ts';

const series = async (registry: Registry) => registry.metrics();

describe('admission stages', () => {
  it('sums each lap into its stage and counts it, per request clock', async () => {
    const registry = new Registry();
    const stages = new AdmissionStages([registry]);
    const a = {};
    const b = {};
    stages.begin(a, 0);
    stages.begin(b, 0);
    stages.lap(a, 'receive', 2);
    stages.lap(b, 'receive', 5);
    stages.lap(a, 'envelope', 3);
    stages.end(a, 10);
    const text = await series(registry);
    assert.ok(
      Math.abs(sumOf(text, 'trainjob_webhook_admission_stage_seconds_total', /stage="receive"/) - 0.007) < 1e-12,
    );
    assert.ok(
      Math.abs(sumOf(text, 'trainjob_webhook_admission_stage_seconds_total', /stage="envelope"/) - 0.001) < 1e-12,
    );
    assert.ok(Math.abs(sumOf(text, 'trainjob_webhook_admission_stage_seconds_total', /stage="send"/) - 0.007) < 1e-12);
    assert.equal(sumOf(text, 'trainjob_webhook_admission_stage_total', /stage="receive"/), 2);
    assert.equal(sumOf(text, 'trainjob_webhook_admission_stage_total', /stage="send"/), 1);
    stages.lap(a, 'answer', 20);
    assert.equal(
      sumOf(await series(registry), 'trainjob_webhook_admission_stage_total', /stage="answer"/),
      0,
      'an ended clock adds nothing',
    );
  });

  it('splits a lap: what waited goes to the waited stage, the rest to the lap, never below zero', async () => {
    const registry = new Registry();
    const stages = new AdmissionStages([registry]);
    const r = {};
    stages.begin(r, performance.now() - 4);
    stages.split(r, 'decide', 'read', 1_000);
    const text = await series(registry);
    const decide = sumOf(text, 'trainjob_webhook_admission_stage_seconds_total', /stage="decide"/);
    const read = sumOf(text, 'trainjob_webhook_admission_stage_seconds_total', /stage="read"/);
    assert.equal(decide, 0, 'the wait is capped at the lap');
    assert.ok(read >= 0.004 && read < 1);
    stages.split(r, 'decide', 'read', undefined);
    assert.equal(
      sumOf(await series(registry), 'trainjob_webhook_admission_stage_total', /stage="read"/),
      1,
      'no wait: not counted as a read',
    );
  });

  it('times every stage of a request through the admission server, each once', async () => {
    const { app, metrics } = await testServer();
    const res = await post(app, '/validate-trainer-kubeflow-org-v1alpha1-trainjob', {
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      request: {
        uid: 'u1',
        kind: { group: 'trainer.kubeflow.org', version: 'v1alpha1', kind: 'TrainJob' },
        resource: { group: 'trainer.kubeflow.org', version: 'v1alpha1', resource: 'trainjobs' },
        operation: 'DELETE',
        namespace: 'ns',
        name: 'x',
        userInfo: { username: 'u' },
      },
    });
    assert.equal(res.statusCode, 200);
    const text = await metrics.registry.metrics();
    for (const stage of ['receive', 'envelope', 'decide', 'answer', 'send'])
      assert.equal(sumOf(text, 'trainjob_webhook_admission_stage_total', new RegExp(`stage="${stage}"`)), 1, stage);
    assert.equal(sumOf(text, 'trainjob_webhook_admission_stage_total', /stage="read"/), 0);
    await app.close();
  });

  it('is part of the webhook metrics', async () => {
    assert.match(
      await createMetrics().registry.metrics(),
      /# TYPE trainjob_webhook_admission_stage_seconds_total counter/,
    );
  });
});
