// The real upstream controllers beside the control plane, out of cluster: JobSet's manager
// (v0.12.0) and Kubeflow Trainer's (v2.3.0). Each gets its own serving certificate and ports
// (both default to 9443 for webhooks and 8081 for probes), no metrics server, no leader
// election, no certificate management of its own, and its webhooks registered through
// `clientConfig.url` + `caBundle` from the upstream manifests kept by hack/build-binaries.sh.
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { stringify } from 'yaml';
import { upstreamDir, type ControllerBinaries } from './binaries.ts';
import { ensureControllerBinaries } from './availability.ts';
import type { ControlPlane } from './controlplane.ts';
import { writeKeyPair } from './pki.ts';
import type { TrackedProcess } from './process.ts';
import { freePorts, httpGet, waitFor } from './wait.ts';
import { loadKustomizedWebhooks, pointWebhooksAt } from './webhooks.ts';

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
  stop(): Promise<void>;
}

/** The upstream CRDs (JobSet v0.12.0, Trainer at SOURCES.md's commit) the controllers need. */
export const upstreamCrds = {
  jobsets: path.join(upstreamDir, 'crds/jobset.x-k8s.io_jobsets.yaml'),
  trainjobs: path.join(upstreamDir, 'crds/trainer.kubeflow.org_trainjobs.yaml'),
  trainingRuntimes: path.join(upstreamDir, 'crds/trainer.kubeflow.org_trainingruntimes.yaml'),
  clusterTrainingRuntimes: path.join(upstreamDir, 'crds/trainer.kubeflow.org_clustertrainingruntimes.yaml'),
};
export const allUpstreamCrds = Object.values(upstreamCrds);

async function register(cp: ControlPlane, manifestsDir: string, port: number, caPem: string, namePrefix: string) {
  const docs = loadKustomizedWebhooks(manifestsDir);
  await cp.applyYaml(pointWebhooksAt(docs, port, caPem, namePrefix));
  const names = (kind: string) => docs.filter((d) => d.kind === kind).map((d) => `${namePrefix}${d.metadata.name}`);
  return { validating: names('ValidatingWebhookConfiguration'), mutating: names('MutatingWebhookConfiguration') };
}

async function finish(cp: ControlPlane, name: string, proc: TrackedProcess, webhookPort: number, probePort: number, manifestsDir: string, caPem: string, namePrefix: string): Promise<UpstreamController> {
  // Ready means certificates loaded and the webhook server listening (both managers gate
  // /readyz on it), so registering the webhooks now cannot make API calls fail.
  await waitFor(`${name} /readyz`, async () => (await httpGet(`http://127.0.0.1:${probePort}/readyz`)).status === 200, { timeoutMs: 60_000, process: proc });
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
      if (validating.length) await cp.kubectl(['delete', 'validatingwebhookconfiguration', '--ignore-not-found', ...validating], { check: false });
      if (mutating.length) await cp.kubectl(['delete', 'mutatingwebhookconfiguration', '--ignore-not-found', ...mutating], { check: false });
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
  const proc = cp.startProcess('jobset-controller-manager', bins.jobset, [`--config=${config}`, '--metrics-bind-address=0', '--leader-elect=false', '--zap-devel=false'], { cwd: dir });
  // Upstream's kustomize default adds the `jobset-` name prefix.
  return finish(cp, 'jobset-controller-manager', proc, webhookPort, probePort, path.join(bins.manifestsDir, 'jobset'), cert.caPem, 'jobset-');
}

export async function startTrainerController(cp: ControlPlane, bins: ControllerBinaries): Promise<UpstreamController> {
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
    }),
  );
  const proc = cp.startProcess('trainer-controller-manager', bins.trainer, [`--config=${config}`], { cwd: dir, env: cp.childEnv({ TMPDIR: tmp }) });
  return finish(cp, 'trainer-controller-manager', proc, webhookPort, probePort, path.join(bins.manifestsDir, 'trainer'), cert.caPem, '');
}

/**
 * Starts JobSet's manager and then (unless `trainer: false`) Trainer's; Trainer applies
 * JobSets, which JobSet's webhooks must then admit. The upstream CRDs must be installed
 * (pass `allUpstreamCrds` to startControlPlane).
 */
export async function startUpstreamControllers(cp: ControlPlane, opts: { trainer?: boolean; binaries?: ControllerBinaries } = {}): Promise<UpstreamControllers> {
  const bins = opts.binaries ?? (await ensureControllerBinaries());
  const jobset = await startJobSetController(cp, bins);
  const trainer = opts.trainer === false ? undefined : await startTrainerController(cp, bins);
  return {
    jobset,
    trainer,
    async stop() {
      await trainer?.stop();
      await jobset.stop();
    },
  };
}
