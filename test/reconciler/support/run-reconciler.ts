// `trainjob-webhook reconcile` with test-only settings the shipped CLI has no flags for:
// `--crash-after STEP` (a crash point) and `--lease-timing LEASE,RENEW,RETRY` (leader-election
// timing in ms instead of client-go's 15 s / 10 s / 2 s, so that a takeover in the resilience
// suite takes seconds, not 15 s). They are read here and put into the config; every other flag is
// the real command's. sidecar.ts starts this entry when one of them is given.
import {
  ConfigError,
  CRASH_POINTS,
  parseReconcileArgs,
  RECONCILE_USAGE,
  type CrashPoint,
  type LeaderElectionConfig,
} from '../../../src/reconciler/config.ts';
import { connect, runReconcile } from '../../../src/commands/reconcile.ts';

/** Takes `--crash-after STEP` out of the arguments; the rest are the command's. */
export function splitCrashPoint(argv: readonly string[]): { crashAfter?: CrashPoint; args: string[] } {
  const at = argv.indexOf('--crash-after');
  if (at < 0) return { args: [...argv] };
  const step = argv[at + 1];
  if (!(CRASH_POINTS as readonly string[]).includes(step ?? ''))
    throw new ConfigError(`--crash-after must be one of ${CRASH_POINTS.join(', ')}, got "${step ?? ''}"`);
  return { crashAfter: step as CrashPoint, args: [...argv.slice(0, at), ...argv.slice(at + 2)] };
}

type LeaseTiming = Pick<LeaderElectionConfig, 'leaseDurationMs' | 'renewDeadlineMs' | 'retryPeriodMs'>;

/**
 * Takes `--lease-timing LEASE,RENEW,RETRY` (ms; lease > renew deadline > retry period, as client-go
 * requires) out of the arguments.
 */
export function splitLeaseTiming(argv: readonly string[]): { leaseTiming?: LeaseTiming; args: string[] } {
  const at = argv.indexOf('--lease-timing');
  if (at < 0) return { args: [...argv] };
  const raw = argv[at + 1] ?? '';
  const ms = raw.split(',').map((x) => (/^\d+$/.test(x) ? Number(x) : Number.NaN));
  if (ms.length !== 3 || ms.some((x) => !(x >= 100)) || !(ms[0] > ms[1] && ms[1] > ms[2])) {
    throw new ConfigError(
      `--lease-timing must be LEASE,RENEW,RETRY in ms (each at least 100, lease > renew deadline > retry period), got "${raw}"`,
    );
  }
  return {
    leaseTiming: { leaseDurationMs: ms[0], renewDeadlineMs: ms[1], retryPeriodMs: ms[2] },
    args: [...argv.slice(0, at), ...argv.slice(at + 2)],
  };
}

if (import.meta.main) {
  try {
    const { crashAfter, args: rest } = splitCrashPoint(process.argv.slice(2));
    const { leaseTiming, args } = splitLeaseTiming(rest);
    const config = parseReconcileArgs(args);
    const leaderElection =
      config.leaderElection && leaseTiming ? { ...config.leaderElection, ...leaseTiming } : config.leaderElection;
    process.exitCode = await runReconcile(
      { ...config, leaderElection, crashAfter },
      await connect(config),
      await connect(config),
    );
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`reconcile (test entry): ${err.message}\n\n${RECONCILE_USAGE}\n`);
    process.exitCode = 2;
  }
}
