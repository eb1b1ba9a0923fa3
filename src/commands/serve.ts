// `trainjob-webhook serve`: flags parsed once, then the webhook started (webhook/run.ts), until a
// signal closes it. What a user gave that cannot be used ends it with a message and exit code 2.
import { parseServeArgs, ConfigError, SERVE_USAGE, type ServeConfig } from '../webhook/config.ts';
import { startWebhook, type Webhook } from '../webhook/run.ts';
import { createLogger } from '../observability/logger.ts';
import { createMetrics } from '../observability/metrics.ts';
import { installProcessHandlers } from '../process/signals.ts';
import { InputError } from '../io/read-object.ts';
import type { CommandIo } from './io.ts';

/**
 * What a user gave that cannot be used (a missing file, a bad CRD or kubeconfig, a busy port): a
 * message, not a stack.
 */
function isStartUpInputError(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  const name = (err as Error | null)?.name;
  return (
    name === 'CrdLoadError' ||
    err instanceof InputError ||
    ['ENOENT', 'EACCES', 'EISDIR', 'ENOTDIR', 'EADDRINUSE', 'EADDRNOTAVAIL', 'ERR_OSSL_PEM_NO_START_LINE'].includes(
      code ?? '',
    ) ||
    /^--[a-z-]+ /.test((err as Error | null)?.message ?? '')
  );
}

export async function serveCommand(args: string[], io: CommandIo): Promise<number> {
  let config: ServeConfig;
  try {
    config = parseServeArgs(args);
  } catch (err) {
    if (err instanceof ConfigError) {
      io.err(`serve: ${err.message}\n\n${SERVE_USAGE}`);
      return 2;
    }
    throw err;
  }
  const logger = createLogger(config.logLevel);
  const metrics = createMetrics({ defaultMetrics: true });
  let webhook: Webhook;
  try {
    webhook = await startWebhook(config, logger, metrics);
  } catch (err) {
    if (!isStartUpInputError(err)) throw err;
    io.err(`serve: cannot start: ${(err as Error).message.split('\n')[0]}`);
    return 2;
  }
  // Runs until a signal closes it; then the command ends with 0 once in-flight requests drained.
  return new Promise<number>((resolve) => {
    installProcessHandlers(
      {
        close: async () => {
          await webhook.close();
          resolve(0);
        },
      },
      { logger, timeoutMs: config.shutdownTimeoutMs },
    );
  });
}
