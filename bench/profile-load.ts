// Load for profiling (bench/PROFILE.md): starts each named server pinned to core 0, loads it
// from this process (run it pinned to core 1), and prints requests/s, p50, p99 and the server's
// RSS after the load, each with its ratio to `bare` when bare is among the servers.
//   flock /tmp/tjw-e2e.lock taskset -c 1 node bench/profile-load.ts [servers...]
//   env: SECONDS_EACH (default 10), CONNECTIONS (16), BODY (a file; default the allowed UPDATE),
//        SERVER_FLAGS (extra node flags for the server, e.g. "--cpu-prof --cpu-prof-dir=/tmp/p"),
//        ROUNDS (1; rounds interleave the servers)
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const seconds = Number(process.env.SECONDS_EACH ?? 10);
const connections = Number(process.env.CONNECTIONS ?? 16);
const rounds = Number(process.env.ROUNDS ?? 1);
const bodyFile = process.env.BODY ?? path.join(root, 'examples/allowed-numnodes-suspended.json');
const body = readFileSync(bodyFile, 'utf8');
const serverFlags = (process.env.SERVER_FLAGS ?? '').split(' ').filter(Boolean);
const kinds = process.argv.slice(2).length > 0 ? process.argv.slice(2) : ['bare', 'table', 'embedded', 'upstream'];
const PATH = '/validate-trainer-kubeflow-org-v1alpha1-trainjob';

function rssKiB(pid: number): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN);
  return { rss: field('VmRSS'), hwm: field('VmHWM') };
}

async function start(kind: string) {
  const started = performance.now();
  const child = spawn(
    'taskset',
    ['-c', '0', process.execPath, ...serverFlags, path.join(root, 'bench/profile-server.ts'), kind],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.once('data', (d: Buffer) => resolve(d.toString().trim()));
    child.once('exit', (code) => reject(new Error(`${kind} exited with ${code}`)));
  });
  return {
    url,
    pid: child.pid!,
    startMs: performance.now() - started,
    stop: () =>
      new Promise<void>((r) => {
        child.once('exit', () => r());
        child.kill('SIGTERM');
      }),
  };
}

async function load(url: string, duration: number) {
  const r = await autocannon({
    url: url + PATH,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
    connections,
    duration,
    tlsOptions: { rejectUnauthorized: false },
  } as autocannon.Options);
  if (r.non2xx > 0 || r.errors > 0) throw new Error(`${r.non2xx} non-2xx answers and ${r.errors} errors`);
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99 };
}

const results: Record<string, { rps: number; p50: number; p99: number; rss: number; hwm: number; startMs: number }[]> =
  {};
for (let round = 0; round < rounds; round++) {
  for (const kind of kinds) {
    const s = await start(kind);
    try {
      await load(s.url, 2);
      const r = await load(s.url, seconds);
      (results[kind] ??= []).push({ ...r, ...rssKiB(s.pid), startMs: s.startMs });
    } finally {
      await s.stop();
    }
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const bare = results.bare ? median(results.bare.map((r) => r.rps)) : undefined;
console.log(
  `${path.basename(bodyFile)} (${body.length} B), ${connections} connections, ${seconds} s, ${rounds} round(s), medians:`,
);
for (const [kind, rs] of Object.entries(results)) {
  const rps = median(rs.map((r) => r.rps));
  const ratio = bare ? ` (x${(rps / bare).toFixed(2)})` : '';
  console.log(
    `${kind.padEnd(10)} ${rps.toFixed(0).padStart(6)} req/s${ratio}  p50 ${median(rs.map((r) => r.p50))} ms  p99 ${median(rs.map((r) => r.p99))} ms  RSS ${(median(rs.map((r) => r.rss)) / 1024).toFixed(0)} MiB (peak ${(median(rs.map((r) => r.hwm)) / 1024).toFixed(0)})  up in ${median(rs.map((r) => r.startMs)).toFixed(0)} ms`,
  );
}
