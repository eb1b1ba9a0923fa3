// `trainjob-webhook reconcile` with the test-only crash point: `--crash-after STEP` is read here
// and put into the config (the shipped CLI has no such flag); every other flag is the real
// command's. The crash-consistency e2e suites run the sidecar through this entry.
import { ConfigError, CRASH_POINTS, parseReconcileArgs, RECONCILE_USAGE, type CrashPoint } from '../../../src/reconciler/config.ts';
import { runReconcile } from '../../../src/commands/reconcile.ts';

/** Takes `--crash-after STEP` out of the arguments; the rest are the command's. */
export function splitCrashPoint(argv: readonly string[]): { crashAfter?: CrashPoint; args: string[] } {
  const at = argv.indexOf('--crash-after');
  if (at < 0) return { args: [...argv] };
  const step = argv[at + 1];
  if (!(CRASH_POINTS as readonly string[]).includes(step ?? '')) throw new ConfigError(`--crash-after must be one of ${CRASH_POINTS.join(', ')}, got "${step ?? ''}"`);
  return { crashAfter: step as CrashPoint, args: [...argv.slice(0, at), ...argv.slice(at + 2)] };
}

if (import.meta.main) {
  try {
    const { crashAfter, args } = splitCrashPoint(process.argv.slice(2));
    process.exitCode = await runReconcile({ ...parseReconcileArgs(args), crashAfter });
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`reconcile (test entry): ${err.message}\n\n${RECONCILE_USAGE}\n`);
    process.exitCode = 2;
  }
}
