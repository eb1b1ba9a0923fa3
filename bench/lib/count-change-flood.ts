// The second part of `npm run bench:flood` (issue 26's "Done when"): forged count changes against
// `serve --kubeconfig` beside a real kube-apiserver, and what they cost other TrainJob writes. A
// count change the rules allow is judged against the cluster (src/scale/reads/scale-check.ts), so
// anyone who reaches the webhook's port can make it read; these name a different TrainJob each
// (`forged-<n>`, none of which exists), the case where coalescing cannot help: each costs a JobSet
// GET and a Jobs LIST from the watch cache, and a quorum GET (capped per second for callers not
// known to be the API server). The other writes (an allowed CREATE, a denied image UPDATE, a
// denied CREATE, a mutating CREATE) need no read. They are sent as the API server sends them,
// straight to the webhook's port, on their own connections: in blocks without the flood and in
// blocks with it, interleaved, and their medians compared.
//   env: COUNT_FLOOD_CONNECTIONS  connections sending forged count changes (default 6)
//        OTHER_WRITES             other writes per block (default 400); COUNT_FLOOD_ROUNDS (default 2)
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { Agent, request } from 'node:https';
import { loadavg } from 'node:os';
import path from 'node:path';
import { stringify } from 'yaml';
import { controlPlaneAvailability, projectRoot, startControlPlane, upstreamCrds } from '../../test/harness/index.ts';
import { startWebhook } from '../../test/e2e/support/webhook.ts';
import { patchedCrd, upstreamTrainJobCrd, type Obj } from '../../test/e2e/support/trainjobs.ts';
import { crdPatchOps } from '../../src/rules/generate/crd-patch.ts';
import { adminClient } from './admin-client.ts';
import { buildJudgedWorld, LEASE_NAME, scaledTrainJob } from './apiserver-world.ts';
import { ms, ratio, table } from './markdown.ts';
import { median, percentile } from './stats.ts';

const VALIDATE = '/validate-trainer-kubeflow-org-v1alpha1-trainjob';
const MUTATE = '/mutate-trainer-kubeflow-org-v1alpha1-trainjob';
const NS = 'bench';
const VICTIM = 'victim';

interface Reply {
  status: number;
  code: number;
  ms: number;
}

function post(agent: Agent, url: string, body: string): Promise<Reply> {
  const t0 = performance.now();
  return new Promise((resolve) => {
    const req = request(
      url,
      { method: 'POST', agent, headers: { 'content-type': 'application/json' }, timeout: 60_000 },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          let code = res.statusCode ?? 0;
          try {
            const r = JSON.parse(Buffer.concat(chunks).toString()).response;
            code = r.allowed ? 200 : (r.status?.code ?? code);
          } catch {
            // not a review: the HTTP status stands
          }
          resolve({ status: res.statusCode ?? 0, code, ms: performance.now() - t0 });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error('no answer in 60 s')));
    req.on('error', () => resolve({ status: -1, code: -1, ms: performance.now() - t0 }));
    req.end(body);
  });
}

const example = (name: string) => JSON.parse(readFileSync(path.join(projectRoot, 'examples', name), 'utf8'));

/** The other writes: none changes numNodes, so none is judged against the cluster. */
function otherWrites(url: string): { url: string; body: (uid: string) => string }[] {
  return [
    ['allowed-create.json', VALIDATE],
    ['denied-image-change.json', VALIDATE],
    ['denied-create-invalid.json', VALIDATE],
    ['mutate-create-runtimepatch.json', MUTATE],
  ].map(([file, at]) => {
    const review = example(file);
    return {
      url: url + at,
      body: (uid: string) => JSON.stringify({ ...review, request: { ...review.request, uid } }),
    };
  });
}

/** A count change the rules allow (suspended, 1 -> 2) of the TrainJob victim/<name>. */
function forgedCountChange(name: string): string {
  const review = example('allowed-numnodes-suspended.json');
  const rename = (o: Obj) => ({ ...o, metadata: { ...o.metadata, name, namespace: VICTIM, uid: `uid-${name}` } });
  return JSON.stringify({
    ...review,
    request: {
      ...review.request,
      uid: `forged-${name}`,
      name,
      namespace: VICTIM,
      object: rename(review.request.object),
      oldObject: rename(review.request.oldObject),
    },
  });
}

/** The API server's count of requests for a resource and verb (apiserver_request_total). */
async function served(cp: Awaited<ReturnType<typeof startControlPlane>>, resource: string, verb: string) {
  const text = (await cp.kubectl(['get', '--raw', '/metrics'])).stdout;
  return text
    .split('\n')
    .filter(
      (l) =>
        l.startsWith('apiserver_request_total{') &&
        l.includes(`resource="${resource}"`) &&
        l.includes(`verb="${verb}"`),
    )
    .reduce((sum, l) => sum + Number(l.split(' ').pop()), 0);
}

interface Measured {
  timed: Record<'quiet' | 'flood', number[]>;
  otherCodes: Map<string, number>;
  forgedCodes: Map<number, number>;
  forgedSent: number;
  forgedSeconds: number;
}

const tally = <K>(m: Map<K, number>, k: K) => m.set(k, (m.get(k) ?? 0) + 1);

/** Blocks of other writes without and with the flood, interleaved, against the webhook at `url`. */
async function measure(url: string, caPem: string, connections: number, perBlock: number, rounds: number) {
  const agentOptions = { keepAlive: true, maxSockets: 1, ca: caPem };
  const writes = otherWrites(url);
  const m: Measured = {
    timed: { quiet: [], flood: [] },
    otherCodes: new Map(),
    forgedCodes: new Map(),
    forgedSent: 0,
    forgedSeconds: 0,
  };
  const expected: number[] = [];
  const warm = new Agent(agentOptions);
  for (const w of writes) expected.push((await post(warm, w.url, w.body('warm'))).code);
  warm.destroy();
  const block = async (phase: 'quiet' | 'flood', round: number) => {
    let flooding = phase === 'flood';
    const t0 = performance.now();
    const flood = Array.from({ length: flooding ? connections : 0 }, async (_, c) => {
      const agent = new Agent(agentOptions);
      for (let n = 0; flooding; n++) {
        const reply = await post(agent, url + VALIDATE, forgedCountChange(`forged-${round}-${c}-${n}`));
        m.forgedSent++;
        tally(m.forgedCodes, reply.status === 200 ? reply.code : -reply.status);
      }
      agent.destroy();
    });
    const agent = new Agent(agentOptions);
    for (let n = 0; n < perBlock; n++) {
      const w = n % writes.length;
      const reply = await post(agent, writes[w].url, writes[w].body(`${phase}-${round}-${n}`));
      m.timed[phase].push(reply.ms);
      tally(m.otherCodes, reply.code === expected[w] ? 'as without the flood' : `${reply.code}`);
    }
    agent.destroy();
    flooding = false;
    await Promise.all(flood);
    if (phase === 'flood') m.forgedSeconds += (performance.now() - t0) / 1000;
  };
  for (let r = 0; r < rounds; r++) {
    await block('quiet', r);
    await block('flood', r);
  }
  return m;
}

const loads = (l: number[]) => l.map((x) => x.toFixed(1)).join(' ');

function report(m: Measured, reads: { jobSetGets: number; jobLists: number }, setup: string): string {
  const row = (phase: 'quiet' | 'flood') => [
    phase === 'quiet' ? 'without the flood' : 'under the flood',
    String(m.timed[phase].length),
    ms(median(m.timed[phase])),
    ms(percentile(m.timed[phase], 90)),
    ms(percentile(m.timed[phase], 99)),
    ratio(median(m.timed[phase]), median(m.timed.quiet)),
  ];
  const codes = [...m.forgedCodes]
    .sort(([a], [b]) => a - b)
    .map(([code, n]) => `${code < 0 ? `HTTP ${-code}` : code}: ${n}`)
    .join(', ');
  return [
    `## Forged count changes (\`npm run bench:flood\`), ${new Date().toISOString()}`,
    '',
    setup,
    '',
    table(['other writes', 'answered', 'p50 (ms)', 'p90', 'p99', 'median / without'], [row('quiet'), row('flood')]),
    '',
    `Other writes' answers: ${[...m.otherCodes].map(([k, v]) => `${k}: ${v}`).join(', ')}.`,
    `Forged count changes: ${m.forgedSent} in ${m.forgedSeconds.toFixed(0)} s (${(m.forgedSent / m.forgedSeconds).toFixed(0)}/s), answered ${codes}; the API server served ${reads.jobSetGets} JobSet GETs and ${reads.jobLists} Job LISTs meanwhile (all blocks).`,
    '',
  ].join('\n');
}

export async function countChangeFlood(): Promise<string> {
  const avail = controlPlaneAvailability();
  if (!avail.available) return `## Forged count changes\n\nNot run: no control plane (${avail.reason}).\n`;
  const connections = Number(process.env.COUNT_FLOOD_CONNECTIONS ?? 6);
  const perBlock = Number(process.env.OTHER_WRITES ?? 400);
  const rounds = Number(process.env.COUNT_FLOOD_ROUNDS ?? 2);
  const loadBefore = loadavg();
  const upstream = upstreamTrainJobCrd('v2.3.0');
  const cp = await startControlPlane({
    crds: [upstreamCrds.jobsets, upstreamCrds.clusterTrainingRuntimes],
    controllerManager: false,
    world: false,
  });
  const admin = await adminClient(cp);
  let stopRenewing = () => {};
  try {
    const crdFile = path.join(await cp.tempDir('bench'), 'trainjobs.yaml');
    await writeFile(
      crdFile,
      stringify(patchedCrd(upstream, crdPatchOps(upstream.spec.versions[0].schema.openAPIV3Schema) as Obj[])),
    );
    await cp.installCRDs([crdFile]);
    await cp.kubectl(['create', 'namespace', NS]);
    const trainJobs = `/apis/trainer.kubeflow.org/v1alpha1/namespaces/${NS}/trainjobs`;
    const created = await admin.send('POST', trainJobs, scaledTrainJob(NS));
    if (created.status !== 201) throw new Error(`creating the TrainJob: HTTP ${created.status}`);
    // A JobSet, its Jobs, the runtime and a Lease renewed every 2 s: a reconciler leads.
    stopRenewing = await buildJudgedWorld(admin.send, NS, created.body);
    const wh = await startWebhook(cp, {
      name: 'webhook',
      extraArgs: ['--reconciler-lease', `${NS}/${LEASE_NAME}`, '--watch-reconciler-lease', '--watch-runtimes'],
    });
    const before = { jobSetGets: await served(cp, 'jobsets', 'GET'), jobLists: await served(cp, 'jobs', 'LIST') };
    const m = await measure(`https://127.0.0.1:${wh.port}`, wh.caPem, connections, perBlock, rounds);
    const reads = {
      jobSetGets: (await served(cp, 'jobsets', 'GET')) - before.jobSetGets,
      jobLists: (await served(cp, 'jobs', 'LIST')) - before.jobLists,
    };
    const setup = `\`serve --kubeconfig --watch-reconciler-lease --watch-runtimes\` (the sources) beside kube-apiserver and etcd (no controllers); no client CA, so every caller is unauthenticated. ${connections} connections send forged count changes (suspended, numNodes 1 -> 2), each of a TrainJob that does not exist, a new name each time; one connection sends the other writes (allowed CREATE, denied image UPDATE, denied CREATE, mutating CREATE), ${perBlock} per block, in ${rounds} blocks without the flood and ${rounds} with it, interleaved. The bench's clients, serve, kube-apiserver and etcd share the machine's cores, and the machine is shared with other work: load average before ${loads(loadBefore)}, after ${loads(loadavg())}.`;
    return report(m, reads, setup);
  } finally {
    stopRenewing();
    admin.close();
    await cp.stop();
  }
}
