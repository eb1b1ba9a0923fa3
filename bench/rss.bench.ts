// Memory and start-up of the default `serve` (offline, embedded CRD), as the issue states them:
// start-up to ready, idle RSS, RSS after 60 s of load and its flatness over a longer run (sampled
// every 10 s), and the peak. The server is the real CLI, pinned to core 0; the load (autocannon,
// the allowed 6 KB UPDATE) runs in this process on core 1.
//   flock /tmp/tjw-e2e.lock npm run bench:rss
//   env: ENTRY        ts (bin/trainjob-webhook.js, the sources, default) or js (dist/, `npm run build`)
//        SERVE_ROOT   the checkout whose serve runs (default this one; another's measured the same way)
//        NODE_FLAGS   extra node flags for the server (e.g. "--max-semi-space-size=4")
//        SERVE_FLAGS  extra serve flags (e.g. "--table-only")
//        CLUSTER      stub: serve with cluster access, --kubeconfig (CA data, token) at a loopback
//                     HTTPS stand-in for the API server (in this process) that answers the CRD GET
//                     with the embedded CRD, holds its watch open, and lists no Jobs
//        SECONDS      load duration (default 300; 0: start-up and idle RSS only)
//        CONNECTIONS  (default 16); STARTS  start-ups measured before the load (default 5)
//        BODY         a request file (default examples/allowed-numnodes-suspended.json)
//        WORST        after the load, this many of the largest UPDATE the body limit admits sent at
//                     once (default 8; the body budget holds 2 in flight): all answered, and the peak
//        BASELINE     bare (default): then the same load, with the same node flags and pinning, on a
//                     bare Fastify TLS endpoint (JavaScript, as bench/server.ts's `bare`: parses the
//                     body, answers a fixed AdmissionReview), and serve's RSS as a ratio to its
//                     (issue 28's target: within 1.1x); none: serve alone
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import autocannon from 'autocannon';
import { createServer as createHttpsServer, request } from 'node:https';
import { ADMISSION_BODY_LIMIT } from '../src/webhook/server.ts';
import { generateSelfSigned } from '../src/certs/selfsigned.ts';
import { pinCores } from './lib/pinning.ts';
import { processMemory, type Memory } from './lib/proc.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const entry = process.env.ENTRY ?? 'ts';
const serveRoot = process.env.SERVE_ROOT ?? root;
const bin =
  entry === 'js'
    ? path.join(serveRoot, 'dist/bin/trainjob-webhook.js')
    : path.join(serveRoot, 'bin/trainjob-webhook.js');
const nodeFlags = (process.env.NODE_FLAGS ?? '').split(' ').filter(Boolean);
const serveFlags = (process.env.SERVE_FLAGS ?? '').split(' ').filter(Boolean);
const seconds = Number(process.env.SECONDS ?? 300);
const connections = Number(process.env.CONNECTIONS ?? 16);
const starts = Number(process.env.STARTS ?? 5);
const worst = Number(process.env.WORST ?? 8);
const cluster = process.env.CLUSTER ?? 'none';
const baseline = process.env.BASELINE ?? 'bare';
if (baseline !== 'bare' && baseline !== 'none') throw new Error(`BASELINE must be bare or none, got ${baseline}`);
if (cluster !== 'none' && cluster !== 'stub') throw new Error(`CLUSTER must be stub (or unset), got ${cluster}`);
const body = await readFile(process.env.BODY ?? path.join(root, 'examples/allowed-numnodes-suspended.json'), 'utf8');
const SAMPLE_MS = 10_000;
const ROUTE = '/validate-trainer-kubeflow-org-v1alpha1-trainjob';
const MiB = 1024 * 1024;

const pinning = pinCores();

interface Server {
  pid: number;
  admission: string;
  ops: string;
  startMs: number;
  stop(): Promise<void>;
}

/**
 * Spawns `serve` in `dir` (its self-signed certificate goes to dir/certs) and waits for its
 * "serving" line (the admission port listens, /readyz is 200).
 */
async function startServer(dir: string): Promise<Server> {
  return spawnServer(dir, [
    ...pinning.serverPrefix,
    process.execPath,
    ...nodeFlags,
    bin,
    'serve',
    '--port',
    '0',
    '--ops-port',
    '0',
    ...clusterFlags,
    ...serveFlags,
  ]);
}

/** Spawns a server in `dir` and waits for its "serving" line (JSON: the admission URL, the ops URL). */
async function spawnServer(dir: string, args: string[]): Promise<Server> {
  const started = performance.now();
  const child = spawn(args[0], args.slice(1), {
    cwd: dir,
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, KUBERNETES_SERVICE_HOST: '' },
  });
  let out = '';
  const { admission, ops } = await new Promise<{ admission: string; ops: string }>((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      for (const line of out.split('\n')) {
        if (!line.includes('"msg":"serving"')) continue;
        resolve(JSON.parse(line) as { admission: string; ops: string });
      }
    });
    child.once('exit', (code) => reject(new Error(`serve exited with ${code} before serving:\n${out}`)));
  });
  const startMs = performance.now() - started;
  child.stdout.removeAllListeners('data');
  child.stdout.resume();
  const stop = () =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGTERM');
    });
  return { pid: child.pid!, admission, ops, startMs, stop };
}

/**
 * The baseline: a bare Fastify TLS endpoint in JavaScript (bench/server.ts's `bare`, written out so
 * Node loads no type stripper for it), with the same node flags and pinning as serve.
 */
async function startBare(dir: string): Promise<Server> {
  const pair = await generateSelfSigned({ ipAddresses: ['127.0.0.1'] });
  await writeFile(path.join(dir, 'bare.crt'), pair.cert);
  await writeFile(path.join(dir, 'bare.key'), pair.key);
  const fastify = pathToFileURL(createRequire(path.join(root, 'package.json')).resolve('fastify')).href;
  const script = path.join(dir, 'bare.mjs');
  await writeFile(
    script,
    `import { readFileSync } from 'node:fs';
import Fastify from '${fastify}';
const app = Fastify({ https: { cert: readFileSync('bare.crt'), key: readFileSync('bare.key') }, bodyLimit: ${ADMISSION_BODY_LIMIT} });
app.post('${ROUTE}', async (req) => ({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid: req.body?.request?.uid ?? '', allowed: true } }));
const url = await app.listen({ port: 0, host: '127.0.0.1' });
process.stdout.write(JSON.stringify({ msg: 'serving', admission: url, ops: '' }) + '\\n');
process.once('SIGTERM', () => app.close().then(() => process.exit(0)));
`,
  );
  return spawnServer(dir, [...pinning.serverPrefix, process.execPath, ...nodeFlags, script]);
}

/** An allowed UPDATE as large as the body limit admits: both sides carry the same long inline script. */
function largestUpdate(allowedUpdate: string): string {
  const review = JSON.parse(allowedUpdate);
  // Nothing JSON escapes, so the body's size is exact.
  const line = 'x = 1 + 2  # trainjob-webhook bench: one statement of a long inline training script; ';
  const size = Buffer.byteLength(allowedUpdate);
  const each = Math.floor((ADMISSION_BODY_LIMIT - size - 1024) / 2);
  const script = line.repeat(Math.ceil(each / line.length)).slice(0, each);
  review.request.object.spec.trainer.command = ['python', '-c', script];
  review.request.oldObject.spec.trainer.command = ['python', '-c', script];
  const json = JSON.stringify(review);
  if (Buffer.byteLength(json) > ADMISSION_BODY_LIMIT) throw new Error('largestUpdate: over the body limit');
  return json;
}

function post(url: string, body: string): Promise<{ status: number; allowed?: boolean }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: 'POST', rejectUnauthorized: false, headers: { 'content-type': 'application/json' } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          resolve({
            status: res.statusCode ?? 0,
            allowed:
              res.statusCode === 200
                ? (JSON.parse(text) as { response?: { allowed?: boolean } }).response?.allowed
                : undefined,
          });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * What the process's RSS holds, from its own /metrics (prom-client's default process metrics): V8's
 * heap by space, and the rest.
 */
async function breakdown(ops: string): Promise<string> {
  const text = await (await fetch(`${ops.replace('[::]', '127.0.0.1')}/metrics`)).text();
  const value = (name: string, label = '') => {
    const line = text.split('\n').find((l) => l.startsWith(name + (label ? `{${label}` : ' ')));
    return line ? Number(line.split(' ').pop()) : NaN;
  };
  const spaces = ['new', 'old', 'code', 'large_object', 'trusted'].map(
    (sp) => `${sp} ${mib(value('nodejs_heap_space_size_total_bytes', `space="${sp}"`))}`,
  );
  return `heap committed ${mib(value('nodejs_heap_size_total_bytes'))} MiB (by space: ${spaces.join(', ')}), heap used ${mib(value('nodejs_heap_size_used_bytes'))} MiB, external ${mib(value('nodejs_external_memory_bytes'))} MiB, RSS ${mib(value('process_resident_memory_bytes'))} MiB`;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const mib = (bytes: number) => (bytes / MiB).toFixed(0);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/**
 * A loopback HTTPS stand-in for the API server: the CRD (the embedded one) for the GET, its watch
 * held open after one ADDED event, an empty JobList; and a kubeconfig that reaches it.
 */
async function startStubApiServer(dir: string): Promise<{ kubeconfig: string; close(): void }> {
  const crd = JSON.parse(await readFile(path.join(root, 'src/embedded/trainjob-crd.json'), 'utf8'));
  crd.metadata.resourceVersion = '1';
  const crdJson = JSON.stringify(crd);
  const pair = await generateSelfSigned({ ipAddresses: ['127.0.0.1'] });
  const server = createHttpsServer({ cert: pair.cert, key: pair.key }, (req, res) => {
    const url = new URL(req.url ?? '/', 'https://x');
    if (url.pathname.startsWith('/apis/apiextensions.k8s.io/v1/customresourcedefinitions')) {
      if (url.searchParams.get('watch') === 'true') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write(`{"type":"ADDED","object":${crdJson}}\n`);
        return;
      }
      return void res.writeHead(200, { 'content-type': 'application/json' }).end(crdJson);
    }
    if (url.pathname.endsWith('/jobs'))
      return void res
        .writeHead(200, { 'content-type': 'application/json' })
        .end('{"kind":"JobList","apiVersion":"batch/v1","metadata":{},"items":[]}');
    res
      .writeHead(404, { 'content-type': 'application/json' })
      .end('{"kind":"Status","code":404,"message":"not in the stub"}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const b64 = (b: Buffer | string) => Buffer.from(b).toString('base64');
  const kubeconfig = path.join(dir, 'kubeconfig');
  // YAML, as kubeconfigs are: reading it loads the yaml package, as it would in the pod.
  const port = (server.address() as { port: number }).port;
  await writeFile(
    kubeconfig,
    `apiVersion: v1\nkind: Config\nclusters:\n- name: stub\n  cluster:\n    server: https://127.0.0.1:${port}\n    certificate-authority-data: ${b64(pair.cert)}\nusers:\n- name: u\n  user:\n    token: bench\ncontexts:\n- name: stub\n  context: {cluster: stub, user: u}\ncurrent-context: stub\n`,
  );
  return {
    kubeconfig,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

interface LoadRun {
  samples: { t: number; rss: number }[];
  end: Memory;
  r: autocannon.Result;
}

/** The load on one server, its RSS sampled every SAMPLE_MS from just before it to its end. */
async function underLoad(s: Server): Promise<LoadRun> {
  const samples: { t: number; rss: number }[] = [{ t: 0, rss: processMemory(s.pid).rss }];
  const began = performance.now();
  const timer = setInterval(
    () => samples.push({ t: Math.round((performance.now() - began) / 1000), rss: processMemory(s.pid).rss }),
    SAMPLE_MS,
  );
  const r = await autocannon({
    url: s.admission + ROUTE,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
    connections,
    duration: seconds,
    tlsOptions: { rejectUnauthorized: false },
  } as autocannon.Options);
  clearInterval(timer);
  const end = processMemory(s.pid);
  samples.push({ t: Math.round((performance.now() - began) / 1000), rss: end.rss });
  return { samples, end, r };
}

function printSamples(samples: LoadRun['samples'], end: Memory): void {
  const after60 = samples.find((x) => x.t >= 60);
  const steady = samples.filter((x) => x.t >= 60);
  const lo = Math.min(...steady.map((x) => x.rss));
  const hi = Math.max(...steady.map((x) => x.rss));
  print(
    `- RSS idle ${mib(samples[0].rss)} MiB; after 60 s of load **${after60 ? mib(after60.rss) : '-'} MiB**; from 60 s to the end ${mib(lo)}–${mib(hi)} MiB (spread ${steady.length > 1 ? (((hi - lo) / lo) * 100).toFixed(1) : '-'} %); peak (VmHWM) ${mib(end.peak)} MiB`,
  );
  print();
  print('| s | ' + samples.map((x) => x.t).join(' | ') + ' |');
  print('| --- | ' + samples.map(() => '---:').join(' | ') + ' |');
  print('| RSS MiB | ' + samples.map((x) => mib(x.rss)).join(' | ') + ' |');
  print();
}

const workDir = await mkdtemp(path.join(tmpdir(), 'tjw-rss-'));
const stub = cluster === 'stub' ? await startStubApiServer(workDir) : undefined;
const clusterFlags = stub ? ['--kubeconfig', stub.kubeconfig] : [];
// Each line as it comes, so a run that fails late keeps what it measured.
const print = (s = '') => process.stdout.write(`${s}\n`);
try {
  print(
    `- date: ${new Date().toISOString()}; Node ${process.version}; entry ${entry} (${bin}); node flags: ${nodeFlags.join(' ') || 'none'}; serve flags: ${[...(stub ? ['--kubeconfig (loopback stub API server: CRD GET and watch)'] : []), ...serveFlags].join(' ') || 'none (offline, embedded CRD)'}`,
  );
  print(`- ${pinning.note}; load average ${loadavg()[0].toFixed(2)} at the start`);
  // The first start generates the self-signed certificate; the rest reuse it, as a restart does.
  const startMs: number[] = [];
  const idle: number[] = [];
  for (let i = 0; i <= starts; i++) {
    const s = await startServer(workDir);
    await sleep(2_000);
    if (i === starts) print(`- idle, last start: ${await breakdown(s.ops)}`);
    if (i > 0) {
      startMs.push(s.startMs);
      idle.push(processMemory(s.pid).rss);
    }
    await s.stop();
  }
  if (starts > 0) {
    print(
      `- start-up to serving (certificate reused), ${starts} starts: median ${median(startMs).toFixed(0)} ms (${startMs.map((m) => m.toFixed(0)).join(', ')})`,
    );
    print(`- idle RSS 2 s after serving: median ${mib(median(idle))} MiB (${idle.map(mib).join(', ')})`);
  }
  if (seconds > 0) {
    const s = await startServer(workDir);
    let served: LoadRun;
    try {
      await sleep(2_000);
      served = await underLoad(s);
      const { samples, end, r } = served;
      if (r.non2xx > 0 || r.errors > 0) print(`- **${r.non2xx} non-2xx answers and ${r.errors} errors**`);
      print(`- right after the load: ${await breakdown(s.ops)}`);
      print(
        `- load: ${connections} connections for ${seconds} s, ${r.requests.average.toFixed(0)} req/s, p50 ${r.latency.p50} ms, p99 ${r.latency.p99} ms; load average ${loadavg()[0].toFixed(2)} at the end`,
      );
      printSamples(samples, end);
      if (worst > 0) {
        const big = largestUpdate(body);
        const answers = await Promise.all(Array.from({ length: worst }, () => post(s.admission + ROUTE, big)));
        const allowed = answers.filter((a) => a.status === 200 && a.allowed === true).length;
        const m = processMemory(s.pid);
        print(
          `- then ${worst} UPDATEs of ${(Buffer.byteLength(big) / MiB).toFixed(2)} MiB sent at once: ${allowed} of ${worst} answered allowed${allowed === worst ? '' : ` (**${answers.map((a) => a.status).join(', ')}**)`}; RSS after ${mib(m.rss)} MiB, peak (VmHWM) ${mib(m.peak)} MiB`,
        );
      }
    } finally {
      await s.stop();
    }
    if (baseline === 'bare') {
      const b = await startBare(workDir);
      try {
        await sleep(2_000);
        const bare = await underLoad(b);
        const { samples, end, r } = bare;
        print();
        print(
          `- the baseline, bare Fastify TLS (JavaScript, same node flags and pinning): ${r.requests.average.toFixed(0)} req/s, p50 ${r.latency.p50} ms, p99 ${r.latency.p99} ms${r.non2xx + r.errors > 0 ? `; **${r.non2xx} non-2xx, ${r.errors} errors**` : ''}`,
        );
        printSamples(samples, end);
        const at = (run: LoadRun, t: number) => run.samples.find((x) => x.t >= t)?.rss ?? NaN;
        const x = (a: number, b: number) => `${(a / b).toFixed(2)}×`;
        print(
          `- **serve against bare Fastify**: idle ${x(served.samples[0].rss, samples[0].rss)}; after 60 s of load ${x(at(served, 60), at(bare, 60))}; at the end ${x(served.end.rss, end.rss)}; peak ${x(served.end.peak, end.peak)} (target: within 1.1× after the load)`,
        );
      } finally {
        await b.stop();
      }
    }
  }
} finally {
  stub?.close();
  await rm(workDir, { recursive: true, force: true });
}
