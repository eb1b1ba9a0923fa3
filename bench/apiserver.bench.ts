// TrainJob UPDATEs through the real API server, one configuration at a time, on one control plane
// (etcd, kube-apiserver; no controllers, nothing else runs): what each enforcer of the rule table
// adds to an allowed UPDATE's latency over no admission at all.
//
//   none     Trainer v2.3.0's CRD without its blanket spec.trainer rule, nothing else
//   webhook  the same CRD, our validating webhook (`serve --kubeconfig`, manifests/webhook)
//   webhook, offline  the same, `serve` without cluster access (the embedded CRD, no JobSet read)
//   VAP      the same CRD, the generated ValidatingAdmissionPolicy (manifests/vap/trainjob-vap.yaml)
//   CRD      the CRD with the generated patch (manifests/crd-patch: blanket rule -> table rules)
//
// Each UPDATE is a JSON merge patch of spec.trainer.numNodes (2 <-> 3) on a suspended TrainJob,
// sent on one keep-alive connection and timed from the client; every configuration is proven in
// force first (a dry-run scale of a running TrainJob must be refused by that enforcer, and pass
// with none). Configurations are interleaved (BENCH_ROUNDS rounds of BENCH_UPDATES/rounds each).
//
//   npm run bench:apiserver     (flock /tmp/tjw-e2e.lock npm run bench:apiserver on a shared machine)
//
// Env: BENCH_UPDATES (per configuration, default 500), BENCH_ROUNDS (default 2), BENCH_OUT=FILE.
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { Agent, request } from 'node:https';
import { cpus, loadavg, totalmem } from 'node:os';
import path from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import {
  controlPlaneAvailability,
  freePort,
  httpGet,
  pointWebhooksAt,
  projectRoot,
  startControlPlane,
  upstreamCrds,
  waitFor,
  type ControlPlane,
} from '../test/harness/index.ts';
import { startWebhook } from '../test/e2e/support/webhook.ts';
import { patchedCrd, upstreamTrainJobCrd, type Obj } from '../test/e2e/support/trainjobs.ts';
import { crdPatchOps } from '../src/rules/generate/crd-patch.ts';
import { ms, ratio, table } from './lib/markdown.ts';
import { median, percentile } from './lib/stats.ts';

const updates = Number(process.env.BENCH_UPDATES ?? 500);
const rounds = Number(process.env.BENCH_ROUNDS ?? 2);
const WARM_UP = 20;
const NS = 'bench';
if (!Number.isInteger(updates) || updates < 1 || !Number.isInteger(rounds) || rounds < 1 || updates % rounds !== 0) {
  throw new Error(
    `BENCH_UPDATES (${process.env.BENCH_UPDATES}) and BENCH_ROUNDS (${process.env.BENCH_ROUNDS}) must be positive integers, the first a multiple of the second`,
  );
}

type Config = 'none' | 'webhook' | 'webhook, offline' | 'VAP' | 'CRD rules';
const CONFIGS: Config[] = ['none', 'webhook', 'webhook, offline', 'VAP', 'CRD rules'];

/** One HTTPS client on one keep-alive connection, with the admin's client certificate. */
async function apiClient(cp: ControlPlane) {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const base: Obj = {};
  await cp.kubeConfig.applyToHTTPSOptions(base);
  const send = (
    method: string,
    urlPath: string,
    body: unknown,
    contentType = 'application/json',
  ): Promise<{ status: number; body: Obj }> =>
    new Promise((resolve, reject) => {
      const url = new URL(cp.server + urlPath);
      const req = request(
        {
          ...base,
          agent,
          method,
          hostname: url.hostname,
          port: url.port,
          path: url.pathname + url.search,
          headers: { 'content-type': contentType, accept: 'application/json' },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString() || '{}') }),
          );
        },
      );
      req.on('error', reject);
      req.end(body === undefined ? undefined : JSON.stringify(body));
    });
  return { send, close: () => agent.destroy() };
}

const trainJobPath = (name?: string, dryRun = false) =>
  `/apis/trainer.kubeflow.org/v1alpha1/namespaces/${NS}/trainjobs${name ? `/${name}` : ''}${dryRun ? '?dryRun=All' : ''}`;

function trainJob(name: string, suspend: boolean): Obj {
  return {
    apiVersion: 'trainer.kubeflow.org/v1alpha1',
    kind: 'TrainJob',
    metadata: { name, namespace: NS },
    spec: {
      runtimeRef: { name: 'torch-distributed' },
      suspend,
      trainer: {
        image: 'docker.io/pytorch/pytorch:2.7.1-cuda12.8-cudnn9-runtime',
        command: ['torchrun'],
        args: ['/workspace/train.py', '--epochs', '3'],
        numNodes: 2,
        numProcPerNode: 4,
        env: [{ name: 'NCCL_DEBUG', value: 'WARN' }],
        resourcesPerNode: { limits: { 'nvidia.com/gpu': '4' } },
      },
    },
  };
}

/** Which enforcer refused a dry-run scale of the running probe, or 'none' when it went through. */
function refusedBy(res: { status: number; body: Obj }): 'none' | 'webhook' | 'VAP' | 'CRD rules' | 'unexpected' {
  if (res.status === 200) return 'none';
  const message = String(res.body.message ?? '');
  if (/admission webhook ".*" denied the request/.test(message)) return 'webhook';
  if (/ValidatingAdmissionPolicy/.test(message)) return 'VAP';
  if (res.status === 422 && /spec\.trainer\.numNodes|spec: /.test(message)) return 'CRD rules';
  return 'unexpected';
}

/** `serve` with no cluster access: the embedded default CRD, no JobSet read behind the warning. */
async function startOfflineWebhook(cp: ControlPlane): Promise<{ port: number; caPem: string }> {
  const [port, opsPort] = [await freePort(), await freePort()];
  const cert = await cp.issueServingCert('webhook-offline');
  const args = [
    path.join(projectRoot, 'bin/trainjob-webhook.js'),
    'serve',
    '--host',
    '127.0.0.1',
    '--port',
    String(port),
    '--ops-port',
    String(opsPort),
    '--cert-dir',
    cert.dir,
  ];
  const proc = cp.startProcess('webhook-offline', process.execPath, args, { env: cp.childEnv(), cwd: projectRoot });
  await waitFor(
    'webhook-offline ready',
    async () => (await httpGet(`http://127.0.0.1:${opsPort}/readyz`)).status === 200,
    { process: proc, timeoutMs: 30_000 },
  );
  return { port, caPem: cert.caPem };
}

// eslint-disable-next-line max-lines-per-function -- the benchmark's script: set-up, measured rounds, report
async function main() {
  const avail = controlPlaneAvailability();
  if (!avail.available) throw new Error(`no control plane: ${avail.reason}`);
  const started = new Date();
  const load = [loadavg()[0]];
  const upstream = upstreamTrainJobCrd('v2.3.0');
  const ops = crdPatchOps(upstream.spec.versions[0].schema.openAPIV3Schema) as Obj[];
  const crds: Record<'without' | 'generated', Obj> = {
    without: patchedCrd(
      upstream,
      ops.filter((op) => op.op !== 'add'),
    ),
    generated: patchedCrd(upstream, ops),
  };
  const cp = await startControlPlane({
    crds: [upstreamCrds.jobsets, upstreamCrds.trainjobs],
    controllerManager: false,
    world: false,
  });
  const client = await apiClient(cp);
  try {
    const crdFiles: Record<string, string> = {};
    const dir = await cp.tempDir('bench');
    for (const [k, crd] of Object.entries(crds)) {
      crdFiles[k] = path.join(dir, `${k}.yaml`);
      await writeFile(crdFiles[k], stringify(crd));
    }
    await cp.installCRDs([crdFiles.without]);
    await cp.kubectl(['create', 'namespace', NS]);
    for (const [name, suspend] of [
      ['scaled', true],
      ['probe', false],
    ] as const) {
      const res = await client.send('POST', trainJobPath(), trainJob(name, suspend));
      if (res.status !== 201) throw new Error(`creating ${name}: HTTP ${res.status} ${JSON.stringify(res.body)}`);
    }

    const wh = await startWebhook(cp, { name: 'webhook' });
    const validating = parseAllDocuments(
      readFileSync(path.join(projectRoot, 'manifests/webhook/manifests.yaml'), 'utf8'),
    ).map((d) => d.toJSON() as Obj);
    const webhookYaml = pointWebhooksAt(validating, wh.port, wh.caPem);
    const offline = await startOfflineWebhook(cp);
    const offlineYaml = pointWebhooksAt(validating, offline.port, offline.caPem);
    const vapFile = path.join(projectRoot, 'manifests/vap/trainjob-vap.yaml');

    let probeNodes = 2;
    const inForce = async (config: Config) => {
      await waitFor(
        `${config} in force`,
        async () => {
          probeNodes = probeNodes === 2 ? 3 : 2;
          const got = refusedBy(
            await client.send(
              'PATCH',
              trainJobPath('probe', true),
              { spec: { trainer: { numNodes: probeNodes } } },
              'application/merge-patch+json',
            ),
          );
          // Which webhook process answered: the one registered (its configuration names its port).
          const registered = (
            await cp.kubectl([
              'get',
              'validatingwebhookconfiguration',
              '-o',
              'jsonpath={.items[*].webhooks[*].clientConfig.url}',
            ])
          ).stdout;
          const port = config === 'webhook' ? wh.port : config === 'webhook, offline' ? offline.port : undefined;
          const expected = port ? 'webhook' : config;
          return got === expected && (!port || registered.includes(`:${port}/`)) ? true : undefined;
        },
        { timeoutMs: 60_000 },
      );
    };
    const switchTo = async (config: Config) => {
      await cp.kubectl([
        'delete',
        'validatingwebhookconfiguration',
        'trainjob-webhook-validating',
        '--ignore-not-found',
      ]);
      await cp.kubectl(['delete', '-f', vapFile, '--ignore-not-found']);
      await cp.installCRDs([config === 'CRD rules' ? crdFiles.generated : crdFiles.without]);
      if (config === 'webhook') await cp.applyYaml(webhookYaml);
      if (config === 'webhook, offline') await cp.applyYaml(offlineYaml);
      if (config === 'VAP') await cp.applyYaml(vapFile);
      await inForce(config);
    };

    let numNodes = 2;
    const scale = async (): Promise<number> => {
      numNodes = numNodes === 2 ? 3 : 2;
      const t0 = process.hrtime.bigint();
      const res = await client.send(
        'PATCH',
        trainJobPath('scaled'),
        { spec: { trainer: { numNodes } } },
        'application/merge-patch+json',
      );
      const elapsed = Number(process.hrtime.bigint() - t0) / 1e6;
      if (res.status !== 200) throw new Error(`UPDATE refused: HTTP ${res.status} ${JSON.stringify(res.body)}`);
      return elapsed;
    };
    const samples = new Map<Config, number[]>(CONFIGS.map((c) => [c, []]));
    for (let round = 1; round <= rounds; round++) {
      for (const config of CONFIGS) {
        await switchTo(config);
        for (let i = 0; i < WARM_UP; i++) await scale();
        for (let i = 0; i < updates / rounds; i++) samples.get(config)!.push(await scale());
        process.stderr.write(
          `round ${round}/${rounds} ${config}: median ${ms(median(samples.get(config)!))} ms so far\n`,
        );
      }
    }
    load.push(loadavg()[0]);
    const base = samples.get('none')!;
    const rows = CONFIGS.map((c) => {
      const s = samples.get(c)!;
      return [
        c,
        String(s.length),
        ms(median(s)),
        `${(median(s) - median(base)).toFixed(3)}`,
        ratio(median(s), median(base)),
        ms(percentile(s, 99)),
        ratio(percentile(s, 99), percentile(base, 99)),
      ];
    });
    const added = median(samples.get('webhook')!) - median(base);
    const report = [
      '## TrainJob UPDATEs through the real API server (`npm run bench:apiserver`)',
      '',
      `- date: ${started.toISOString()}; ${cpus().length} cores (${cpus()[0]?.model}), ${(totalmem() / 2 ** 30).toFixed(1)} GiB; load average ${load[0].toFixed(2)} at the start, ${load[1].toFixed(2)} at the end; nothing pinned (the API server, etcd and the webhook share both cores)`,
      `- kube-apiserver and etcd as in the e2e harness (no controllers); Trainer v2.3.0's TrainJob CRD; ${updates} UPDATEs per configuration in ${rounds} interleaved rounds (${WARM_UP} unmeasured after each switch), each a merge patch of spec.trainer.numNodes (2 <-> 3) on a suspended TrainJob, one keep-alive connection, timed at the client`,
      "- webhook: `trainjob-webhook serve --kubeconfig` (the CRD read from the API server; an admitted numNodes change also LISTs the JobSet's Jobs for the rebuild warning); webhook, offline: `serve` with no cluster access (the embedded CRD, no read). Only the validating configuration registered; every configuration proven in force (by the right process) before it is measured",
      '',
      table(['configuration', 'UPDATEs', 'median ms', '+ms over none', 'ratio', 'p99 ms', 'ratio'], rows),
      '',
      `Issue 10's bound, the webhook adds <= 2 ms median to an allowed UPDATE over no admission: ${added.toFixed(3)} ms in this run (${added <= 2 ? 'met' : 'NOT met'}).`,
      '',
    ].join('\n');
    process.stdout.write(report);
    if (process.env.BENCH_OUT) await writeFile(process.env.BENCH_OUT, report);
  } finally {
    client.close();
    await cp.stop();
  }
}

await main();
