// `trainjob-webhook reconcile`: the reconciler sidecar. Flags parsed once; runs until a signal
// stops it (draining in-flight reconciles and releasing its Lease) or leadership is lost (exit 1,
// so that the container restarts as a fresh candidate).
import { loadKubeConfig } from '../cluster/client.ts';
import { createLogger } from '../observability/logger.ts';
import { ConfigError, parseReconcileArgs, RECONCILE_USAGE, type ReconcileConfig } from '../reconciler/config.ts';
import { startReconciler } from '../reconciler/run.ts';
import { installProcessHandlers } from '../server.ts';
import type { CommandIo } from './review.ts';

export { RECONCILE_USAGE };

export async function reconcileCommand(args: string[], io: CommandIo): Promise<number> {
  let config: ReconcileConfig;
  try {
    config = parseReconcileArgs(args);
  } catch (err) {
    if (err instanceof ConfigError) {
      io.err(`reconcile: ${err.message}\n\n${RECONCILE_USAGE}`);
      return 2;
    }
    throw err;
  }
  const logger = createLogger(config.logLevel);
  const kc = loadKubeConfig(config.cluster);
  if (!kc) throw new Error('no cluster access'); // parseReconcileArgs guarantees one
  const handle = await startReconciler(config, {
    kc,
    logger,
    onFatal: (reason) => {
      logger.fatal({ reason }, 'reconciler stopping');
      process.exit(1);
    },
  });
  installProcessHandlers(handle, { logger, timeoutMs: config.shutdownTimeoutMs });
  return new Promise<number>(() => {}); // runs until a signal closes it
}
