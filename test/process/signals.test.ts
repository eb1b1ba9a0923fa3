import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { installProcessHandlers } from '../../src/process/signals.ts';
import { captureLogs } from '../webhook/fixtures.ts';

describe('process handlers', () => {
  // A signal nothing else listens to (SIGUSR2 would also fire Node's diagnostic report).
  it('a signal closes the server once; handlers can be removed', async () => {
    const { logger, lines } = captureLogs();
    let closes = 0;
    const before = process.listenerCount('SIGVTALRM');
    const uninstall = installProcessHandlers(
      { close: async () => void closes++ },
      { logger, timeoutMs: 5000, signals: ['SIGVTALRM'], exit: () => {} },
    );
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
