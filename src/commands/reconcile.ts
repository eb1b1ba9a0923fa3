// `trainjob-webhook reconcile`: the reconciler sidecar. Flags parsed once; runs until a signal
// stops it (draining in-flight reconciles and releasing its Lease; exit 0). A lost Lease does not
// end it: it stops acting and campaigns again (a sidecar that exits makes the webhook's pod NotReady).
// The API server is reached as `serve` reaches it (src/cluster/connect.ts): the project's own
// client; @kubernetes/client-node is loaded only for a kubeconfig user with exec or auth-provider.
import type { ApiClient } from '../cluster/api-request.ts';
import { connectCluster } from '../cluster/connect.ts';
import { createLogger } from '../observability/logger.ts';
import { ConfigError, parseReconcileArgs, RECONCILE_USAGE, type ReconcileConfig } from '../reconciler/config.ts';
import { startReconciler } from '../reconciler/run.ts';
import { installProcessHandlers } from '../process/signals.ts';
import type { CommandIo } from './io.ts';

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
  let client: ApiClient;
  let leaseClient: ApiClient;
  try {
    // Two clients of the same access: the Lease's renewals on connections of their own.
    [client, leaseClient] = await Promise.all([connect(config), connect(config)]);
  } catch (err) {
    // A missing or unusable kubeconfig (or service-account files) is the user's input: a message, not a stack.
    io.err(`reconcile: cannot start: ${(err as Error).message.split('\n')[0]}`);
    return 2;
  }
  return runReconcile(config, client, leaseClient);
}

/** The API server of the config's cluster access (a kubeconfig's files are read now: a missing one fails here). */
export async function connect(config: ReconcileConfig): Promise<ApiClient> {
  const connection = await connectCluster(config.cluster);
  if (!connection) throw new Error('no cluster access'); // parseReconcileArgs guarantees one
  return connection.client;
}

/** Runs the reconciler with a parsed config until a signal stops it; resolves to the exit code. */
export async function runReconcile(
  config: ReconcileConfig,
  client: ApiClient,
  leaseClient?: ApiClient,
): Promise<number> {
  const logger = createLogger(config.logLevel);
  // The planner's rule table and patch generator only with --restore-crd-patch (crd-patch-planner.ts).
  const crdPatchPlanner = config.restoreCrdPatch ? (await import('./crd-patch-planner.ts')).crdPatchPlanner : undefined;
  const handle = await startReconciler(config, { client, leaseClient, logger, crdPatchPlanner });
  // Runs until a signal closes it; then resolves 0, so the process ends with a clean exit code.
  return new Promise<number>((resolve) => {
    installProcessHandlers(
      { close: () => handle.close().then(() => resolve(0)) },
      { logger, timeoutMs: config.shutdownTimeoutMs },
    );
  });
}
