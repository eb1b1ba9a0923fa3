// The test-only crash point (`--crash-after`, read by the test entry alone): the process ends the
// way a SIGKILL ends it, but only once what it logged has reached its file, so that a test can
// tell from the log which steps ran before the crash.
import { pino } from 'pino';
import type { Logger } from '../observability/logger.ts';

/** The longest the crash waits for the log: a stream that never drains must not keep it alive. */
const LOG_DRAIN_LIMIT_MS = 2_000;

type LogStream = { once?: (event: 'drain', listener: () => void) => unknown; flushSync?: () => void };

/**
 * pino's stream writes through libuv's thread pool: a line whose write is still queued there is
 * lost to a SIGKILL, and flushSync() writes only what is not yet in flight. So this waits for the
 * stream's 'drain' (it follows the write of the warning logged just before) and flushes anything
 * left synchronously.
 */
export async function logsWritten(logger: Logger): Promise<void> {
  const stream = (logger as unknown as Record<symbol, LogStream | undefined>)[pino.symbols.streamSym];
  if (typeof stream?.once === 'function') {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, LOG_DRAIN_LIMIT_MS);
      stream.once!('drain', () => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
  try {
    stream?.flushSync?.();
  } catch {
    // not ready or not a file stream: nothing to flush
  }
}

/** Logs the crash point, waits for the log to be written, and kills the process with SIGKILL. */
export async function crashNow(logger: Logger, crashAfter: string): Promise<never> {
  logger.warn({ crashAfter }, 'test crash point reached: SIGKILL');
  await logsWritten(logger);
  process.kill(process.pid, 'SIGKILL');
  return new Promise<never>(() => {});
}
