// The plugin's flags, as kubectl spells them: -n/--namespace, --context, --kubeconfig, -o/--output,
// --dry-run=server, --timeout as a Go duration (10m, 90s, 1h30m). Pure: the arguments in, the
// options or a UsageError out.
import { parseArgs } from 'node:util';

export class UsageError extends Error {
  override name = 'UsageError';
}

export interface ConnectionFlags {
  namespace?: string;
  context?: string;
  kubeconfig?: string;
}

export interface ScaleArgs extends ConnectionFlags {
  name: string;
  nodes: number;
  dryRun: boolean;
  noResume: boolean;
  /** 0: no limit (as `kubectl rollout status --timeout=0`). */
  timeoutMs: number;
}

export interface StatusArgs extends ConnectionFlags {
  name?: string;
  output: 'text' | 'json' | 'yaml';
}

export const DEFAULT_TIMEOUT = '10m';

const CONNECTION = {
  namespace: { type: 'string', short: 'n' },
  context: { type: 'string' },
  kubeconfig: { type: 'string' },
} as const;

const UNITS: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1_000, ms: 1 };

/** A Go duration (time.ParseDuration) of hours, minutes, seconds and milliseconds: `10m`, `1h30m`, `90s`, `0`. */
export function parseDuration(flag: string, raw: string): number {
  if (raw === '0') return 0;
  const parts = [...raw.matchAll(/(\d+(?:\.\d+)?)(ms|h|m|s)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== raw)
    throw new UsageError(`invalid argument "${raw}" for "${flag}" flag: a duration such as 90s, 10m or 1h30m`);
  return Math.round(parts.reduce((sum, [, n, unit]) => sum + Number(n) * UNITS[unit], 0));
}

function parse<T extends Record<string, { type: 'string' | 'boolean'; short?: string }>>(args: string[], options: T) {
  try {
    return parseArgs({ args, strict: true, allowPositionals: true, options: { ...CONNECTION, ...options } });
  } catch (err) {
    // node:util's "Unknown option '--x'..." as kubectl's "unknown flag: --x".
    const m = /Unknown option '([^']+)'/.exec((err as Error).message);
    throw new UsageError(m ? `unknown flag: ${m[1]}` : (err as Error).message.split('.')[0]);
  }
}

const nonEmpty = (flag: string, v: string | undefined) => {
  if (v !== undefined && v.trim() === '') throw new UsageError(`${flag} needs a value`);
  return v;
};

function connectionOf(values: { namespace?: unknown; context?: unknown; kubeconfig?: unknown }): ConnectionFlags {
  const namespace = nonEmpty('--namespace', values.namespace as string | undefined);
  const context = nonEmpty('--context', values.context as string | undefined);
  const kubeconfig = nonEmpty('--kubeconfig', values.kubeconfig as string | undefined);
  return {
    ...(namespace ? { namespace } : {}),
    ...(context ? { context } : {}),
    ...(kubeconfig ? { kubeconfig } : {}),
  };
}

export function parseScaleArgs(args: string[]): ScaleArgs {
  const { values, positionals } = parse(args, {
    nodes: { type: 'string' },
    'dry-run': { type: 'string' },
    'no-resume': { type: 'boolean' },
    timeout: { type: 'string' },
  });
  if (positionals.length !== 1)
    throw new UsageError(
      positionals.length === 0 ? 'a TrainJob name is required' : `one TrainJob name, got ${positionals.length}`,
    );
  const raw = values.nodes;
  if (raw === undefined) throw new UsageError('--nodes is required');
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(Number(raw)))
    throw new UsageError(`invalid argument "${raw}" for "--nodes" flag: a whole number, 0 or more`);
  const dryRun = values['dry-run'] ?? 'none';
  if (dryRun === 'client')
    throw new UsageError('--dry-run=client is not supported: only the API server runs the rules; use --dry-run=server');
  if (dryRun !== 'none' && dryRun !== 'server')
    throw new UsageError(`invalid argument "${dryRun}" for "--dry-run" flag: "server" or "none"`);
  return {
    ...connectionOf(values),
    name: positionals[0],
    nodes: Number(raw),
    dryRun: dryRun === 'server',
    noResume: values['no-resume'] === true,
    timeoutMs: parseDuration('--timeout', values.timeout ?? DEFAULT_TIMEOUT),
  };
}

export function parseStatusArgs(args: string[]): StatusArgs {
  const { values, positionals } = parse(args, { output: { type: 'string', short: 'o' } });
  if (positionals.length > 1) throw new UsageError(`at most one TrainJob name, got ${positionals.length}`);
  const output = values.output ?? 'text';
  if (output !== 'text' && output !== 'json' && output !== 'yaml')
    throw new UsageError(`unable to match a printer suitable for the output format "${output}": json or yaml`);
  return { ...connectionOf(values), ...(positionals[0] ? { name: positionals[0] } : {}), output };
}
