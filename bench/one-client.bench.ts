// The reconciler sidecar on one kube client (issue 18, item 1), before and after, in one run: the
// same world (the real control plane, JobSet's and Trainer's managers, N suspended TrainJobs and
// the JobSets Trainer built for them) watched in turn by the sidecar of a base commit
// (@kubernetes/client-node's informers, whole objects) and by this tree's (the project's own
// client, informers keeping only what the decisions read), rounds interleaved:
//
// - start-up: from the process's spawn until /readyz answers 200 (every watch listed);
// - idle RSS: leading (no leader election: one replica), queue empty, BENCH_IDLE_S after that;
// - what it imports: the npm packages the process loaded (bench/lib/record-loads.ts), the bytes
//   of their loaded files and their size on disk; client-node's share named.
//
//   flock /tmp/tjw-e2e.lock node bench/one-client.bench.ts
//
// Env: BENCH_BASE (the base commit, default the merge base with main), BENCH_TRAINJOBS (200),
// BENCH_ROUNDS (2), BENCH_IDLE_S (60), BENCH_OUT=FILE.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import path from 'node:path';
import {
  controlPlaneAvailability,
  httpGet,
  projectRoot,
  upstreamControllersAvailability,
  waitFor,
} from '../test/harness/index.ts';
import { startSidecar } from '../test/reconciler/support/sidecar.ts';
import { RECONCILER_SA, startWorld } from '../test/reconciler/support/world.ts';
import { createSuspendedTrainJobs } from './lib/suspended-trainjobs.ts';
import { mib, ratio, table } from './lib/markdown.ts';
import { loadedPackages, type LoadedPackage } from './lib/packages.ts';
import { processMemory } from './lib/proc.ts';

const count = Number(process.env.BENCH_TRAINJOBS ?? 200);
const rounds = Number(process.env.BENCH_ROUNDS ?? 2);
const idleSeconds = Number(process.env.BENCH_IDLE_S ?? 60);
const NS = 'bench';
const git = (...args: string[]) => execFileSync('git', args, { cwd: projectRoot, encoding: 'utf8' }).trim();
const base = process.env.BENCH_BASE ?? git('merge-base', 'HEAD', 'main');
const head = git('rev-parse', '--short', 'HEAD');

/** The base commit's tree beside this one, sharing its node_modules (the same lockfile). */
function baseTree(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'tjw-base-'));
  execFileSync('sh', ['-c', `git archive ${base} | tar -x -C ${dir}`], { cwd: projectRoot });
  symlinkSync(path.join(projectRoot, 'node_modules'), path.join(dir, 'node_modules'));
  return dir;
}

interface Run {
  startMs: number;
  idleRss: number;
  peakRss: number;
  packages: LoadedPackage[];
}

async function runSidecar(w: Awaited<ReturnType<typeof startWorld>>, root: string, name: string): Promise<Run> {
  const record = path.join(tmpdir(), `tjw-loads-${name}-${process.pid}`);
  rmSync(record, { force: true });
  const saved = { NODE_OPTIONS: process.env.NODE_OPTIONS, TJW_RECORD_LOADS: process.env.TJW_RECORD_LOADS };
  process.env.NODE_OPTIONS = `${saved.NODE_OPTIONS ?? ''} --import ${path.join(projectRoot, 'bench/lib/record-loads.ts')}`;
  process.env.TJW_RECORD_LOADS = record;
  const t0 = performance.now();
  let sidecar: Awaited<ReturnType<typeof startSidecar>>;
  try {
    sidecar = await startSidecar(w.cp, {
      name,
      mode: 'companion',
      kubeconfig: w.reconcilerKubeconfig.path,
      leaseNamespace: RECONCILER_SA.namespace,
      extraArgs: ['--no-leader-election', '--log-level', 'info'],
      root,
      waitReady: false,
    });
  } finally {
    for (const [k, v] of Object.entries(saved))
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
  }
  // Polled every 20 ms (startSidecar's own wait polls every 200).
  await waitFor(
    `${name} ready`,
    async () => (await httpGet(`http://127.0.0.1:${sidecar.opsPort}/readyz`)).status === 200,
    {
      process: sidecar.proc,
      timeoutMs: 120_000,
      intervalMs: 20,
    },
  );
  const startMs = performance.now() - t0;
  await waitFor(
    `${name}: queue empty`,
    async () => ((await sidecar.metric('trainjob_reconciler_queue_depth')) === 0 ? true : undefined),
    { timeoutMs: 300_000, intervalMs: 1_000 },
  );
  await new Promise((r) => setTimeout(r, idleSeconds * 1000));
  const memory = processMemory(sidecar.proc.pid);
  await sidecar.proc.stop();
  return { startMs, idleRss: memory.rss, peakRss: memory.peak, packages: loadedPackages(record) };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
const sum = (ps: LoadedPackage[], f: (p: LoadedPackage) => number) => ps.reduce((s, p) => s + f(p), 0);

/** The world with its TrainJobs, then the rounds: each round the base's sidecar, then this tree's. */
async function measure(): Promise<{ runs: Record<'base' | 'head', Run[]>; jobSets: number }> {
  const baseRoot = baseTree();
  const w = await startWorld({ trainer: true, webhook: false });
  const runs: Record<'base' | 'head', Run[]> = { base: [], head: [] };
  try {
    await w.cp.kubectl(['create', 'namespace', NS]);
    const jobSets = await createSuspendedTrainJobs(w, NS, count);
    for (let r = 0; r < rounds; r++) {
      runs.base.push(await runSidecar(w, baseRoot, `base-${r}`));
      runs.head.push(await runSidecar(w, projectRoot, `head-${r}`));
      process.stderr.write(`  round ${r + 1}/${rounds} done\n`);
    }
    return { runs, jobSets };
  } finally {
    await w.stop();
    rmSync(baseRoot, { recursive: true, force: true });
  }
}

async function main() {
  for (const a of [controlPlaneAvailability(), upstreamControllersAvailability()])
    if (!a.available) throw new Error(`cannot run: ${a.reason}`);
  const started = new Date();
  const load = [loadavg()[0]];
  const { runs, jobSets } = await measure();
  load.push(loadavg()[0]);
  const m = (which: 'base' | 'head', f: (r: Run) => number) => median(runs[which].map(f));
  const rows = [
    ['start-up to ready, ms (median)', (r: Run) => r.startMs, (x: number) => x.toFixed(0)],
    ['idle RSS, MiB (median)', (r: Run) => r.idleRss, mib],
    ['peak RSS, MiB (median)', (r: Run) => r.peakRss, mib],
  ] as const;
  const pk = (which: 'base' | 'head') => runs[which][0].packages;
  const clientNode = (ps: LoadedPackage[]) => ps.filter((p) => !pk('head').some((q) => q.name === p.name));
  const report = [
    `## One kube client for the reconciler (\`node bench/one-client.bench.ts\`)`,
    '',
    `- date: ${started.toISOString()}; ${cpus().length} cores (${cpus()[0]?.model}), ${(totalmem() / 2 ** 30).toFixed(1)} GiB; load average ${load[0].toFixed(2)} at the start, ${load[1].toFixed(2)} at the end`,
    `- base ${base.slice(0, 7)} (client-node informers) against ${head} (the project's client, cache-shape.ts), the same world: companion mode beside Trainer v2.3.0 and JobSet v0.12.0, ${count} suspended torch TrainJobs and Trainer's ${jobSets} JobSets; ${rounds} interleaved rounds, one sidecar at a time (--no-leader-election); idle: ${idleSeconds} s after its queue emptied, RSS from /proc/PID/status`,
    '',
    table(
      ['sidecar', `base ${base.slice(0, 7)}`, head, 'after / before'],
      rows.map(([what, f, fmt]) => [what, fmt(m('base', f)), fmt(m('head', f)), ratio(m('head', f), m('base', f))]),
    ),
    '',
    table(
      ['npm packages the sidecar loaded', `base ${base.slice(0, 7)}`, head],
      [
        ['packages', String(pk('base').length), String(pk('head').length)],
        [
          'their loaded files, MiB',
          mib(sum(pk('base'), (p) => p.loadedBytes)),
          mib(sum(pk('head'), (p) => p.loadedBytes)),
        ],
        [
          'their size on disk (du), MiB',
          mib(sum(pk('base'), (p) => p.diskBytes)),
          mib(sum(pk('head'), (p) => p.diskBytes)),
        ],
      ],
    ),
    '',
    `Loaded by the base only (client-node and what it brings): ${clientNode(pk('base')).length} packages, ${mib(sum(clientNode(pk('base')), (p) => p.loadedBytes))} MiB loaded, ${mib(sum(clientNode(pk('base')), (p) => p.diskBytes))} MiB on disk; the largest: ${clientNode(
      pk('base'),
    )
      .slice(0, 6)
      .map((p) => `${p.name} ${mib(p.diskBytes)}`)
      .join(', ')}.`,
    '',
  ].join('\n');
  process.stdout.write(report);
  if (process.env.BENCH_OUT) writeFileSync(process.env.BENCH_OUT, report);
}

await main();
