import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { logAdmission } from '../../src/observability/logger.ts';
import { installProcessHandlers } from '../../src/server.ts';
import { captureLogs } from '../webhooks/fixtures.ts';

describe('logger', () => {
  it('redacts anything object-like that slips into a log call', () => {
    const { logger, lines } = captureLogs();
    logger.info({ object: { spec: { trainer: { env: [{ name: 'TOKEN', value: 's3cret' }] } } }, request: { oldObject: { x: 's3cret' } } }, 'oops');
    logger.info({ ctx: { body: 's3cret', env: ['s3cret'] } }, 'oops');
    assert.doesNotMatch(JSON.stringify(lines), /s3cret/);
    assert.equal(lines[0].object, '[redacted]');
  });

  it('one admission line: uid as reqId, level as a name', () => {
    const { logger, lines } = captureLogs();
    logAdmission(logger, { reqId: 'u1', webhook: 'validate', operation: 'UPDATE', namespace: 'ns', name: 'j', user: 'alice', dryRun: false, decision: 'denied', code: 422, rules: ['trainer.image'], latencyMs: 1.5 });
    assert.equal(lines.length, 1);
    assert.equal(lines[0].level, 'info');
    assert.equal(lines[0].reqId, 'u1');
    assert.equal(lines[0].msg, 'admission');
    assert.deepEqual(lines[0].rules, ['trainer.image']);
    logAdmission(logger, { reqId: 'u2', webhook: 'validate', operation: 'CREATE', dryRun: false, decision: 'error', error: 'boom', latencyMs: 1 });
    assert.equal(lines[1].level, 'error');
  });
});

describe('process handlers', () => {
  // A signal nothing else listens to (SIGUSR2 would also fire Node's diagnostic report).
  it('a signal closes the server once; handlers can be removed', async () => {
    const { logger, lines } = captureLogs();
    let closes = 0;
    const before = process.listenerCount('SIGVTALRM');
    const uninstall = installProcessHandlers({ close: async () => void closes++ }, { logger, timeoutMs: 5000, signals: ['SIGVTALRM'], exit: () => {} });
    try {
      process.emit('SIGVTALRM', 'SIGVTALRM');
      await new Promise((r) => setImmediate(r));
      assert.equal(closes, 1);
      assert.ok(lines.some((l) => l.msg === 'signal received' && l.signal === 'SIGVTALRM'));
    } finally {
      uninstall();
    }
    assert.equal(process.listenerCount('SIGVTALRM'), before);
  });
});
