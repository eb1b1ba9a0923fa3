// Runs the real reconciler sidecar (`trainjob-webhook reconcile`) as its own process beside the
// control plane, and reads what it logs and counts.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import {
  freePorts,
  httpGet,
  projectRoot,
  waitFor,
  type ControlPlane,
  type TrackedProcess,
} from '../../harness/index.ts';

export interface LogLine {
  msg?: string;
  trainJob?: string;
  outcome?: string;
  steps?: string[];
  generation?: number;
  [key: string]: unknown;
}

export interface Sidecar {
  name: string;
  proc: TrackedProcess;
  handoffPort: number;
  opsPort: number;
  handoffUrl: string;
  logLines(): LogLine[];
  /** Sum of a Prometheus sample over the label sets matching the filter. */
  metric(name: string, labelFilter?: RegExp): Promise<number>;
  /** Waits for a `reconciled` line of this TrainJob key matching the predicate. */
  reconciled(key: string, pred: (l: LogLine) => boolean, timeoutMs?: number): Promise<LogLine>;
}

export interface SidecarOptions {
  name: string;
  mode: 'companion' | 'standalone';
  kubeconfig: string;
  leaseNamespace: string;
  /** Default: a free port (the webhook's --handoff URL names one: pass it here). */
  handoffPort?: number;
  extraArgs?: string[];
  /** Wait for /readyz (default true; false for a process expected to die early). */
  waitReady?: boolean;
  /** The checkout whose `reconcile` runs (default: this one; an older version's tree in upgrade tests). */
  root?: string;
  /** More environment for the process (e.g. NODE_OPTIONS that starve its heap). */
  env?: NodeJS.ProcessEnv;
}

const node = process.execPath;
/** The flags only the test entry (run-reconciler.ts) reads. */
const TEST_ONLY_FLAGS = ['--crash-after', '--lease-timing'];

/**
 * The shipped CLI, or the test entry when the arguments ask for a test-only setting (a crash point,
 * the Lease's timing).
 */
function entrypoint(extraArgs: readonly string[], root: string): string[] {
  return TEST_ONLY_FLAGS.some((f) => extraArgs.includes(f))
    ? [path.join(root, 'test/reconciler/support/run-reconciler.ts')]
    : [path.join(root, 'bin/trainjob-webhook.js'), 'reconcile'];
}

/**
 * The confine policies' bindings that hold a reconciler to companion mode's writes (its JobSets
 * dry runs and suspends, no conditions): a standalone reconciler runs without them, as
 * docs/security.md tells standalone users to install it. They stay deleted for the rest of the
 * world: only test/e2e/reconciler-standalone.test.ts starts standalone reconcilers, in a world of
 * its own; a suite that mixes the modes would need them put back for its companion ones.
 */
const COMPANION_ONLY_BINDINGS = [
  'trainjob-webhook-confine-reconciler-companion-status',
  'trainjob-webhook-confine-reconciler-companion-jobsets',
];

export async function startSidecar(cp: ControlPlane, opts: SidecarOptions): Promise<Sidecar> {
  if (opts.mode === 'standalone')
    await cp.kubectl(['delete', 'validatingadmissionpolicybinding', ...COMPANION_ONLY_BINDINGS, '--ignore-not-found']);
  const [freeHandoff, opsPort] = await freePorts(2);
  const handoffPort = opts.handoffPort ?? freeHandoff;
  const args = [
    ...entrypoint(opts.extraArgs ?? [], opts.root ?? projectRoot),
    '--kubeconfig',
    opts.kubeconfig,
    '--mode',
    opts.mode,
    '--handoff-port',
    String(handoffPort),
    '--ops-port',
    String(opsPort),
    '--ops-host',
    '127.0.0.1',
    '--lease-namespace',
    opts.leaseNamespace,
    '--log-level',
    'debug',
    ...(opts.extraArgs ?? []),
  ];
  const proc = cp.startProcess(opts.name, node, args, {
    env: cp.childEnv(opts.env),
    cwd: opts.root ?? projectRoot,
    stopTimeoutMs: 10_000,
  });
  const logLines = (): LogLine[] => {
    try {
      return readFileSync(proc.logFile, 'utf8')
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as LogLine);
    } catch {
      return [];
    }
  };
  if (opts.waitReady !== false) {
    await waitFor(
      `${opts.name} ready`,
      async () => (await httpGet(`http://127.0.0.1:${opsPort}/readyz`)).status === 200,
      { process: proc, timeoutMs: 30_000 },
    );
  }
  return {
    name: opts.name,
    proc,
    handoffPort,
    opsPort,
    handoffUrl: `http://127.0.0.1:${handoffPort}/hints`,
    logLines,
    async metric(name, labelFilter) {
      const { body } = await httpGet(`http://127.0.0.1:${opsPort}/metrics`);
      return body
        .split('\n')
        .filter((l) => (l.startsWith(`${name} `) || l.startsWith(`${name}{`)) && (!labelFilter || labelFilter.test(l)))
        .reduce((sum, l) => sum + Number(l.split(' ').pop()), 0);
    },
    reconciled(key, pred, timeoutMs = 60_000) {
      return waitFor(
        `${opts.name}: a reconcile of ${key} as expected`,
        () => logLines().find((l) => l.msg === 'reconciled' && l.trainJob === key && pred(l)),
        { timeoutMs, process: proc, intervalMs: 250 },
      );
    },
  };
}
