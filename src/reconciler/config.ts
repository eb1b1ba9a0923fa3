// `reconcile` flags, parsed once into a config object. This and `serve`'s config are the only
// places that read the environment: everything below receives what it needs from here.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import type { ClusterAccess } from '../cluster/kube-access.ts';
import { LOG_LEVELS, type LogLevel } from '../observability/log-levels.ts';
import {
  ConfigError,
  nonEmptyFlag as nonEmpty,
  oneOfFlag as oneOf,
  parseFlags,
  portFlag as port,
} from '../process/flags.ts';
import { COMPONENT, DEFAULT_FIELD_MANAGER } from './names.ts';
import { RECONCILER_LEASE_NAME, RECONCILER_MODE_ANNOTATION, type Mode } from '../api/names.ts';

export { ConfigError };

export const MODES = ['companion', 'standalone'] as const;
/**
 * Test only: the process SIGKILLs itself right after this rebuild step (crash-consistency tests).
 * No flag sets it: the test entry test/reconciler/support/run-reconciler.ts puts it in the config.
 */
export const CRASH_POINTS = ['release-pvcs', 'delete-jobset'] as const;
export type CrashPoint = (typeof CRASH_POINTS)[number];

export interface LeaderElectionConfig {
  namespace: string;
  name: string;
  identity: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  /** Written on the Lease with every renewal: what the webhook reads of the leader (its mode). */
  annotations: Record<string, string>;
}

export interface ReconcileConfig {
  cluster: Exclude<ClusterAccess, { mode: 'none' }>;
  mode: Mode;
  /** The hand-off receiver: always loopback (only the webhook container in the same pod posts). */
  handoff: { host: '127.0.0.1'; port: number; hintWaitMs: number };
  /** Undefined: every address, dual-stack where the host has IPv6 (src/process/listen.ts). */
  opsHost?: string;
  opsPort: number;
  fieldManager: string;
  workers: number;
  logLevel: LogLevel;
  /** Undefined: --no-leader-election (a single replica). */
  leaderElection?: LeaderElectionConfig;
  /**
   * Every TrainJob is looked at again about this often (±10%, watches.ts), whatever the watches
   * said: insurance against a bug that drops an event, not how anything is retried.
   */
  resyncMs: number;
  shutdownTimeoutMs: number;
  /** Test only (see CRASH_POINTS). */
  crashAfter?: CrashPoint;
  /** --restore-crd-patch: put the TrainJob CRD patch back whenever the CRD lacks it (off by default). */
  restoreCrdPatch: boolean;
}

export const RECONCILE_DEFAULTS = {
  mode: 'companion' as Mode,
  handoffPort: 8082,
  hintWaitMs: 10_000,
  opsPort: 8083,
  workers: 4,
  logLevel: 'info' as LogLevel,
  // client-go's leader-election defaults.
  leaseDurationMs: 15_000,
  renewDeadlineMs: 10_000,
  retryPeriodMs: 2_000,
  // controller-runtime's cache SyncPeriod default, 10 hours (sigs.k8s.io/controller-runtime
  // pkg/cache/cache.go: defaultSyncPeriod = 10 * time.Hour), jittered per informer as its
  // calculateResyncPeriod does (watches.ts). What waits on something unwatched or slow requeues
  // itself (src/rebuild/decide.ts RETRY); missed watch events come back with the re-list.
  resyncMs: 10 * 60 * 60_000,
  shutdownTimeoutMs: 25_000,
};

export const RECONCILE_USAGE = `Usage: trainjob-webhook reconcile [flags]

  --kubeconfig FILE      the cluster to reconcile (default: the in-cluster service account; required outside a pod)
  --mode MODE            companion (default: beside Kubeflow Trainer's controller, deletes stale JobSets so Trainer
                         re-creates them) or standalone (no Trainer controller: builds and applies JobSets itself)
  --handoff-port N       loopback port receiving the webhook's hints, POST /hints (default ${RECONCILE_DEFAULTS.handoffPort})
  --ops-port N           plain-HTTP port for /healthz, /readyz, /metrics (default ${RECONCILE_DEFAULTS.opsPort})
  --ops-host ADDR        address of the ops port (default: every address, IPv6 and IPv4 (::, dual-stack),
                         or every IPv4 address (0.0.0.0) on a host without IPv6)
  --field-manager NAME   field manager of every apply (default ${DEFAULT_FIELD_MANAGER})
  --workers N            TrainJobs reconciled at once (default ${RECONCILE_DEFAULTS.workers})
  --lease-namespace NS   namespace of the leader-election Lease "${COMPONENT}" (default: the pod's namespace, else default)
  --no-leader-election   act without a Lease (only when a single replica runs)
  --restore-crd-patch    watch the TrainJob CRD and put this project's CRD patch back whenever it is gone (a Trainer
                         upgrade rewrote the CRD); needs the rights of manifests/components/crd-patch-restorer
  --log-level LEVEL      ${LOG_LEVELS.join(', ')} (default ${RECONCILE_DEFAULTS.logLevel})

Replicas elect a leader through the Lease; only the leader acts, the others keep their caches warm.
Every TrainJob is looked at again every ~10 hours (±10%), controller-runtime's default sync period:
watch events and a new leader queue the TrainJobs they concern, and a rebuild that waits (running
pods, a blocked or unsupported runtime) looks again on its own, so the periodic pass only insures
against a missed event; at 5 minutes it made 40,000 of the 50,000 reconciles of 10,000 TrainJobs.`;

/** Every flag of `reconcile`, each one in RECONCILE_USAGE (a test keeps them equal). */
export const RECONCILE_FLAGS = {
  kubeconfig: { type: 'string' },
  mode: { type: 'string' },
  'handoff-port': { type: 'string' },
  'ops-port': { type: 'string' },
  'ops-host': { type: 'string' },
  'field-manager': { type: 'string' },
  workers: { type: 'string' },
  'lease-namespace': { type: 'string' },
  'no-leader-election': { type: 'boolean' },
  'restore-crd-patch': { type: 'boolean' },
  'log-level': { type: 'string' },
} as const;

type Env = Readonly<Record<string, string | undefined>>;
const SA_NAMESPACE_FILE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

export interface ConfigSources {
  env?: Env;
  /** Reads the service account's namespace file (injectable for tests). */
  readFile?: (path: string) => string;
  hostname?: () => string;
  uuid?: () => string;
}

export function parseReconcileArgs(args: readonly string[], sources: ConfigSources = {}): ReconcileConfig {
  const env = sources.env ?? process.env;
  const values = parseFlags(args, RECONCILE_FLAGS);

  const inCluster = !!(env.KUBERNETES_SERVICE_HOST && env.KUBERNETES_SERVICE_PORT);
  const kubeconfig = nonEmpty('--kubeconfig', values.kubeconfig);
  if (!kubeconfig && !inCluster)
    throw new ConfigError(
      'the reconciler needs a cluster: pass --kubeconfig FILE, or run it in a pod (in-cluster service account)',
    );
  const cluster: ReconcileConfig['cluster'] = kubeconfig
    ? { mode: 'kubeconfig', path: kubeconfig }
    : { mode: 'in-cluster', host: env.KUBERNETES_SERVICE_HOST, port: env.KUBERNETES_SERVICE_PORT };

  const handoffPort = port('--handoff-port', values['handoff-port'], RECONCILE_DEFAULTS.handoffPort);
  const opsPort = port('--ops-port', values['ops-port'], RECONCILE_DEFAULTS.opsPort);
  if (handoffPort !== 0 && handoffPort === opsPort)
    throw new ConfigError(`--handoff-port and --ops-port must differ (both ${opsPort})`);

  const fieldManager = nonEmpty('--field-manager', values['field-manager']) ?? DEFAULT_FIELD_MANAGER;
  if (fieldManager.length > 128 || !/^[\x21-\x7e]+$/.test(fieldManager))
    throw new ConfigError(`--field-manager must be 1-128 printable characters without spaces, got "${fieldManager}"`);

  const mode = oneOf('--mode', values.mode, MODES, RECONCILE_DEFAULTS.mode);
  // The pod's namespace (its ServiceAccount's), when in a pod without --kubeconfig.
  const podNamespace = readPodNamespace(inCluster && !kubeconfig, sources);
  return {
    cluster,
    mode,
    handoff: { host: '127.0.0.1', port: handoffPort, hintWaitMs: RECONCILE_DEFAULTS.hintWaitMs },
    ...(values['ops-host'] === undefined ? {} : { opsHost: nonEmpty('--ops-host', values['ops-host']) }),
    opsPort,
    fieldManager,
    workers: workers(values.workers),
    logLevel: oneOf('--log-level', values['log-level'], LOG_LEVELS, RECONCILE_DEFAULTS.logLevel),
    leaderElection: values['no-leader-election']
      ? undefined
      : leaderElection(values['lease-namespace'], podNamespace, sources, mode),
    resyncMs: RECONCILE_DEFAULTS.resyncMs,
    shutdownTimeoutMs: RECONCILE_DEFAULTS.shutdownTimeoutMs,
    restoreCrdPatch: values['restore-crd-patch'] === true,
  };
}

function readPodNamespace(inPod: boolean, sources: ConfigSources): string | undefined {
  if (!inPod) return undefined;
  try {
    return (sources.readFile ?? ((p) => readFileSync(p, 'utf8')))(SA_NAMESPACE_FILE).trim() || undefined;
  } catch {
    return undefined;
  }
}

function leaderElection(
  flag: string | undefined,
  podNamespace: string | undefined,
  sources: ConfigSources,
  mode: Mode,
): LeaderElectionConfig {
  const namespace = nonEmpty('--lease-namespace', flag) ?? podNamespace;
  // client-go's identity: the host name (the pod name in a pod) and a unique suffix, so that a
  // restarted container is a new candidate and two containers never share an identity.
  const identity = `${(sources.hostname ?? hostname)()}_${(sources.uuid ?? randomUUID)()}`;
  return {
    namespace: namespace ?? 'default',
    name: RECONCILER_LEASE_NAME,
    identity,
    leaseDurationMs: RECONCILE_DEFAULTS.leaseDurationMs,
    renewDeadlineMs: RECONCILE_DEFAULTS.renewDeadlineMs,
    retryPeriodMs: RECONCILE_DEFAULTS.retryPeriodMs,
    annotations: { [RECONCILER_MODE_ANNOTATION]: mode },
  };
}

function workers(raw: string | undefined): number {
  if (raw === undefined) return RECONCILE_DEFAULTS.workers;
  if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > 64)
    throw new ConfigError(`--workers must be a whole number from 1 to 64, got "${raw}"`);
  return Number(raw);
}
