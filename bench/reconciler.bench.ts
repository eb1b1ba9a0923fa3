// The reconciler sidecar's resident memory with 1,000 TrainJobs watched, and the API requests one
// rebuild costs. In the world of the reconciler's e2e suites (the real control plane, JobSet's and
// Trainer's managers, the project's RBAC), companion mode:
//
// 1. RSS of `trainjob-webhook reconcile` when idle, then after 1,000 suspended TrainJobs (so no
//    pods) have been created and Trainer has built their 1,000 JobSets (each with its suspended
//    Job), once the sidecar's queue is empty: what its watches hold for that many.
// 2. The requests of one rebuild, from the sidecar's own trainjob_reconciler_api_requests_total:
//    the measuring case of test/e2e/reconciler-rebuild-cost.test.ts, run as it is (it asserts the
//    bounds; this prints its count).
//
//   npm run bench:reconciler   (flock /tmp/tjw-e2e.lock npm run bench:reconciler on a shared machine)
//
// Env: BENCH_TRAINJOBS (default 1000), BENCH_WAIT_S (how long Trainer may take, default 900), BENCH_OUT=FILE.
import { spawnSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { cpus, loadavg, totalmem } from 'node:os';
import path from 'node:path';
import {
  controlPlaneAvailability,
  projectRoot,
  upstreamControllersAvailability,
  waitFor,
} from '../test/harness/index.ts';
import { startSidecar } from '../test/reconciler/support/sidecar.ts';
import { api, RECONCILER_SA, startWorld } from '../test/reconciler/support/world.ts';
import { createSuspendedTrainJobs } from './lib/suspended-trainjobs.ts';
import { mib, table } from './lib/markdown.ts';
import { processMemory, type Memory } from './lib/proc.ts';

const count = Number(process.env.BENCH_TRAINJOBS ?? 1000);
const waitSeconds = Number(process.env.BENCH_WAIT_S ?? 900);
const NS = 'bench';
const CONCURRENCY = 8;

async function rssWithTrainJobs(): Promise<{ rows: string[][]; jobSets: number; jobs: number; seconds: number }> {
  const w = await startWorld({ trainer: true, webhook: false });
  try {
    const a = api(w.cp);
    await w.cp.kubectl(['create', 'namespace', NS]);
    const sidecar = await startSidecar(w.cp, {
      name: 'reconciler',
      mode: 'companion',
      kubeconfig: w.reconcilerKubeconfig.path,
      leaseNamespace: RECONCILER_SA.namespace,
      handoffPort: w.handoffPort,
    });
    await waitFor(
      'the sidecar leading',
      async () => ((await sidecar.metric('trainjob_reconciler_leader')) === 1 ? true : undefined),
      { timeoutMs: 60_000 },
    );
    await new Promise((r) => setTimeout(r, 5_000));
    const idle = processMemory(sidecar.proc.pid);

    const t0 = Date.now();
    const jobSets = await createSuspendedTrainJobs(w, NS, count, { concurrency: CONCURRENCY, waitSeconds });
    const jobs = (await a.batch.listNamespacedJob({ namespace: NS })).items.length;
    await waitFor(
      'the sidecar queue empty',
      async () => ((await sidecar.metric('trainjob_reconciler_queue_depth')) === 0 ? true : undefined),
      { timeoutMs: 300_000, intervalMs: 2_000 },
    );
    const seconds = (Date.now() - t0) / 1000;
    await new Promise((r) => setTimeout(r, 10_000));
    const loaded = processMemory(sidecar.proc.pid);
    const reconciles = await sidecar.metric('trainjob_reconciler_reconciles_total');
    const row = (what: string, m: Memory) => [what, mib(m.rss), mib(m.peak)];
    return {
      rows: [
        row('idle (leading, nothing to watch)', idle),
        row(`${count} TrainJobs, ${jobSets} JobSets, ${jobs} Jobs watched (${reconciles} reconciles done)`, loaded),
      ],
      jobSets,
      jobs,
      seconds,
    };
  } finally {
    await w.stop();
  }
}

/** Runs the rebuild-cost e2e's measuring case and returns the line it prints. */
function rebuildCost(): string {
  const r = spawnSync(
    process.execPath,
    [
      '--test',
      '--test-name-pattern',
      'costs a handful of requests',
      path.join(projectRoot, 'test/e2e/reconciler-rebuild-cost.test.ts'),
    ],
    { encoding: 'utf8', cwd: projectRoot, maxBuffer: 64 * 1024 * 1024 },
  );
  const lines = (r.stdout ?? '').split('\n').filter((l) => /# (one rebuild|\s+reconciles of the key)/.test(l));
  if (r.status !== 0 || lines.length === 0)
    throw new Error(
      `test/e2e/reconciler-rebuild-cost.test.ts failed (exit ${r.status}):\n${(r.stdout ?? '').slice(-3000)}\n${(r.stderr ?? '').slice(-2000)}`,
    );
  return lines.map((l) => l.replace(/^\s*#\s*/, '').trim()).join('; ');
}

async function main() {
  for (const a of [controlPlaneAvailability(), upstreamControllersAvailability()])
    if (!a.available) throw new Error(`cannot run: ${a.reason}`);
  const started = new Date();
  const load = [loadavg()[0]];
  const rss = await rssWithTrainJobs();
  const cost = rebuildCost();
  load.push(loadavg()[0]);
  const report = [
    '## The reconciler (`npm run bench:reconciler`)',
    '',
    `- date: ${started.toISOString()}; ${cpus().length} cores (${cpus()[0]?.model}), ${(totalmem() / 2 ** 30).toFixed(1)} GiB; load average ${load[0].toFixed(2)} at the start, ${load[1].toFixed(2)} at the end`,
    `- companion mode beside Trainer v2.3.0 and JobSet v0.12.0 (the e2e world, not pinned); ${count} suspended torch TrainJobs created ${CONCURRENCY} at a time; Trainer built their JobSets and the sidecar's queue was empty after ${rss.seconds.toFixed(0)} s; RSS read 10 s later from /proc/PID/status`,
    '',
    table(['sidecar (`trainjob-webhook reconcile`)', 'RSS MiB', 'peak RSS MiB'], rss.rows),
    '',
    `One rebuild (test/e2e/reconciler-rebuild-cost.test.ts, which also asserts the bounds): ${cost}.`,
    '',
  ].join('\n');
  process.stdout.write(report);
  if (process.env.BENCH_OUT) await writeFile(process.env.BENCH_OUT, report);
}

await main();
