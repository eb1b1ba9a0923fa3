// Throughput and latency of the validating endpoint on realistic AdmissionReviews, reported as
// ratios to a bare Fastify TLS endpoint measured in the same run (absolute numbers depend on
// the machine; the ratios say what the webhook itself costs).
//
//   npm run bench            (BENCH_SECONDS=10 for longer runs)
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const crd = path.resolve(root, 'upstream/crds/trainer.kubeflow.org_trainjobs.yaml');
const PATH = '/validate-trainer-kubeflow-org-v1alpha1-trainjob';

const bodies = {
  'allowed numNodes change (suspended)': readFileSync(path.join(root, 'examples/allowed-numnodes-suspended.json'), 'utf8'),
  'denied image change': readFileSync(path.join(root, 'examples/denied-image-change.json'), 'utf8'),
};

async function startServer(kind: string, extra: string[] = []): Promise<{ url: string; stop(): void }> {
  const child = spawn(process.execPath, [path.join(root, 'bench/server.ts'), kind, ...extra], { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.once('data', (d: Buffer) => resolve(d.toString().trim()));
    child.once('exit', (code) => reject(new Error(`${kind} server exited with ${code}`)));
  });
  return { url, stop: () => child.kill('SIGTERM') };
}

interface Result {
  rps: number;
  p50: number;
  p99: number;
}

async function load(url: string, body: string): Promise<Result> {
  const r = await autocannon({ url: url + PATH, method: 'POST', headers: { 'content-type': 'application/json' }, body, connections: 16, duration: seconds, tlsOptions: { rejectUnauthorized: false } } as autocannon.Options);
  if (r.non2xx > 0 || r.errors > 0) throw new Error(`${r.non2xx} non-2xx answers and ${r.errors} errors`);
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99 };
}

const servers = [
  { name: 'bare Fastify TLS (baseline)', kind: 'bare', args: [] as string[] },
  { name: 'webhook, rule table only', kind: 'webhook', args: [] },
  { name: 'webhook, upstream CRD schema + rules', kind: 'webhook', args: [crd] },
];

const rows: string[] = [];
for (const [label, body] of Object.entries(bodies)) {
  let baseline: Result | undefined;
  for (const s of servers) {
    const server = await startServer(s.kind, s.args);
    try {
      await load(server.url, body); // warm-up
      const r = await load(server.url, body);
      baseline ??= r;
      // autocannon reports whole milliseconds: a ratio to a baseline under 1 ms says nothing.
      const ratio = (v: number, b: number) => (b >= 1 ? `x${(v / b).toFixed(2)}` : 'baseline < 1 ms');
      rows.push(
        `${label.padEnd(38)} ${s.name.padEnd(38)} ${r.rps.toFixed(0).padStart(7)} req/s (x${(r.rps / baseline.rps).toFixed(2)})  p50 ${r.p50} ms (${ratio(r.p50, baseline.p50)})  p99 ${r.p99} ms (${ratio(r.p99, baseline.p99)})`,
      );
    } finally {
      server.stop();
    }
  }
}
console.log(`validating endpoint, ${seconds} s per measurement, 16 connections, ratios to the baseline of the same run:`);
for (const r of rows) console.log(r);
