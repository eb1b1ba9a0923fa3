import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Logger } from '../../src/observability/logger.ts';
import { LazyRequestLogger } from '../../src/observability/request-logger.ts';
import { buildAdmissionServer } from '../../src/webhook/server.ts';
import { createMetrics } from '../../src/observability/metrics.ts';
import { captureLogs, fakeValidator, testCert } from './fixtures.ts';

/** A logger whose child() calls are counted. */
function countingChildren(logger: Logger): { parent: Logger; children: () => number } {
  let n = 0;
  const parent = Object.create(logger) as Logger;
  parent.child = ((...args: Parameters<Logger['child']>) => (n++, logger.child(...args))) as Logger['child'];
  return { parent, children: () => n };
}

describe('the request logger', () => {
  it('makes its child logger only when a line is logged, once, with the bindings', () => {
    const { logger, lines } = captureLogs();
    const { parent, children } = countingChildren(logger);
    const log = new LazyRequestLogger(parent, { httpReqId: 'req-7' }, {});
    assert.equal(children(), 0);
    log.debug('a debug line');
    log.warn({ code: 413 }, 'request refused');
    assert.equal(children(), 1);
    assert.equal(log.level, 'debug');
    assert.deepEqual(
      lines.map((l) => [l.httpReqId, l.msg, l.level]),
      [
        ['req-7', 'a debug line', 'debug'],
        ['req-7', 'request refused', 'warn'],
      ],
    );
    const grandchild = log.child({ extra: 1 });
    grandchild.info('deeper');
    assert.equal(lines[2].httpReqId, 'req-7');
    assert.equal(lines[2].extra, 1);
  });

  it('a refusal through the server is logged with the request id and the server binding', async () => {
    const { logger, lines } = captureLogs();
    const app = await buildAdmissionServer(
      { tls: await testCert(), bodyLimit: 100 },
      { validator: fakeValidator(), logger, metrics: createMetrics() },
    );
    const res = await app.inject({
      method: 'POST',
      url: '/validate-trainer-kubeflow-org-v1alpha1-trainjob',
      payload: 'x'.repeat(200),
    });
    assert.equal(res.statusCode, 413);
    const refused = lines.find((l) => l.msg === 'request refused');
    assert.ok(refused);
    assert.match(String(refused.httpReqId), /^req-/);
    assert.equal(refused.server, 'admission');
    await app.close();
  });
});
