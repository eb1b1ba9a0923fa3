import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createMetrics } from '../../src/observability/metrics.ts';
import { buildOpsServer } from '../../src/observability/ops-server.ts';
import { captureLogs } from '../webhook/fixtures.ts';

async function ops(reason?: string) {
  const metrics = createMetrics();
  const app = await buildOpsServer({
    metrics,
    logger: captureLogs().logger,
    readiness: { notReadyReason: () => reason },
  });
  return { app, metrics };
}

describe('ops server', () => {
  it('/healthz and /readyz answer ok', async () => {
    const { app } = await ops();
    for (const url of ['/healthz', '/readyz']) {
      const res = await app.inject({ method: 'GET', url });
      assert.equal(res.statusCode, 200, url);
      assert.equal(res.body, 'ok');
    }
  });

  it('/readyz is 503 with the reason while not ready', async () => {
    const { app } = await ops('shutting down');
    const res = await app.inject({ method: 'GET', url: '/readyz' });
    assert.equal(res.statusCode, 503);
    assert.equal(res.body, 'not ready: shutting down');
    assert.equal((await app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200);
  });

  it('/metrics exposes the webhook metrics in Prometheus text format', async () => {
    const { app, metrics } = await ops();
    metrics.requests.inc({ webhook: 'validate', operation: 'UPDATE', decision: 'denied' });
    metrics.handoffHints.inc({ result: 'delivered' });
    metrics.certReloads.inc({ result: 'success' });
    const res = await app.inject({ method: 'GET', url: '/metrics' });
    assert.equal(res.statusCode, 200);
    assert.match(res.headers['content-type'] as string, /^text\/plain/);
    assert.match(
      res.body,
      /trainjob_webhook_requests_total\{webhook="validate",operation="UPDATE",decision="denied"\} 1/,
    );
    assert.match(res.body, /trainjob_webhook_handoff_hints_total\{result="delivered"\} 1/);
    assert.match(res.body, /trainjob_webhook_cert_reloads_total\{result="success"\} 1/);
    assert.match(res.body, /# TYPE trainjob_webhook_request_duration_seconds histogram/);
  });

  it('does not serve the webhooks', async () => {
    const { app } = await ops();
    const res = await app.inject({
      method: 'POST',
      url: '/validate-trainer-kubeflow-org-v1alpha1-trainjob',
      payload: {},
    });
    assert.equal(res.statusCode, 404);
  });
});
