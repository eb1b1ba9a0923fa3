// The process around a command: a signal drains and closes what the command runs, then ends the
// process; a shutdown that hangs is cut short. Used by `serve` and `reconcile`.
import type { Logger } from '../observability/logger.ts';

/** What a signal closes (a ServeHandle, the reconciler's run). */
export interface Closable {
  close(): Promise<void>;
}

export interface ProcessHandlerOptions {
  logger: Logger;
  /** After this, a shutdown that has not finished exits the process with code 1. */
  timeoutMs: number;
  signals?: NodeJS.Signals[];
  /** Ends the process (tests pass their own). */
  exit?: (code: number) => void;
}

/**
 * SIGTERM/SIGINT drain and close `handle`, then the process ends with its exit code (0 unless
 * set). A second signal, or a drain slower than `timeoutMs`, exits at once with code 1. Once
 * closed, the process does not wait for stray handles (a client library's leaked sockets kept
 * `serve` alive beside a real API server): it exits as soon as the event loop has had a turn to
 * finish what is under way. Unhandled rejections are logged instead of killing the process
 * mid-request.
 */
export function installProcessHandlers(handle: Closable, options: ProcessHandlerOptions): () => void {
  const { logger } = options;
  const exit = options.exit ?? ((code: number) => process.exit(code));
  const signals = options.signals ?? ['SIGTERM', 'SIGINT'];
  let received = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (received) {
      logger.warn({ signal }, 'second signal: exiting without waiting');
      exit(1);
      return;
    }
    received = true;
    logger.info({ signal }, 'signal received');
    const force = setTimeout(() => {
      logger.error({ timeoutMs: options.timeoutMs }, 'shutdown did not finish in time: exiting');
      exit(1);
    }, options.timeoutMs);
    force.unref();
    handle.close().then(
      () => {
        clearTimeout(force);
        // Unref'd: a process with nothing left running ends on its own first.
        setTimeout(
          () => exit(typeof process.exitCode === 'number' ? process.exitCode : 0),
          CLOSED_EXIT_DELAY_MS,
        ).unref();
      },
      (err: unknown) => {
        logger.error({ error: (err as Error).message }, 'shutdown failed');
        exit(1);
      },
    );
  };
  const onRejection = (reason: unknown) => {
    logger.error({ error: reason instanceof Error ? reason.message : String(reason) }, 'unhandled promise rejection');
  };
  for (const s of signals) process.on(s, onSignal);
  process.on('unhandledRejection', onRejection);
  return () => {
    for (const s of signals) process.off(s, onSignal);
    process.off('unhandledRejection', onRejection);
  };
}

/** After a completed shutdown, the turn the process gets to end by itself before it is ended. */
const CLOSED_EXIT_DELAY_MS = 100;
