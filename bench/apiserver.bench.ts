// TrainJob UPDATEs through the real API server, one configuration at a time, on one control plane
// (etcd, kube-apiserver; no controllers, nothing else runs): what each enforcer of the rule table
// adds to an allowed UPDATE's latency over no admission at all.
//
//   none     Trainer v2.3.0's CRD without its blanket spec.trainer rule, nothing else
//   webhook  the same CRD, our validating webhook (`serve --kubeconfig`, manifests/webhook): the
//            rule table alone, the API server having checked the whole object against that CRD
//   webhook, offline  the same, `serve` without cluster access (the embedded CRD, no cluster read):
//            the whole object checked against the embedded CRD, then the table (the path `serve
//            --kubeconfig` took too before it left the whole object to the API server)
//   Go peer  the same CRD, bench/go-peer (controller-runtime, the same table on Trainer's typed API)
//            registered as the validating webhook in our configuration's place
//   VAP      the same CRD, the generated ValidatingAdmissionPolicy (manifests/vap/trainjob-vap.yaml)
//   CRD      the CRD with the generated patch (manifests/crd-patch: blanket rule -> table rules)
//
// Two UPDATEs, each a JSON merge patch on a suspended TrainJob sent on one keep-alive connection and
// timed from the client: a change of spec.runtimePatches (a `time`; the webhook is called only when
// spec changes, and the rules allow this one without a judgment, so no cluster read)
// and a count change, spec.trainer.numNodes 1 <-> 2, which `serve --kubeconfig` judges against
// the cluster (scale-check.ts: the JobSet, the runtime, the reconciler's Lease, the Jobs). The
// cluster holds what it reads as in a real one (bench/lib/apiserver-world.ts): the runtime, the
// JobSet Trainer built (owned by the TrainJob), two Jobs and a Lease renewed every 2 s, so 1 -> 2
// is a rebuild the leader carries out and 2 -> 1 a return to the count the JobSet was built with.
// Every configuration is proven in force first (a dry-run scale of a running TrainJob must be
// refused by that enforcer, and pass with none). Configurations are interleaved (BENCH_ROUNDS
// rounds of BENCH_UPDATES/rounds each, a block of each UPDATE); for our webhooks and the Go peer
// the API server's webhook call is broken down in µs from /metrics scraped around each block.
//
//   npm run bench:apiserver     (flock /tmp/tjw-e2e.lock npm run bench:apiserver on a shared machine)
//
// Env: BENCH_UPDATES (per configuration and UPDATE, default 500), BENCH_ROUNDS (default 2),
// BENCH_CONFIGS (a comma-separated subset), BENCH_NO_PEER=1 (leave the Go peer out), BENCH_OUT=FILE.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
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
import { adminClient } from './lib/admin-client.ts';
import { buildJudgedWorld, LEASE_NAME, SCALED, scaledTrainJob } from './lib/apiserver-world.ts';
import { ms, ratio, table } from './lib/markdown.ts';
import { breakdown, type Scrape } from './lib/stages.ts';
import { ADMISSION_STAGES } from '../src/observability/admission-stages.ts';
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

type Config = 'none' | 'webhook' | 'webhook, offline' | 'Go peer' | 'VAP' | 'CRD rules';
const ALL_CONFIGS: Config[] = ['none', 'webhook', 'webhook, offline', 'Go peer', 'VAP', 'CRD rules'];
type Update = 'patches' | 'numNodes';
const UPDATES: Update[] = ['patches', 'numNodes'];
const UPDATE_TEXT: Record<Update, string> = {
  patches: 'spec.runtimePatches change (no cluster read)',
  numNodes: 'numNodes 1 <-> 2 (judged against the cluster)',
};

function configsToRun(peer: boolean): Config[] {
  const wanted = process.env.BENCH_CONFIGS?.split(',').map((c) => c.trim());
  const configs = ALL_CONFIGS.filter((c) => (!wanted || wanted.includes(c)) && (peer || c !== 'Go peer'));
  if (!configs.includes('none')) throw new Error(`BENCH_CONFIGS must include none (the baseline), got ${wanted}`);
  return configs;
}

const trainJobPath = (name?: string, dryRun = false) =>
  `/apis/trainer.kubeflow.org/v1alpha1/namespaces/${NS}/trainjobs${name ? `/${name}` : ''}${dryRun ? '?dryRun=All' : ''}`;

/** The running TrainJob whose dry-run scale proves which enforcer is in force. */
function probeTrainJob(): Obj {
  return {
    apiVersion: 'trainer.kubeflow.org/v1alpha1',
    kind: 'TrainJob',
    metadata: { name: 'probe', namespace: NS },
    spec: {
      runtimeRef: { name: 'torch-distributed' },
      suspend: false,
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

/** `serve` with no cluster access: the embedded default CRD, no cluster read behind a count change. */
async function startOfflineWebhook(cp: ControlPlane): Promise<{ port: number; opsPort: number; caPem: string }> {
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
  return { port, opsPort, caPem: cert.caPem };
}

/** The Go peer's binary (hack/build-bench-peer.sh builds it, or finds it cached); undefined without Go. */
function goPeerBinary(): string | undefined {
  if (process.env.BENCH_NO_PEER === '1') return undefined;
  try {
    const out = execFileSync(path.join(projectRoot, 'hack/build-bench-peer.sh'), {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    return out.trim().split('\n').pop();
  } catch (err) {
    if ((err as { status?: number }).status === 3) return undefined;
    throw err;
  }
}

async function startGoPeer(cp: ControlPlane, bin: string): Promise<{ port: number; caPem: string }> {
  const port = await freePort();
  const cert = await cp.issueServingCert('go-peer');
  const args = ['--port', String(port), '--cert', cert.certFile, '--key', cert.keyFile];
  const proc = cp.startProcess('go-peer', bin, args, { env: cp.childEnv() });
  await waitFor(
    'go-peer listening',
    () =>
      new Promise<boolean>((resolve) => {
        const s = connect(port, '127.0.0.1');
        s.once('connect', () => resolve(!!s.destroy()));
        s.once('error', () => resolve(false));
      }),
    { process: proc, timeoutMs: 30_000 },
  );
  return { port, caPem: cert.caPem };
}

/** The breakdown's columns: the API server's call, what lies outside the webhook, then its stages. */
const BREAKDOWN_COLUMNS = ['call', 'outside', ...ADMISSION_STAGES] as const;
const BREAKDOWN_HEADERS: Partial<Record<(typeof BREAKDOWN_COLUMNS)[number], string>> = {
  'read-jobset': 'JobSet',
  'read-runtime': 'runtime',
  'read-lease': 'Lease GET',
  'read-jobs': 'Jobs',
};

const µs = (v: number | undefined) => (v === undefined ? '' : v.toFixed(0));

// eslint-disable-next-line max-lines-per-function, complexity -- the script: set-up, measured rounds, report
async function main() {
  const avail = controlPlaneAvailability();
  if (!avail.available) throw new Error(`no control plane: ${avail.reason}`);
  const peerBin = goPeerBinary();
  const CONFIGS = configsToRun(peerBin !== undefined);
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
    crds: [upstreamCrds.jobsets, upstreamCrds.trainjobs, upstreamCrds.clusterTrainingRuntimes],
    controllerManager: false,
    world: false,
  });
  const client = await adminClient(cp);
  // The Lease's renewals go on a connection of their own, off the timed one.
  const renewer = await adminClient(cp);
  let stopRenewing = () => {};
  try {
    const crdFiles: Record<string, string> = {};
    const dir = await cp.tempDir('bench');
    for (const [k, crd] of Object.entries(crds)) {
      crdFiles[k] = path.join(dir, `${k}.yaml`);
      await writeFile(crdFiles[k], stringify(crd));
    }
    await cp.installCRDs([crdFiles.without]);
    await cp.kubectl(['create', 'namespace', NS]);
    const created: Obj[] = [];
    for (const object of [scaledTrainJob(NS), probeTrainJob()]) {
      const res = await client.send('POST', trainJobPath(), object);
      if (res.status !== 201)
        throw new Error(`creating ${object.metadata.name}: HTTP ${res.status} ${JSON.stringify(res.body)}`);
      created.push(res.body);
    }
    stopRenewing = await buildJudgedWorld(renewer.send, NS, created[0]);

    const wh = await startWebhook(cp, {
      name: 'webhook',
      extraArgs: ['--reconciler-lease', `${NS}/${LEASE_NAME}`, '--watch-reconciler-lease', '--watch-runtimes'],
    });
    const validating = parseAllDocuments(
      readFileSync(path.join(projectRoot, 'manifests/webhook/manifests.yaml'), 'utf8'),
    ).map((d) => d.toJSON() as Obj);
    const offline = await startOfflineWebhook(cp);
    const peer = peerBin ? await startGoPeer(cp, peerBin) : undefined;
    const served: Partial<Record<Config, { port: number; caPem: string; opsPort?: number }>> = {
      webhook: wh,
      'webhook, offline': offline,
      ...(peer ? { 'Go peer': peer } : {}),
    };
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
          const port = served[config]?.port;
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
      const target = served[config];
      if (target) await cp.applyYaml(pointWebhooksAt(validating, target.port, target.caPem));
      if (config === 'VAP') await cp.applyYaml(vapFile);
      await inForce(config);
    };

    let numNodes = 1;
    let patchTime = '2026-01-01T00:00:00Z';
    const patchOf: Record<Update, () => Obj> = {
      // A spec change (the webhook is called only when spec changes) outside spec.trainer: allowed, no judgment.
      patches: () => {
        patchTime = patchTime.startsWith('2026-01') ? '2026-02-01T00:00:00Z' : '2026-01-01T00:00:00Z';
        return { spec: { runtimePatches: [{ manager: 'bench.example.com/bench', time: patchTime }] } };
      },
      numNodes: () => {
        numNodes = numNodes === 1 ? 2 : 1;
        return { spec: { trainer: { numNodes } } };
      },
    };
    const send = async (update: Update): Promise<number> => {
      const patch = patchOf[update]();
      const t0 = process.hrtime.bigint();
      const res = await client.send('PATCH', trainJobPath(SCALED), patch, 'application/merge-patch+json');
      const elapsed = Number(process.hrtime.bigint() - t0) / 1e6;
      if (res.status !== 200) throw new Error(`UPDATE refused: HTTP ${res.status} ${JSON.stringify(res.body)}`);
      return elapsed;
    };
    const scrape = async (config: Config): Promise<Scrape> => {
      const opsPort = served[config]?.opsPort;
      return {
        apiServer: await client.text('/metrics'),
        webhook: opsPort ? (await httpGet(`http://127.0.0.1:${opsPort}/metrics`)).body : undefined,
      };
    };
    const key = (config: Config, update: Update) => `${config}|${update}`;
    const samples = new Map<string, number[]>();
    const scrapes = new Map<string, { before: Scrape; after: Scrape }[]>();
    for (const config of CONFIGS)
      for (const update of UPDATES) {
        samples.set(key(config, update), []);
        scrapes.set(key(config, update), []);
      }
    /** One measured block: the UPDATEs, with the webhook's and the API server's series scraped around it. */
    const block = async (config: Config, update: Update) => {
      const before = served[config] ? await scrape(config) : undefined;
      for (let i = 0; i < updates / rounds; i++) samples.get(key(config, update))!.push(await send(update));
      if (before) scrapes.get(key(config, update))!.push({ before, after: await scrape(config) });
    };
    for (let round = 1; round <= rounds; round++) {
      for (const config of CONFIGS) {
        await switchTo(config);
        for (let i = 0; i < WARM_UP * UPDATES.length; i++) await send(UPDATES[i % UPDATES.length]);
        // Alternate which UPDATE goes first from round to round.
        for (const update of round % 2 ? UPDATES : [...UPDATES].reverse()) await block(config, update);
        process.stderr.write(
          `round ${round}/${rounds} ${config}: medians ${UPDATES.map((u) => `${u} ${ms(median(samples.get(key(config, u))!))}`).join(', ')} ms so far\n`,
        );
      }
    }
    stopRenewing();
    load.push(loadavg()[0]);
    const medianOf = (config: Config, update: Update) => median(samples.get(key(config, update))!);
    const addedOf = (config: Config, update: Update) => medianOf(config, update) - medianOf('none', update);
    const tables = UPDATES.map((update) => {
      const base = samples.get(key('none', update))!;
      const rows = CONFIGS.map((c) => {
        const s = samples.get(key(c, update))!;
        return [
          c,
          String(s.length),
          ms(median(s)),
          addedOf(c, update).toFixed(3),
          ratio(median(s), median(base)),
          ms(percentile(s, 99)),
          ratio(percentile(s, 99), percentile(base, 99)),
        ];
      });
      return [
        `**${UPDATE_TEXT[update]}**`,
        '',
        table(['configuration', 'UPDATEs', 'median ms', '+ms over none', 'ratio', 'p99 ms', 'ratio'], rows),
        '',
      ].join('\n');
    });
    const breakdownRows = CONFIGS.filter((c) => served[c]).flatMap((c) =>
      UPDATES.map((update) => {
        const blocks = scrapes.get(key(c, update))!;
        // Every block's sums over every block's calls: the rounds' blocks pooled.
        const parts = blocks.map((b) => breakdown(b.before, b.after));
        const meanOf = (k: keyof (typeof parts)[number]) => {
          const values = parts.map((p) => p[k]).filter((v): v is number => v !== undefined);
          return values.length < parts.length || values.length === 0
            ? undefined
            : values.reduce((sum, v) => sum + v, 0) / values.length;
        };
        return [c, update, ...BREAKDOWN_COLUMNS.map((k) => µs(meanOf(k)))];
      }),
    );
    const peerLabel = served['Go peer'] ? addedOf('Go peer', 'patches') : undefined;
    const verdicts =
      peerLabel === undefined
        ? ['The Go peer was not run: no comparison with it.']
        : [
            `Against the Go peer: on the runtimePatches change the webhook adds ${addedOf('webhook', 'patches').toFixed(3)} ms, the Go peer ${peerLabel.toFixed(3)} ms (target: no more than the peer's: ${addedOf('webhook', 'patches') <= peerLabel ? 'met' : 'NOT met'}); on the count change, judged against the cluster, the webhook adds ${addedOf('webhook', 'numNodes').toFixed(3)} ms (target: within +1 ms of the peer's ${peerLabel.toFixed(3)} ms on the runtimePatches change: ${addedOf('webhook', 'numNodes') <= peerLabel + 1 ? 'met' : 'NOT met'}; the peer on the count change, which it does not judge: ${addedOf('Go peer', 'numNodes').toFixed(3)} ms).`,
          ];
    const report = [
      '## TrainJob UPDATEs through the real API server (`npm run bench:apiserver`)',
      '',
      `- date: ${started.toISOString()}; ${cpus().length} cores (${cpus()[0]?.model}), ${(totalmem() / 2 ** 30).toFixed(1)} GiB; load average ${load[0].toFixed(2)} at the start, ${load[1].toFixed(2)} at the end; nothing pinned (the API server, etcd and the webhooks share both cores)`,
      `- kube-apiserver and etcd as in the e2e harness (no controllers); Trainer v2.3.0's TrainJob CRD; ${updates} UPDATEs of each kind per configuration in ${rounds} interleaved rounds (${WARM_UP} unmeasured of each after each switch), merge patches of a suspended TrainJob on one keep-alive connection, timed at the client; the cluster holds its runtime, the JobSet Trainer built for it, two Jobs and a Lease renewed every 2 s`,
      "- webhook: `trainjob-webhook serve --kubeconfig` (the CRD read from the API server; a count change is judged against the cluster: the JobSet, the runtime and the Lease (both from watches: `--watch-runtimes`, `--watch-reconciler-lease`), the Jobs); webhook, offline: `serve` with no cluster access (the embedded CRD, no read); Go peer: bench/go-peer (controller-runtime v0.24.1, the table on Trainer's typed API, no read). Only the validating configuration registered; every configuration proven in force (by the right process) before it is measured",
      '',
      ...tables,
      verdicts.join('\n'),
      '',
      "**Where a webhook call's time goes** (µs, mean per call over the measured blocks: `call` is the API server's own measure of the webhook call, `apiserver_admission_webhook_admission_duration_seconds`; `outside` is the call less the webhook's stages, i.e. the API server's client, TLS and loopback both ways, and the wait for the handler; the stages are the webhook's `trainjob_webhook_admission_stage_seconds_total`: receive = the body off TLS, Fastify and the JSON parse; read = the wait on the cluster reads beyond the decision; reads = the reads' own wall time, overlapping decide, and each read's (JobSet, runtime, Lease when it was GET rather than watched, Jobs; per call); the Go peer exposes no stages)",
      '',
      table(['configuration', 'UPDATE', ...BREAKDOWN_COLUMNS.map((k) => BREAKDOWN_HEADERS[k] ?? k)], breakdownRows),
      '',
    ].join('\n');
    process.stdout.write(report);
    if (process.env.BENCH_OUT) await writeFile(process.env.BENCH_OUT, report);
  } finally {
    stopRenewing();
    client.close();
    renewer.close();
    await cp.stop();
  }
}

await main();
