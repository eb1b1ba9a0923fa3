// A flood of hostile AdmissionReviews against `serve` run as the image runs it (the compiled
// JavaScript in dist/, the Dockerfile's NODE_OPTIONS), while well-formed reviews keep coming:
// the peak RSS against the container's 512Mi limit, whether every well-formed review got its
// correct answer (the one the same server gave before the flood), and their latency. Several
// connections send the hostile mix (1 MiB strings, long and wrong-typed lists, deep nesting,
// bodies too heavy to decide, the largest UPDATE), others the well-formed reviews; a 429 is retried
// after its Retry-After, as the API server's client does (client-go, up to 10 retries).
// Then forged count changes beside a real API server (bench/lib/count-change-flood.ts): the other
// TrainJob writes' median under them as a ratio to the same writes without them.
//   flock /tmp/tjw-e2e.lock npm run bench:flood
//   env: FLOOD_REVIEWS      hostile reviews sent (default 20000)
//        FLOOD_CONNECTIONS  connections sending them (default 6); WELL_CONNECTIONS (default 2)
//        ENTRY              js (dist/, built first with `npm run build`, default) or ts (the sources)
//        FLOOD_ROOT         the checkout whose `serve` and Dockerfile run (default this one; e.g. a
//                           worktree of an older commit, to measure it the same way)
//        RSS_ABORT_MIB      stop the flood once the server's RSS passes this (default 2048)
//        FLOOD_COUNT_CHANGES 0: leave the forged count changes out (they start a control plane);
//                           their own env is in bench/lib/count-change-flood.ts
//        BENCH_OUT          also write the report to this file
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { Agent, request } from 'node:https';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { countChangeFlood } from './lib/count-change-flood.ts';
import { hostileBodies, type HostileBody } from './lib/hostile-bodies.ts';
import { mib, ms, table } from './lib/markdown.ts';
import { pinCores } from './lib/pinning.ts';
import { processMemory } from './lib/proc.ts';
import { percentile } from './lib/stats.ts';

const here = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const root = path.resolve(process.env.FLOOD_ROOT ?? here);
const reviews = Number(process.env.FLOOD_REVIEWS ?? 20_000);
const floodConnections = Number(process.env.FLOOD_CONNECTIONS ?? 6);
const wellConnections = Number(process.env.WELL_CONNECTIONS ?? 2);
const entry = process.env.ENTRY ?? 'js';
const rssAbort = Number(process.env.RSS_ABORT_MIB ?? 2048) * 1024 * 1024;
const LIMIT = 512 * 1024 * 1024;
const VALIDATE = '/validate-trainer-kubeflow-org-v1alpha1-trainjob';
const MUTATE = '/mutate-trainer-kubeflow-org-v1alpha1-trainjob';
const OFFLINE_SERVE = ['serve', '--port', '0', '--ops-port', '0'];

/** The image's NODE_OPTIONS: the Dockerfile's last `ENV NODE_OPTIONS=` line. */
function imageNodeOptions(dockerfile: string): string {
  const lines = [...dockerfile.matchAll(/^ENV NODE_OPTIONS=(?:"([^"]*)"|(\S*))$/gm)];
  if (lines.length === 0) throw new Error('the Dockerfile sets no NODE_OPTIONS');
  const last = lines.at(-1)!;
  return last[1] ?? last[2]!;
}

const nodeOptions = imageNodeOptions(readFileSync(path.join(root, 'Dockerfile'), 'utf8'));
// Read before the build: the commit the measured serve was built from.
const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root }).toString().trim();
if (entry === 'js') execFileSync('npm', ['run', 'build', '--silent'], { cwd: root, stdio: 'inherit' });
const bin = path.join(root, entry === 'js' ? 'dist/bin/trainjob-webhook.js' : 'bin/trainjob-webhook.js');
const pinning = pinCores();

interface Server {
  pid: number;
  url: string;
  logBytes(): number;
  exited(): string | undefined;
  stop(): Promise<void>;
}

async function startServer(dir: string): Promise<Server> {
  // Offline, its self-signed certificate in dir/certs: the flags the image's CMD leaves out.
  const args = [...pinning.serverPrefix, process.execPath, bin, ...OFFLINE_SERVE];
  const child = spawn(args[0], args.slice(1), {
    cwd: dir,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, NODE_OPTIONS: nodeOptions, NODE_ENV: 'production', KUBERNETES_SERVICE_HOST: '' },
  });
  let logged = 0;
  let head = '';
  let exit: string | undefined;
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  child.once('exit', (code, signal) => (exit = `exited with ${code ?? signal}: ${stderr.slice(-600)}`));
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => {
      // The log is read as a container runtime reads it, as fast as it comes.
      logged += d.length;
      if (head.length < 100_000) head += d.toString();
      const line = head.split('\n').find((l) => l.includes('"msg":"serving"'));
      if (line) resolve(String(JSON.parse(line).admission));
    });
    child.once('exit', () => reject(new Error(`serve ${exit}\n${head}`)));
  });
  return {
    pid: child.pid!,
    url,
    logBytes: () => logged,
    exited: () => exit,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

interface Reply {
  status: number;
  text: string;
  retryAfter?: string;
}

function post(agent: Agent, url: string, body: string): Promise<Reply> {
  return new Promise((resolve) => {
    const req = request(
      url,
      {
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
        timeout: 60_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            text: Buffer.concat(chunks).toString(),
            retryAfter: res.headers['retry-after'],
          }),
        );
        res.on('error', (err) => resolve({ status: -1, text: err.message }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('no answer in 60 s')));
    req.on('error', (err) => resolve({ status: -1, text: err.message }));
    req.end(body);
  });
}

/**
 * What decides whether an answer is the correct one: everything but the uid, and in a patch the
 * defaulted runtimePatches time (the clock's, so it differs from one answer to the next).
 */
function decisionOf(reply: Reply): string {
  if (reply.status !== 200) return `HTTP ${reply.status}`;
  const { response } = JSON.parse(reply.text);
  const patch =
    response.patch === undefined
      ? undefined
      : (JSON.parse(Buffer.from(response.patch, 'base64').toString()) as Array<Record<string, unknown>>).map((op) =>
          typeof op.path === 'string' && op.path.endsWith('/time') ? { ...op, value: '<now>' } : op,
        );
  return JSON.stringify({ ...response, uid: undefined, patch });
}

interface WellFormed {
  name: string;
  url: string;
  /** The review with `__UID__` where its uid goes. */
  template: string;
}

function wellFormedReviews(url: string): WellFormed[] {
  const read = (name: string) => {
    const review = JSON.parse(readFileSync(path.join(here, 'examples', name), 'utf8'));
    review.request.uid = '__UID__';
    return JSON.stringify(review);
  };
  return [
    { name: 'allowed numNodes UPDATE', url: url + VALIDATE, template: read('allowed-numnodes-suspended.json') },
    { name: 'denied image UPDATE', url: url + VALIDATE, template: read('denied-image-change.json') },
    { name: 'denied invalid CREATE', url: url + VALIDATE, template: read('denied-create-invalid.json') },
    { name: 'allowed CREATE', url: url + VALIDATE, template: read('allowed-create.json') },
    { name: 'mutating CREATE', url: url + MUTATE, template: read('mutate-create-runtimepatch.json') },
  ];
}

const dir = await mkdtemp(path.join(tmpdir(), 'tjw-flood-'));
const server = await startServer(dir);
const agentOptions = { keepAlive: true, maxSockets: 1, rejectUnauthorized: false };
const quiet = new Agent(agentOptions);
const well = wellFormedReviews(server.url);
const expected = new Map<string, string>();
for (const w of well)
  expected.set(w.name, decisionOf(await post(quiet, w.url, w.template.replace('__UID__', 'quiet'))));
quiet.destroy();
const idle = processMemory(server.pid).rss;
const loadBefore = loadavg();
const loads = (l: number[]) => l.map((x) => x.toFixed(1)).join(' ');

const hostile = hostileBodies(server.url);
const started = performance.now();
let rssPeakSampled = idle;
let aborted: string | undefined;
const sampler = setInterval(() => {
  try {
    const rss = processMemory(server.pid).rss;
    rssPeakSampled = Math.max(rssPeakSampled, rss);
    if (rss > rssAbort && !aborted) aborted = `RSS ${mib(rss)} passed RSS_ABORT_MIB`;
  } catch {
    aborted ??= `serve ${server.exited() ?? 'is gone'}`;
  }
}, 100);

// The flood: each connection takes the next hostile review until `reviews` are sent.
const byShape = new Map<string, Map<number, number>>();
let sent = 0;
const floodLoops = Array.from({ length: floodConnections }, async (_, c) => {
  const agent = new Agent(agentOptions);
  while (sent < reviews && !aborted) {
    const n = sent++;
    const body: HostileBody = hostile[n % hostile.length];
    const reply = await post(agent, body.url, body.text.replace('__UID__', `flood-${c}-${n}`));
    const counts = byShape.get(body.name) ?? new Map<number, number>();
    counts.set(reply.status, (counts.get(reply.status) ?? 0) + 1);
    byShape.set(body.name, counts);
    if (reply.status === -1 && server.exited()) aborted ??= `serve ${server.exited()}`;
  }
  agent.destroy();
});

// Well-formed reviews meanwhile, each retried on a 429 as client-go retries it.
let flooding = true;
const latencies: number[] = [];
let wellSent = 0;
let correct = 0;
let retries = 0;
const wrong: string[] = [];
const wellLoops = Array.from({ length: wellConnections }, async (_, c) => {
  const agent = new Agent(agentOptions);
  for (let n = 0; flooding && !aborted; n++) {
    const w = well[(n + c) % well.length];
    const t0 = performance.now();
    let reply = await post(agent, w.url, w.template.replace('__UID__', `well-${c}-${n}`));
    for (let attempt = 0; reply.status === 429 && attempt < 10; attempt++) {
      retries++;
      await new Promise((r) => setTimeout(r, Number(reply.retryAfter ?? 1) * 1000));
      reply = await post(agent, w.url, w.template.replace('__UID__', `well-${c}-${n}`));
    }
    latencies.push(performance.now() - t0);
    wellSent++;
    const got = decisionOf(reply);
    if (got === expected.get(w.name)) correct++;
    else if (wrong.length < 5) wrong.push(`${w.name}: ${got.slice(0, 200)}`);
  }
  agent.destroy();
});

await Promise.all(floodLoops);
flooding = false;
await Promise.all(wellLoops);
clearInterval(sampler);
const seconds = (performance.now() - started) / 1000;
let hwm = rssPeakSampled;
let after = NaN;
try {
  const m = processMemory(server.pid);
  hwm = m.peak;
  after = m.rss;
} catch {
  // gone: the sampled peak stands
}
const logBytes = server.logBytes();
await server.stop();
await rm(dir, { recursive: true, force: true });

const report = [
  `## Hostile flood (\`npm run bench:flood\`), ${new Date().toISOString()}`,
  '',
  `serve of ${root === here ? 'this checkout' : root} at ${commit} (${entry === 'js' ? 'dist/, compiled' : 'the sources'}), NODE_OPTIONS="${nodeOptions}" (the Dockerfile's); ${pinning.note}; load average before ${loads(loadBefore)}, after ${loads(loadavg())}.`,
  `${sent} hostile reviews from ${floodConnections} connections in ${seconds.toFixed(0)} s, ${wellSent} well-formed from ${wellConnections} beside them.${aborted ? ` **Stopped: ${aborted}.**` : ''}`,
  '',
  table(
    ['RSS idle', 'peak (VmHWM)', 'peak / 512 MiB', 'after', 'log read'],
    [[mib(idle), mib(hwm), (hwm / LIMIT).toFixed(2), Number.isNaN(after) ? 'gone' : mib(after), mib(logBytes)]],
  ),
  '',
  table(
    ['well-formed', 'correct', 'retried 429s', 'p50', 'p90', 'p99', 'max'],
    [
      [
        String(wellSent),
        String(correct),
        String(retries),
        ms(percentile(latencies, 50)),
        ms(percentile(latencies, 90)),
        ms(percentile(latencies, 99)),
        ms(Math.max(...latencies)),
      ],
    ],
  ),
  ...(wrong.length > 0 ? ['', 'Not the answer given before the flood:', ...wrong.map((w) => `- ${w}`)] : []),
  '',
  table(
    ['hostile review', 'bytes', 'answers by HTTP status'],
    hostile.map((h) => [
      h.name,
      mib(Buffer.byteLength(h.text)),
      [...(byShape.get(h.name) ?? new Map<number, number>())]
        .sort(([a], [b]) => a - b)
        .map(([status, count]) => `${status === -1 ? 'failed' : status}: ${count}`)
        .join(', ') || 'none sent',
    ]),
  ),
  '',
].join('\n');
console.log(report);
const countChanges = process.env.FLOOD_COUNT_CHANGES === '0' ? '' : await countChangeFlood();
console.log(countChanges);
if (process.env.BENCH_OUT) writeFileSync(process.env.BENCH_OUT, `${report}\n${countChanges}`);
