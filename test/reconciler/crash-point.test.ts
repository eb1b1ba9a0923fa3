// The test crash point (--crash-after): every line logged before the SIGKILL reaches the log file,
// even when pino's write is still queued in libuv's thread pool (the resilience e2e counts the
// "stale JobSet deleted" lines of a sidecar killed this way: a lost write leaves none to count).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, openSync, closeSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** A process that logs with the product's logger, with the thread pool busy, then crashes. */
const script = (withPoolBusy: boolean) => `
import { pbkdf2 } from 'node:crypto';
import { createLogger } from ${JSON.stringify(path.join(root, 'src/observability/logger.ts'))};
import { crashNow } from ${JSON.stringify(path.join(root, 'src/reconciler/crash-point.ts'))};
const logger = createLogger('info');
// Four slow tasks fill libuv's four threads: the log's fs.write waits behind them.
if (${withPoolBusy}) for (let i = 0; i < 4; i++) pbkdf2('x', 'y', 200_000, 64, 'sha512', () => {});
for (let i = 0; i < 3; i++) logger.info({ i }, 'stale JobSet deleted');
await crashNow(logger, 'delete-jobset');
`;

describe('crashNow', () => {
  for (const withPoolBusy of [false, true]) {
    it(`ends with SIGKILL after every line logged before it is in the file${withPoolBusy ? ' (thread pool busy)' : ''}`, () => {
      const dir = mkdtempSync(path.join(tmpdir(), 'crash-point-'));
      try {
        const logFile = path.join(dir, 'out.log');
        const fd = openSync(logFile, 'w');
        const run = spawnSync(process.execPath, ['--input-type=module', '-e', script(withPoolBusy)], {
          stdio: ['ignore', fd, 'pipe'],
          timeout: 30_000,
        });
        closeSync(fd);
        assert.equal(run.signal, 'SIGKILL', run.stderr.toString());
        const lines = readFileSync(logFile, 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l) as { msg: string; i?: number });
        assert.deepEqual(
          lines.map((l) => l.msg),
          ['stale JobSet deleted', 'stale JobSet deleted', 'stale JobSet deleted', 'test crash point reached: SIGKILL'],
        );
        assert.deepEqual(
          lines.slice(0, 3).map((l) => l.i),
          [0, 1, 2],
        );
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }
});
