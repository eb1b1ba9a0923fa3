// Runs the real `trainjob-webhook serve` as its own process beside the control plane and
// registers it with the project's own webhook manifests, pointed at 127.0.0.1 through url+caBundle.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import {
  freePort,
  httpGet,
  pointWebhooksAt,
  projectRoot,
  waitFor,
  type ControlPlane,
  type TrackedProcess,
} from '../../harness/index.ts';

export interface WebhookProcess {
  port: number;
  opsPort: number;
  caPem: string;
  proc: TrackedProcess;
  /** Parsed pino lines of the process's log. */
  logLines(): Record<string, unknown>[];
  /** The value of a Prometheus counter line summed over its label sets. */
  counter(name: string, labelFilter?: RegExp): Promise<number>;
}

export interface WebhookOptions {
  name: string;
  /** Kubeconfig of the identity the webhook reads the cluster with (default: admin). */
  kubeconfig?: string;
  crdFile?: string;
  handoff?: string;
  extraArgs?: string[];
  /** The admission port (default: a free one), for a caller that must know it before the start. */
  port?: number;
  /** The checkout whose `serve` runs (default: this one; an older version's tree in upgrade tests). */
  root?: string;
}

const node = process.execPath;

export async function startWebhook(cp: ControlPlane, opts: WebhookOptions): Promise<WebhookProcess> {
  const [port, opsPort] = [opts.port ?? (await freePort()), await freePort()];
  const cert = await cp.issueServingCert(opts.name);
  const root = opts.root ?? projectRoot;
  const args = [
    path.join(root, 'bin/trainjob-webhook.js'),
    'serve',
    '--host',
    '127.0.0.1',
    '--port',
    String(port),
    '--ops-port',
    String(opsPort),
    '--cert-dir',
    cert.dir,
    '--kubeconfig',
    opts.kubeconfig ?? cp.kubeconfigPath,
  ];
  if (opts.crdFile) args.push('--crd', opts.crdFile);
  if (opts.handoff) args.push('--handoff', opts.handoff);
  args.push(...(opts.extraArgs ?? []));
  const proc = cp.startProcess(opts.name, node, args, { env: cp.childEnv(), cwd: root });
  await waitFor(
    `${opts.name} ready`,
    async () => (await httpGet(`http://127.0.0.1:${opsPort}/readyz`)).status === 200,
    { process: proc, timeoutMs: 30_000 },
  );
  return {
    port,
    opsPort,
    caPem: cert.caPem,
    proc,
    logLines: () =>
      readFileSync(proc.logFile, 'utf8')
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Record<string, unknown>),
    counter: async (name, labelFilter) => {
      const { body } = await httpGet(`http://127.0.0.1:${opsPort}/metrics`);
      return body
        .split('\n')
        .filter((l) => l.startsWith(name) && (!labelFilter || labelFilter.test(l)))
        .reduce((sum, l) => sum + Number(l.split(' ').pop()), 0);
    },
  };
}

/** The project's webhook configurations (manifests/webhook, components/mutating), pointed at this process. */
export function webhookConfigurationsYaml(wh: WebhookProcess, namePrefix = ''): string {
  // The validating configuration (manifests/webhook) and the mutating one (components/mutating).
  const docs = ['manifests/webhook/manifests.yaml', 'manifests/components/mutating/mutating.yaml'].flatMap((f) =>
    parseAllDocuments(readFileSync(path.join(projectRoot, f), 'utf8')).map((d) => d.toJSON() as Record<string, any>),
  );
  return pointWebhooksAt(docs, wh.port, wh.caPem, namePrefix);
}

export async function registerWebhook(cp: ControlPlane, wh: WebhookProcess, namePrefix = ''): Promise<void> {
  await cp.applyYaml(webhookConfigurationsYaml(wh, namePrefix));
}

export async function unregisterWebhook(cp: ControlPlane, namePrefix = ''): Promise<void> {
  await cp.kubectl([
    'delete',
    'validatingwebhookconfiguration,mutatingwebhookconfiguration',
    `${namePrefix}trainjob-webhook-validating`,
    `${namePrefix}trainjob-webhook-mutating`,
    '--ignore-not-found',
  ]);
}
