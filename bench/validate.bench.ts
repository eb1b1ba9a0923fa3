// The validating endpoint under load: requests/s, p50, p99 and resident memory of our webhook
// (rule table only, in the cluster (the table alone behind the embedded CRD's schema), the embedded
// default CRD checked whole, the upstream CRD) and of a Go peer built on
// controller-runtime (bench/go-peer/), each as a ratio to a bare Fastify TLS endpoint measured
// in the same run. Before any load every body goes to every deciding server once and the answers
// must agree (allowed; for a denial its code and the fields blamed), or the run stops.
//
//   npm run bench
//
// Env: BENCH_SECONDS (per measurement, default 3), BENCH_CONNECTIONS (default 1,16,64),
// BENCH_ROUNDS (interleaved rounds, default 2), BENCH_NO_PEER=1 (leave the Go peer out),
// BENCH_OUT=FILE (also write the markdown there). Take the e2e lock around it on a shared
// machine: `flock /tmp/tjw-e2e.lock npm run bench`.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { cpus, freemem, loadavg, tmpdir, totalmem } from 'node:os';
import { createServer } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { generateSelfSigned } from '../src/certs/selfsigned.ts';
import { agreementOnlyBodies, benchBodies, type Body } from './lib/bodies.ts';
import { decisionOf, disagreements, formatDecision, type NamedDecision } from './lib/decisions.ts';
import { loadTables, memoryTable, type LoadResult, type MemoryResult } from './lib/markdown.ts';
import { pinCores } from './lib/pinning.ts';
import { processMemory } from './lib/proc.ts';
import { mean, percentile } from './lib/stats.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const PATH = '/validate-trainer-kubeflow-org-v1alpha1-trainjob';
const UPSTREAM_CRD = 'upstream/crds/trainer.kubeflow.org_trainjobs.yaml';

function envList(name: string, fallback: number[]): number[] {
  const raw = process.env[name];
  if (!raw) return fallback;
  const values = raw.split(',').map((s) => Number(s.trim()));
  if (values.some((v) => !Number.isInteger(v) || v < 1))
    throw new Error(`${name} must be a comma-separated list of positive integers, got ${JSON.stringify(raw)}`);
  return values;
}
const seconds = envList('BENCH_SECONDS', [3])[0];
const connectionCounts = envList('BENCH_CONNECTIONS', [1, 16, 64]);
const rounds = envList('BENCH_ROUNDS', [2])[0];

interface Server {
  name: string;
  url: string;
  child: ChildProcess;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** Starts a server process and waits for the URL it prints once listening. */
async function start(name: string, argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<Server> {
  const child = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'inherit'], env });
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout!.once('data', (d: Buffer) => resolve(d.toString().trim()));
    child.once('exit', (code) => reject(new Error(`${name}: exited with ${code} before listening`)));
    child.once('error', (err) => reject(new Error(`${name}: ${err.message}`)));
  });
  return { name, url, child };
}

/** The Go peer's binary, built (or found cached) by hack/build-bench-peer.sh; a note when it cannot be. */
function goPeer(): { bin?: string; note: string } {
  if (process.env.BENCH_NO_PEER === '1') return { note: 'Go peer left out (BENCH_NO_PEER=1)' };
  try {
    const out = execFileSync(path.join(root, 'hack/build-bench-peer.sh'), {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    return {
      bin: out.trim().split('\n').at(-1),
      note: 'Go peer: bench/go-peer (controller-runtime v0.24.1 webhook server, Trainer v2.3.0 typed API), built by hack/build-bench-peer.sh',
    };
  } catch (err) {
    const code = (err as { status?: number }).status;
    if (code === 3) return { note: 'Go peer skipped: Go is not installed (hack/build-bench-peer.sh needs it)' };
    throw new Error(`building the Go peer failed (hack/build-bench-peer.sh exited ${code})`, { cause: err });
  }
}

/** One request, its AdmissionReview answer parsed. */
async function ask(url: string, body: string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const req = request(
      url + PATH,
      { method: 'POST', headers: { 'content-type': 'application/json' }, rejectUnauthorized: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          if (res.statusCode !== 200) return reject(new Error(`${url}: HTTP ${res.statusCode}: ${text.slice(0, 300)}`));
          try {
            resolve(JSON.parse(text));
          } catch {
            reject(new Error(`${url}: answer is not JSON: ${text.slice(0, 300)}`));
          }
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** One load measurement; latencies recorded from autocannon's per-response times (fractional ms). */
async function load(
  url: string,
  body: string,
  connections: number,
  duration: number,
): Promise<{ rps: number; latencies: number[] }> {
  const latencies: number[] = [];
  const r = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(
      {
        url: url + PATH,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
        connections,
        duration,
        tlsOptions: { rejectUnauthorized: false },
      } as autocannon.Options,
      (err, result) => (err ? reject(err) : resolve(result)),
    );
    instance.on('response', (_client, status, _bytes, ms) => {
      if (status === 200) latencies.push(ms);
    });
  });
  if (r.non2xx > 0 || r.errors > 0 || r.timeouts > 0)
    throw new Error(`${url}: ${r.non2xx} non-2xx answers, ${r.errors} errors, ${r.timeouts} timeouts`);
  return { rps: latencies.length / duration, latencies };
}

// eslint-disable-next-line max-lines-per-function, complexity -- the benchmark's script: servers, rounds, report
async function main() {
  const started = new Date();
  const loadBefore = loadavg()[0];
  const pinning = pinCores();
  const peer = goPeer();
  const bodies = benchBodies(root);
  const tlsDir = mkdtempSync(path.join(tmpdir(), 'tjw-bench-'));
  const servers: Server[] = [];
  const stopAll = () => {
    for (const s of servers) s.child.kill('SIGTERM');
    rmSync(tlsDir, { recursive: true, force: true });
  };
  process.on('SIGINT', () => {
    stopAll();
    process.exit(130);
  });
  try {
    const pair = await generateSelfSigned();
    const cert = path.join(tlsDir, 'tls.crt');
    const key = path.join(tlsDir, 'tls.key');
    writeFileSync(cert, pair.cert);
    writeFileSync(key, pair.key, { mode: 0o600 });
    const node = [...pinning.serverPrefix, process.execPath, path.join(root, 'bench/server.ts')];
    servers.push(await start('bare Fastify TLS (baseline)', [...node, 'bare', cert, key]));
    servers.push(await start('webhook, rule table only', [...node, 'table', cert, key]));
    servers.push(
      await start('webhook, in the cluster (table alone, embedded CRD schema)', [...node, 'in-cluster', cert, key]),
    );
    servers.push(await start('webhook, embedded default CRD', [...node, 'embedded', cert, key]));
    servers.push(await start('webhook, upstream CRD', [...node, 'crd', cert, key, path.join(root, UPSTREAM_CRD)]));
    if (peer.bin) {
      const port = await freePort();
      servers.push(
        await start(
          'Go peer (controller-runtime)',
          [...pinning.serverPrefix, peer.bin, '--port', String(port), '--cert', cert, '--key', key],
          { ...process.env, GOMAXPROCS: '1' },
        ),
      );
    }
    const baseline = servers[0].name;

    // The same decision everywhere, before any load (the bare endpoint decides nothing).
    const agreement: string[] = [];
    const problems: string[] = [];
    for (const b of [...bodies, ...agreementOnlyBodies(root)]) {
      const decisions: NamedDecision[] = [];
      for (const s of servers.slice(1))
        decisions.push({ server: s.name, decision: decisionOf(await ask(s.url, b.json)) });
      problems.push(...disagreements(b.name, b.expected, decisions));
      agreement.push(`- ${b.name}: ${formatDecision(decisions[0].decision)} from all ${decisions.length}`);
    }
    if (problems.length > 0) throw new Error(`the servers do not decide alike:\n  ${problems.join('\n  ')}`);
    process.stderr.write(`decisions agree:\n${agreement.join('\n')}\n`);

    // Interleaved rounds: every server measured once per round for each body and connection
    // count; the first round warms each server up on a body (JIT, TLS sessions, the Go peer's
    // heap) right before that body's loads.
    const samples = new Map<string, { rps: number[]; latencies: number[] }>();
    // RSS right after each body's loads in the first round, before any larger body was sent (the
    // bodies go smallest first), so the 1 MiB CREATE does not hide what the small ones cost.
    const rssAfter = new Map<string, Map<string, number>>(servers.map((s) => [s.name, new Map()]));
    for (let round = 1; round <= rounds; round++) {
      for (const b of bodies) {
        // eslint-disable-next-line max-depth -- try > round > body > first round > server: the warm-up loads
        if (round === 1) for (const s of servers) await load(s.url, b.json, 16, 1);
        for (const c of connectionCounts) {
          // eslint-disable-next-line max-depth -- try > round > body > connection count > server: interleaved runs
          for (const s of servers) {
            const r = await load(s.url, b.json, c, seconds);
            const key = `${s.name}\u0000${b.name}\u0000${c}`;
            const acc = samples.get(key) ?? { rps: [], latencies: [] };
            acc.rps.push(r.rps);
            acc.latencies.push(...r.latencies);
            samples.set(key, acc);
            process.stderr.write(
              `round ${round}/${rounds} ${b.name}, ${c} conn, ${s.name}: ${r.rps.toFixed(0)} req/s\n`,
            );
          }
        }
        // eslint-disable-next-line max-depth -- try > round > body > first round > server: RSS after each body
        if (round === 1) for (const s of servers) rssAfter.get(s.name)!.set(b.short, processMemory(s.child.pid!).rss);
      }
    }
    const memory: MemoryResult[] = servers.map((s) => ({
      server: s.name,
      rssAfter: bodies.map((b) => ({ body: b.short, rss: rssAfter.get(s.name)!.get(b.short)! })),
      peak: processMemory(s.child.pid!).peak,
    }));
    const results: LoadResult[] = [];
    for (const b of bodies) {
      for (const c of connectionCounts) {
        for (const s of servers) {
          const acc = samples.get(`${s.name}\u0000${b.name}\u0000${c}`)!;
          results.push({
            server: s.name,
            body: b.name,
            connections: c,
            rps: mean(acc.rps),
            p50: percentile(acc.latencies, 50),
            p99: percentile(acc.latencies, 99),
          });
        }
      }
    }
    const report = markdown({
      started,
      load: [loadBefore, loadavg()[0]],
      pinning: pinning.note,
      peer: peer.note,
      agreement,
      bodies,
      results,
      memory,
      baseline,
    });
    process.stdout.write(report);
    if (process.env.BENCH_OUT) writeFileSync(process.env.BENCH_OUT, report);
  } finally {
    stopAll();
  }
}

function commit(): string {
  try {
    const sha = execFileSync('git', ['-C', root, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['-C', root, 'status', '--porcelain', '--', 'src', 'bench'], {
      encoding: 'utf8',
    }).trim();
    return dirty ? `${sha} (with uncommitted changes under src/ or bench/)` : sha;
  } catch {
    return 'unknown';
  }
}

function markdown(r: {
  started: Date;
  load: number[];
  pinning: string;
  peer: string;
  agreement: string[];
  bodies: Body[];
  results: LoadResult[];
  memory: MemoryResult[];
  baseline: string;
}): string {
  const cpu = cpus()[0]?.model ?? 'unknown';
  return [
    `## Validating endpoint under load (\`npm run bench\`)`,
    '',
    `- date: ${r.started.toISOString()}; commit ${commit()}; Node ${process.version}`,
    `- machine: ${cpus().length} cores (${cpu}), ${(totalmem() / 2 ** 30).toFixed(1)} GiB memory (${(freemem() / 2 ** 30).toFixed(1)} GiB free at the end); load average ${r.load[0].toFixed(2)} at the start, ${r.load[1].toFixed(2)} at the end (other work on the machine shows there)`,
    `- ${r.pinning}`,
    `- ${r.peer}`,
    `- ${rounds} interleaved round(s) of ${seconds} s per server, body and connection count (the first after a 1 s warm-up of each server on each body); req/s is the mean of the rounds, p50/p99 over every response of both, from autocannon's per-response times`,
    `- the same decision from every deciding server, checked before the load (the last ${agreementOnlyBodies(root).length} only checked, not loaded):`,
    ...r.agreement.map((l) => `  ${l}`),
    '',
    loadTables(r.results, r.baseline),
    `**Resident memory** (/proc/PID/status: VmRSS right after each body's loads at ${connectionCounts.join('/')} connections in the first round, bodies in this order; VmHWM the peak over the run):`,
    '',
    memoryTable(r.memory, r.baseline),
    '',
  ].join('\n');
}

await main();
