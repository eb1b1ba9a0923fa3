// `serve` flags, parsed once into a config object. This is the only place that reads the
// environment: everything below receives what it needs from the ServeConfig.
import {
  ConfigError,
  nonEmptyFlag as nonEmpty,
  oneOfFlag,
  parseFlags,
  portFlag as parsePort,
} from '../process/flags.ts';
import type { ClusterAccess } from '../cluster/kube-access.ts';
import { LOG_LEVELS, type LogLevel } from '../observability/log-levels.ts';
import { RECONCILER_LEASE_NAME } from '../api/names.ts';
import { readCaBundleSync } from '../certs/client-ca.ts';

/** Where the serving certificate comes from. */
export type TlsSource =
  /** `--cert-dir` not given: a self-signed pair generated into `dir` on first start, reused after. */
  | { mode: 'generated'; dir: string }
  /** `--cert-dir DIR`: `tls.crt`/`tls.key` read from DIR (e.g. a mounted Secret) and reloaded on change. */
  | { mode: 'files'; dir: string };

/**
 * Which TrainJob CRD's schema and rules are checked beside the table:
 * a file (`--crd`), the API server's (with cluster access, followed), the embedded default
 * (offline: Trainer v2.3.0's CRD with this project's patch), or none (`--table-only`).
 */
export type CrdSource =
  { mode: 'file'; path: string } | { mode: 'cluster' } | { mode: 'embedded' } | { mode: 'table-only' };

export interface HandoffConfig {
  url: URL;
  timeoutMs: number;
}

/** In-process certificate rotation (`--cert-rotation`): see src/certs/. */
export interface CertRotationConfig {
  namespace: string;
  secretName: string;
  /** The serving certificate's names: `<service>.<namespace>.svc` first, then --service-dns. */
  hosts: string[];
  validatingWebhookConfig: string;
  mutatingWebhookConfig: string;
}

/**
 * The reconciler whose leadership a numNodes change needs (item: "admit a change only when it
 * will be carried out"): its leader-election Lease. Absent with --no-reconciler-check.
 */
export interface ReconcilerLeaseRef {
  namespace: string;
  name: string;
  /**
   * --watch-reconciler-lease: follow the Lease with a watch and GET it only while none runs
   * (lease-watch.ts); needs `watch` on it besides `get`.
   */
  watch?: true;
}

/**
 * --client-ca: only a caller whose client certificate this CA bundle signed completes a TLS
 * handshake on the admission port (the API server, given that certificate through its
 * AdmissionConfiguration's kubeConfigFile). Such a caller counts as authenticated.
 */
export interface ClientAuthConfig {
  caFile: string;
  /** The bundle as read and checked at start-up; the file is re-read while serving. */
  ca: Buffer;
  /** --client-name: the certificate's CN or one of its DNS names must be one of these. */
  names?: string[];
}

export interface ServeConfig {
  /** Both ports' address; undefined: every address, dual-stack where the host has IPv6 (src/process/listen.ts). */
  host?: string;
  port: number;
  opsPort: number;
  /** --ops-port given: a busy port is then an error; the default port, when busy, is skipped with a warning. */
  opsPortExplicit?: boolean;
  tls: TlsSource;
  /** Set with --client-ca: the admission port requires a client certificate. */
  clientAuth?: ClientAuthConfig;
  crd: CrdSource;
  cluster: ClusterAccess;
  handoff?: HandoffConfig;
  /** Whose Lease must be fresh for a numNodes change to be admitted; undefined: not required. */
  reconcilerLease?: ReconcilerLeaseRef;
  /**
   * --watch-runtimes (with cluster access): the ClusterTrainingRuntimes a numNodes change reads
   * come from a list+watch cache while it is current (runtime-watch.ts); needs `list`, `watch` on them.
   */
  watchRuntimes?: true;
  /** Set with --cert-rotation: the certificate files in tls.dir are written from the Secret. */
  certRotation?: CertRotationConfig;
  logLevel: LogLevel;
  /** How long SIGTERM waits for in-flight requests before the process exits anyway. */
  shutdownTimeoutMs: number;
}

export const SERVE_DEFAULTS = {
  port: 9443,
  opsPort: 8081,
  generatedCertDir: 'certs',
  logLevel: 'info' as LogLevel,
  handoffTimeoutMs: 2_000,
  // Below the kubelet's default terminationGracePeriodSeconds (30 s).
  shutdownTimeoutMs: 25_000,
  certSecret: 'trainjob-webhook-cert',
  serviceName: 'trainjob-webhook',
  validatingWebhookConfig: 'trainjob-webhook-validating',
  mutatingWebhookConfig: 'trainjob-webhook-mutating',
};

export const SERVE_USAGE = `Usage: trainjob-webhook serve [flags]

  --port N            HTTPS admission port (default ${SERVE_DEFAULTS.port})
  --ops-port N        plain-HTTP port for /healthz, /readyz, /metrics (default ${SERVE_DEFAULTS.opsPort})
  --host ADDR         address to bind both ports to (default: every address, IPv6 and IPv4
                      (::, dual-stack), or every IPv4 address (0.0.0.0) on a host without IPv6)
  --cert-dir DIR      read tls.crt/tls.key from DIR and reload them on change
                      (default: a self-signed certificate generated into ./${SERVE_DEFAULTS.generatedCertDir}/)
  --client-ca FILE    require a client certificate signed by a CA in FILE (PEM) on the admission
                      port: only the API server, given that certificate in its
                      AdmissionConfiguration, completes a handshake (off by default; see
                      docs/security.md); FILE is re-read every 10 s
  --client-name LIST  with --client-ca, the client certificate's CN or one of its DNS names must
                      be in LIST (comma-separated)
  --crd FILE          TrainJob CRD (YAML or JSON) whose schema and rules are checked
                      (default: the embedded Trainer v2.3.0 CRD with this project's CRD
                      patch; with cluster access, the API server's, followed, and only the
                      rule table is checked: the API server checks the rest first)
  --table-only        check the rule table alone: no CRD schema, defaults or CRD rules
  --kubeconfig FILE   read the cluster with this kubeconfig (never picked up implicitly)
  --offline           do not read the cluster even when running in a pod
  --cert-rotation     keep a CA and serving certificate in a Secret, renew them before they
                      expire, write them into --cert-dir and inject the CA into the webhook
                      configurations' caBundle (like cert-controller); needs cluster access
  --cert-secret NAME  the Secret for --cert-rotation (default ${SERVE_DEFAULTS.certSecret})
  --cert-namespace NS its namespace and the Service's (default: $POD_NAMESPACE)
  --service-name NAME the Service in front of the webhook: the certificate names
                      NAME.NS.svc (default ${SERVE_DEFAULTS.serviceName})
  --service-dns LIST  more DNS names or IP addresses for the certificate, comma-separated
  --validating-webhook-config NAME, --mutating-webhook-config NAME
                      the configurations whose caBundle is kept current (defaults
                      ${SERVE_DEFAULTS.validatingWebhookConfig}, ${SERVE_DEFAULTS.mutatingWebhookConfig};
                      one that does not exist is skipped until it does)
  --handoff URL       POST a hint for each admitted, non-dry-run CREATE/UPDATE to URL (off by default)
  --reconciler-lease NS/NAME
                      with cluster access, a numNodes change that needs a rebuild is admitted only
                      while this Lease is held and fresh (a reconciler leads), else refused for now
                      (503, clears by itself) (default: $POD_NAMESPACE, else default, /${RECONCILER_LEASE_NAME})
  --watch-reconciler-lease
                      follow that Lease with a watch (needs \`watch\` on it as well as \`get\`) instead of
                      a GET per numNodes change; while no watch runs, or it brought nothing for 10 s,
                      the change GETs it as without this flag
  --watch-runtimes    keep ClusterTrainingRuntimes in a list+watch cache (needs \`list\` and \`watch\` on
                      them as well as \`get\`) instead of a GET of the runtime per numNodes change;
                      a runtime the cache does not hold, any namespaced TrainingRuntime, and every
                      runtime while the cache is not current (no watch heard from for 2 min) are read
  --no-reconciler-check
                      admit such changes without checking that a reconciler leads (needed when the
                      reconciler runs without leader election: it holds no Lease)
  --log-level LEVEL   ${LOG_LEVELS.join(', ')} (default ${SERVE_DEFAULTS.logLevel})

In a pod (KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT set) the in-cluster service
account is used unless --kubeconfig or --offline is given.`;

export { ConfigError };

/** Every flag of `serve`, each one in SERVE_USAGE (a test keeps them equal). */
export const SERVE_FLAGS = {
  port: { type: 'string' },
  'ops-port': { type: 'string' },
  host: { type: 'string' },
  'cert-dir': { type: 'string' },
  'client-ca': { type: 'string' },
  'client-name': { type: 'string' },
  crd: { type: 'string' },
  'table-only': { type: 'boolean' },
  kubeconfig: { type: 'string' },
  offline: { type: 'boolean' },
  handoff: { type: 'string' },
  'reconciler-lease': { type: 'string' },
  'no-reconciler-check': { type: 'boolean' },
  'watch-reconciler-lease': { type: 'boolean' },
  'watch-runtimes': { type: 'boolean' },
  'log-level': { type: 'string' },
  'cert-rotation': { type: 'boolean' },
  'cert-secret': { type: 'string' },
  'cert-namespace': { type: 'string' },
  'service-name': { type: 'string' },
  'service-dns': { type: 'string' },
  'validating-webhook-config': { type: 'string' },
  'mutating-webhook-config': { type: 'string' },
} as const;

type Env = Readonly<Record<string, string | undefined>>;

export function parseServeArgs(args: readonly string[], env: Env = process.env): ServeConfig {
  const values = parseFlags(args, SERVE_FLAGS);

  const port = parsePort('--port', values.port, SERVE_DEFAULTS.port);
  const opsPort = parsePort('--ops-port', values['ops-port'], SERVE_DEFAULTS.opsPort);
  if (port !== 0 && port === opsPort) {
    throw new ConfigError(
      `--port and --ops-port must differ (both ${port}): health and metrics never share the admission port`,
    );
  }
  const host = nonEmpty('--host', values.host);
  const certDir = nonEmpty('--cert-dir', values['cert-dir']);
  const kubeconfig = nonEmpty('--kubeconfig', values.kubeconfig);
  if (kubeconfig && values.offline) throw new ConfigError('--kubeconfig and --offline contradict each other');
  const crdFile = nonEmpty('--crd', values.crd);
  if (crdFile && values['table-only']) throw new ConfigError('--crd and --table-only contradict each other');
  const cluster = clusterAccess(kubeconfig, values.offline === true, env);
  const certRotation = parseCertRotation(values, cluster, env);

  return {
    ...(host === undefined ? {} : { host }),
    port,
    opsPort,
    opsPortExplicit: values['ops-port'] !== undefined,
    tls:
      certDir || certRotation
        ? { mode: 'files', dir: certDir ?? SERVE_DEFAULTS.generatedCertDir }
        : { mode: 'generated', dir: SERVE_DEFAULTS.generatedCertDir },
    ...clientAuth(values['client-ca'], values['client-name']),
    crd: crdSource(crdFile, values['table-only'] === true, cluster),
    cluster,
    handoff:
      values.handoff === undefined
        ? undefined
        : { url: parseHandoffUrl(values.handoff), timeoutMs: SERVE_DEFAULTS.handoffTimeoutMs },
    ...reconcilerLease(values, cluster, env),
    ...runtimesWatched(values['watch-runtimes'], cluster),
    ...(certRotation ? { certRotation } : {}),
    logLevel: parseLogLevel(values['log-level']),
    shutdownTimeoutMs: SERVE_DEFAULTS.shutdownTimeoutMs,
  };
}

function clientAuth(rawFile: string | undefined, rawNames: string | undefined): { clientAuth?: ClientAuthConfig } {
  const caFile = nonEmpty('--client-ca', rawFile);
  const namesFlag = nonEmpty('--client-name', rawNames);
  if (!caFile) {
    if (namesFlag) throw new ConfigError('--client-name needs --client-ca');
    return {};
  }
  let ca: Buffer;
  try {
    ca = readCaBundleSync(caFile);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    const why = e.code === 'ENOENT' ? 'no such file' : e.code === 'EACCES' ? 'permission denied' : e.message;
    throw new ConfigError(
      `--client-ca ${caFile}: ${why}; give the PEM bundle of the CA that signed the API server's client certificate`,
    );
  }
  const names = (namesFlag ?? '')
    .split(',')
    .map((n) => n.trim())
    .filter((n) => n !== '');
  if (namesFlag !== undefined && names.length === 0) throw new ConfigError('--client-name needs at least one name');
  return { clientAuth: { caFile, ca, ...(names.length > 0 ? { names } : {}) } };
}

function crdSource(file: string | undefined, tableOnly: boolean, cluster: ClusterAccess): CrdSource {
  if (file) return { mode: 'file', path: file };
  if (tableOnly) return { mode: 'table-only' };
  return cluster.mode === 'none' ? { mode: 'embedded' } : { mode: 'cluster' };
}

function clusterAccess(kubeconfig: string | undefined, offline: boolean, env: Env): ClusterAccess {
  if (kubeconfig) return { mode: 'kubeconfig', path: kubeconfig };
  if (offline) return { mode: 'none' };
  if (env.KUBERNETES_SERVICE_HOST && env.KUBERNETES_SERVICE_PORT)
    return { mode: 'in-cluster', host: env.KUBERNETES_SERVICE_HOST, port: env.KUBERNETES_SERVICE_PORT };
  return { mode: 'none' };
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

function reconcilerLease(
  values: { 'reconciler-lease'?: string; 'no-reconciler-check'?: boolean; 'watch-reconciler-lease'?: boolean },
  cluster: ClusterAccess,
  env: Env,
): { reconcilerLease?: ReconcilerLeaseRef } {
  const raw = nonEmpty('--reconciler-lease', values['reconciler-lease']);
  if (values['no-reconciler-check']) {
    if (raw) throw new ConfigError('--reconciler-lease and --no-reconciler-check contradict each other');
    if (values['watch-reconciler-lease'])
      throw new ConfigError('--watch-reconciler-lease and --no-reconciler-check contradict each other');
    return {};
  }
  if (cluster.mode === 'none') return {};
  const watch = values['watch-reconciler-lease'] ? { watch: true as const } : {};
  if (!raw)
    return {
      reconcilerLease: { namespace: env.POD_NAMESPACE?.trim() || 'default', name: RECONCILER_LEASE_NAME, ...watch },
    };
  const [namespace, name, ...rest] = raw.split('/');
  if (rest.length > 0 || !DNS_LABEL.test(namespace ?? '') || !DNS_SUBDOMAIN.test(name ?? ''))
    throw new ConfigError(
      `--reconciler-lease must be NAMESPACE/NAME, such as kubeflow-system/${RECONCILER_LEASE_NAME}, got "${raw}"`,
    );
  return { reconcilerLease: { namespace, name, ...watch } };
}

function runtimesWatched(flag: boolean | undefined, cluster: ClusterAccess): { watchRuntimes?: true } {
  return flag && cluster.mode !== 'none' ? { watchRuntimes: true } : {};
}

function parseHandoffUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`--handoff must be an http(s) URL such as http://127.0.0.1:8082/hints, got "${raw}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ConfigError(`--handoff must be an http(s) URL, got protocol "${url.protocol}"`);
  }
  return url;
}

function parseLogLevel(raw: string | undefined): LogLevel {
  return oneOfFlag('--log-level', raw, LOG_LEVELS, SERVE_DEFAULTS.logLevel);
}

const ROTATION_ONLY = [
  'cert-secret',
  'cert-namespace',
  'service-name',
  'service-dns',
  'validating-webhook-config',
  'mutating-webhook-config',
] as const;
const DNS_NAME = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$/;
const IP_ADDRESS = /^(\d{1,3}(\.\d{1,3}){3}|[0-9a-f:]*:[0-9a-f:.]*)$/i;

// eslint-disable-next-line complexity -- each --cert-rotation flag checked and defaulted where the config is built
function parseCertRotation(
  values: Record<string, string | boolean | undefined>,
  cluster: ClusterAccess,
  env: Env,
): CertRotationConfig | undefined {
  if (values['cert-rotation'] !== true) {
    const stray = ROTATION_ONLY.find((f) => values[f] !== undefined);
    if (stray) throw new ConfigError(`--${stray} needs --cert-rotation`);
    return undefined;
  }
  if (cluster.mode === 'none')
    throw new ConfigError(
      '--cert-rotation needs cluster access (in a pod, or --kubeconfig): the certificates live in a Secret',
    );
  const flag = (name: (typeof ROTATION_ONLY)[number]) => nonEmpty(`--${name}`, values[name] as string | undefined);
  const namespace = flag('cert-namespace') ?? (env.POD_NAMESPACE?.trim() || undefined);
  if (!namespace)
    throw new ConfigError('--cert-rotation needs the namespace: --cert-namespace or $POD_NAMESPACE (the downward API)');
  const serviceName = flag('service-name') ?? SERVE_DEFAULTS.serviceName;
  const extra = (flag('service-dns') ?? '')
    .split(',')
    .map((h) => h.trim().toLowerCase())
    .filter((h) => h !== '');
  for (const h of extra) {
    if (!DNS_NAME.test(h) && !IP_ADDRESS.test(h))
      throw new ConfigError(`--service-dns: "${h}" is neither a DNS name nor an IP address`);
  }
  const hosts = [`${serviceName}.${namespace}.svc`, ...extra];
  return {
    namespace,
    secretName: flag('cert-secret') ?? SERVE_DEFAULTS.certSecret,
    hosts: [...new Set(hosts)],
    validatingWebhookConfig: flag('validating-webhook-config') ?? SERVE_DEFAULTS.validatingWebhookConfig,
    mutatingWebhookConfig: flag('mutating-webhook-config') ?? SERVE_DEFAULTS.mutatingWebhookConfig,
  };
}
