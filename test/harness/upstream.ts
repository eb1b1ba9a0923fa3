// The real upstream controllers beside the control plane, out of cluster: JobSet's manager
// (v0.12.0), Kubeflow Trainer's (v2.3.0) and, on request, Kueue's (the cell's: v0.17.1, or v0.19.2
// on the newer Kubernetes). Each gets its own serving certificate and ports (all default to 9443
// for webhooks and 8081 for probes), no metrics server, no leader election, no certificate
// management of its own, and its webhooks registered through `clientConfig.url` + `caBundle` from
// the upstream manifests (kept by hack/build-binaries.sh for JobSet and Trainer, vendored in
// upstream/ for Kueue).
import { readFileSync } from 'node:fs';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import {
  currentCell,
  isDefaultCell,
  readVersions,
  upstreamDir,
  type ControllerBinaries,
  type KueueBinaries,
  type TrainerLine,
} from './binaries.ts';
import { ensureControllerBinaries, ensureKueueBinaries, mountNamespaceFlags } from './availability.ts';
import type { ControlPlane } from './controlplane.ts';
import { writeKeyPair } from './pki.ts';
import type { TrackedProcess } from './process.ts';
import { freePorts, httpGet, waitFor } from './wait.ts';
import { loadKustomizedWebhooks, pointWebhooksAt } from './webhooks.ts';

type Obj = Record<string, any>;

export interface UpstreamController {
  process: TrackedProcess;
  webhookPort: number;
  probePort: number;
  /** Names of the webhook configurations registered for it. */
  webhookConfigurations: { validating: string[]; mutating: string[] };
  /** Removes its webhook configurations, then stops the process. */
  stop(): Promise<void>;
}

export interface UpstreamControllers {
  jobset: UpstreamController;
  trainer?: UpstreamController;
  kueue?: UpstreamController;
  stop(): Promise<void>;
}

/** The vendored folder of a Trainer line's CRDs (upstream/SOURCES.md; main's sit at the top of crds/). */
export function trainerCrdsDir(line: TrainerLine): string {
  return path.join(upstreamDir, line === 'main' ? 'crds' : `crds/trainer-${line}`);
}

/** The upstream CRDs a Trainer line's managers need: its own TrainJob and runtime CRDs, its JobSet's. */
export function upstreamCrdsOf(line: TrainerLine) {
  const dir = trainerCrdsDir(line);
  return {
    jobsets: path.join(upstreamDir, line === 'v2.2.1' ? 'crds/jobset-v0.11.1' : 'crds', 'jobset.x-k8s.io_jobsets.yaml'),
    trainjobs: path.join(dir, 'trainer.kubeflow.org_trainjobs.yaml'),
    trainingRuntimes: path.join(dir, 'trainer.kubeflow.org_trainingruntimes.yaml'),
    clusterTrainingRuntimes: path.join(dir, 'trainer.kubeflow.org_clustertrainingruntimes.yaml'),
  };
}

/**
 * The current cell's upstream CRDs. The default cell (Trainer v2.3.0) keeps the main line's CRDs
 * for the admission suites (they add bounds v2.3.0 lacks, which the ratcheting suites need; where
 * Trainer's manager runs, test/reconciler/support/world.ts installs the line's own); the matrix's
 * other cells install their own line's.
 */
export const upstreamCrds = isDefaultCell(currentCell())
  ? upstreamCrdsOf('main')
  : upstreamCrdsOf(currentCell().trainer);
export const allUpstreamCrds = Object.values(upstreamCrds);

/** The cell's Kueue folder in upstream/ (SOURCES.md), named by its version (readVersions). */
export const kueueUpstreamDir = path.join(upstreamDir, `kueue-${readVersions().kueue}`);

/** All of Kueue's CRDs: its manager watches most of its kinds whatever is configured. Pass to startControlPlane. */
export async function kueueCrds(): Promise<string[]> {
  const dir = path.join(kueueUpstreamDir, 'crds');
  return (await readdir(dir))
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .map((f) => path.join(dir, f));
}

/** The identity Kueue's manager runs as (system:masters), so that its writes can be told apart in admission logs. */
export const KUEUE_USER = 'system:serviceaccount:kueue-system:kueue-controller-manager';
/** Kueue's namespace (its Configuration's default `namespace`). */
export const KUEUE_NAMESPACE = 'kueue-system';
/** The only integration the world enables (pkg/controller/jobs/trainjob: FrameworkName). */
export const KUEUE_TRAINJOB_FRAMEWORK = 'trainer.kubeflow.org/trainjob';

/**
 * Kueue's webhook configurations, keeping only the webhooks its manager serves here: those for its
 * own kinds and for TrainJobs. The manifest lists every integration's webhook (pods, Jobs, ...)
 * with failurePolicy Fail; registering those would route every pod create to Kueue.
 */
export function kueueWebhookDocs(manifest = path.join(kueueUpstreamDir, 'webhook/manifests.yaml')): Obj[] {
  const served = (w: Obj) =>
    (w.rules as Obj[]).every((r) =>
      (r.apiGroups as string[]).every((g) => g === 'kueue.x-k8s.io' || g === 'trainer.kubeflow.org'),
    );
  return parseAllDocuments(readFileSync(manifest, 'utf8'))
    .map((d) => d.toJSON() as Obj | null)
    .filter((d): d is Obj => !!d?.kind)
    .map((d) => ({ ...d, webhooks: (d.webhooks as Obj[]).filter(served) }));
}

async function register(
  cp: ControlPlane,
  manifestsDir: string | Obj[],
  port: number,
  caPem: string,
  namePrefix: string,
) {
  const docs = typeof manifestsDir === 'string' ? loadKustomizedWebhooks(manifestsDir) : manifestsDir;
  await cp.applyYaml(pointWebhooksAt(docs, port, caPem, namePrefix));
  const names = (kind: string) => docs.filter((d) => d.kind === kind).map((d) => `${namePrefix}${d.metadata.name}`);
  return { validating: names('ValidatingWebhookConfiguration'), mutating: names('MutatingWebhookConfiguration') };
}

async function finish(
  cp: ControlPlane,
  name: string,
  proc: TrackedProcess,
  webhookPort: number,
  probePort: number,
  manifestsDir: string | Obj[],
  caPem: string,
  namePrefix: string,
): Promise<UpstreamController> {
  // Ready means certificates loaded and the webhook server listening (both managers gate
  // /readyz on it), so registering the webhooks now cannot make API calls fail.
  await waitFor(`${name} /readyz`, async () => (await httpGet(`http://127.0.0.1:${probePort}/readyz`)).status === 200, {
    timeoutMs: 60_000,
    process: proc,
  });
  const webhookConfigurations = await register(cp, manifestsDir, webhookPort, caPem, namePrefix);
  return {
    process: proc,
    webhookPort,
    probePort,
    webhookConfigurations,
    async stop() {
      // With failurePolicy Fail, a webhook left registered after its server is gone would
      // refuse every later request on its kinds (pods included, for JobSet's).
      const { validating, mutating } = webhookConfigurations;
      if (validating.length)
        await cp.kubectl(['delete', 'validatingwebhookconfiguration', '--ignore-not-found', ...validating], {
          check: false,
        });
      if (mutating.length)
        await cp.kubectl(['delete', 'mutatingwebhookconfiguration', '--ignore-not-found', ...mutating], {
          check: false,
        });
      await proc.stop();
    },
  };
}

export async function startJobSetController(cp: ControlPlane, bins: ControllerBinaries): Promise<UpstreamController> {
  const [webhookPort, probePort] = await freePorts(2);
  const cert = await cp.issueServingCert('jobset-webhook');
  const dir = await cp.tempDir('jobset');
  const config = path.join(dir, 'config.yaml');
  await writeFile(
    config,
    stringify({
      apiVersion: 'config.jobset.x-k8s.io/v1alpha1',
      kind: 'Configuration',
      webhook: { port: webhookPort, host: '127.0.0.1', certDir: cert.dir },
      health: { healthProbeBindAddress: `127.0.0.1:${probePort}` },
      metrics: { bindAddress: '0' }, // "0" disables the metrics server (and its cert needs)
      leaderElection: { leaderElect: false },
      internalCertManagement: { enable: false },
    }),
  );
  const proc = cp.startProcess(
    'jobset-controller-manager',
    bins.jobset,
    [`--config=${config}`, '--metrics-bind-address=0', '--leader-elect=false', '--zap-devel=false'],
    { cwd: dir },
  );
  // Upstream's kustomize default adds the `jobset-` name prefix.
  return finish(
    cp,
    'jobset-controller-manager',
    proc,
    webhookPort,
    probePort,
    bins.jobsetManifests,
    cert.caPem,
    'jobset-',
  );
}

/** Trainer's client to the API server (its Configuration's clientConnection; Trainer's defaults: 50/s, burst 100). */
export interface TrainerClientConnection {
  qps: number;
  burst: number;
}

export async function startTrainerController(
  cp: ControlPlane,
  bins: ControllerBinaries,
  clientConnection?: TrainerClientConnection,
): Promise<UpstreamController> {
  const [webhookPort, probePort] = await freePorts(2);
  const dir = await cp.tempDir('trainer');
  // Trainer v2.3.0's config has no webhook cert dir: controller-runtime's default,
  // $TMPDIR/k8s-webhook-server/serving-certs, is reached through the process's TMPDIR.
  const tmp = path.join(dir, 'tmp');
  const cert = await cp.issueServingCert('trainer-webhook');
  await writeKeyPair(path.join(tmp, 'k8s-webhook-server/serving-certs'), cert);
  await mkdir(tmp, { recursive: true });
  const config = path.join(dir, 'config.yaml');
  await writeFile(
    config,
    stringify({
      apiVersion: 'config.trainer.kubeflow.org/v1alpha1',
      kind: 'Configuration',
      webhook: { port: webhookPort, host: '127.0.0.1' },
      health: { healthProbeBindAddress: `127.0.0.1:${probePort}` },
      metrics: { bindAddress: '0', secureServing: false },
      certManagement: { enable: false },
      ...(clientConnection ? { clientConnection } : {}),
    }),
  );
  const proc = cp.startProcess('trainer-controller-manager', bins.trainer, [`--config=${config}`], {
    cwd: dir,
    env: cp.childEnv({ TMPDIR: tmp }),
  });
  return finish(cp, 'trainer-controller-manager', proc, webhookPort, probePort, bins.trainerManifests, cert.caPem, '');
}

// Kueue (v0.17.1 and v0.19.2) reads its metrics certificate from a fixed path whenever its internal certificate
// management is off (cmd/kueue/main.go: metricsCertPath "/etc/kueue/metrics/certs", read at once
// by controller-runtime's certwatcher.New, which fails the start when the files are absent), even
// with the metrics server disabled. Rather than write to the host's /etc, the manager runs in a
// mount namespace of its own where an overlay on /etc adds that one folder (the rest of /etc is
// seen as it is). `unshare` (util-linux) does it; without root it also maps the user to root in a
// user namespace of its own. The namespace, and the overlay with it, end with the process.
const KUEUE_ETC_OVERLAY = `set -e
mount -t tmpfs tmpfs "$TJW_OVERLAY"
mkdir -p "$TJW_OVERLAY/upper/kueue/metrics/certs" "$TJW_OVERLAY/work"
cp "$TJW_METRICS_CERTS/tls.crt" "$TJW_METRICS_CERTS/tls.key" "$TJW_OVERLAY/upper/kueue/metrics/certs/"
mount -t overlay overlay -o "lowerdir=/etc,upperdir=$TJW_OVERLAY/upper,workdir=$TJW_OVERLAY/work" /etc
exec "$@"`;

/**
 * Kueue's manager with only the TrainJob integration, as `KUEUE_USER`. Its CRDs (`kueueCrds()`)
 * must be installed, and Trainer's and JobSet's CRDs (its TrainJob integration owns JobSets).
 */
export async function startKueueController(cp: ControlPlane, bins: KueueBinaries): Promise<UpstreamController> {
  const [webhookPort, probePort] = await freePorts(2);
  const dir = await cp.tempDir('kueue');
  const cert = await cp.issueServingCert('kueue-webhook');
  const overlay = path.join(dir, 'etc-overlay');
  await mkdir(overlay);
  await cp.kubectl(['create', 'namespace', KUEUE_NAMESPACE], { check: false });
  const identity = await cp.makeUserKubeconfig(KUEUE_USER, ['system:masters']);
  const config = path.join(dir, 'config.yaml');
  await writeFile(
    config,
    stringify({
      apiVersion: 'config.kueue.x-k8s.io/v1beta2',
      kind: 'Configuration',
      namespace: KUEUE_NAMESPACE,
      webhook: { port: webhookPort, host: '127.0.0.1', certDir: cert.dir },
      health: { healthProbeBindAddress: `127.0.0.1:${probePort}` },
      metrics: { bindAddress: '0' },
      leaderElection: { leaderElect: false },
      internalCertManagement: { enable: false },
      integrations: { frameworks: [KUEUE_TRAINJOB_FRAMEWORK] },
      // On by default (beta): an aggregated API server of its own on a fixed port, not needed here.
      featureGates: { VisibilityOnDemand: false },
    }),
  );
  const unshare = [
    ...mountNamespaceFlags(),
    '--',
    'sh',
    '-c',
    KUEUE_ETC_OVERLAY,
    'kueue',
    bins.kueue,
    `--config=${config}`,
    '--zap-devel=false',
  ];
  const proc = cp.startProcess('kueue-controller-manager', 'unshare', unshare, {
    cwd: dir,
    env: cp.childEnv({ KUBECONFIG: identity.path, TJW_OVERLAY: overlay, TJW_METRICS_CERTS: cert.dir }),
  });
  return finish(cp, 'kueue-controller-manager', proc, webhookPort, probePort, kueueWebhookDocs(), cert.caPem, 'kueue-');
}

export interface UpstreamControllersOptions {
  /** Trainer's manager (default true). */
  trainer?: boolean;
  /** Kueue's manager, started last (default false). */
  kueue?: boolean;
  binaries?: ControllerBinaries;
  kueueBinaries?: KueueBinaries;
  /** Trainer's client QPS and burst (default: Trainer's own, 50 and 100). */
  trainerClientConnection?: TrainerClientConnection;
}

/**
 * Starts JobSet's manager and (unless `trainer: false`) Trainer's side by side (each waits for its
 * own readiness, then registers its webhooks; no TrainJob exists yet, so Trainer applies no JobSet
 * before JobSet's webhooks are in place), then (with `kueue: true`) Kueue's. The upstream CRDs
 * must be installed (pass `allUpstreamCrds`, and `kueueCrds()` for Kueue, to startControlPlane).
 */
export async function startUpstreamControllers(
  cp: ControlPlane,
  opts: UpstreamControllersOptions = {},
): Promise<UpstreamControllers> {
  const bins = opts.binaries ?? (await ensureControllerBinaries());
  const kueueBins = opts.kueue ? (opts.kueueBinaries ?? (await ensureKueueBinaries())) : undefined;
  const [jobset, trainer] = await Promise.all([
    startJobSetController(cp, bins),
    opts.trainer === false ? undefined : startTrainerController(cp, bins, opts.trainerClientConnection),
  ]);
  const kueue = kueueBins ? await startKueueController(cp, kueueBins) : undefined;
  return {
    jobset,
    trainer,
    kueue,
    async stop() {
      await kueue?.stop();
      await trainer?.stop();
      await jobset.stop();
    },
  };
}
