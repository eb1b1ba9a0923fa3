// What the reconcile command costs to load, before and after one kube client, with no cluster: in
// a fresh Node process per round, `import('src/commands/reconcile.ts')` of a base commit's tree
// and of this tree (type stripping in both), interleaved: the import's wall time, RSS after it,
// and the npm packages it loaded (bench/lib/record-loads.ts): their count, the bytes of their
// loaded files, their size on disk. Lazy imports (a kubeconfig's yaml, client-node for an exec
// user) are not in it: bench/one-client.bench.ts measures the running sidecar.
//
//   flock /tmp/tjw-e2e.lock node bench/reconciler-imports.bench.ts
//
// Env: BENCH_BASE (default the merge base with main), BENCH_ROUNDS (5), BENCH_OUT=FILE.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import path from 'node:path';
import { projectRoot } from '../test/harness/index.ts';
import { mib, ratio, table } from './lib/markdown.ts';
import { loadedPackages, type LoadedPackage } from './lib/packages.ts';

const rounds = Number(process.env.BENCH_ROUNDS ?? 5);
const git = (...args: string[]) => execFileSync('git', args, { cwd: projectRoot, encoding: 'utf8' }).trim();
const base = process.env.BENCH_BASE ?? git('merge-base', 'HEAD', 'main');
const head = git('rev-parse', '--short', 'HEAD');
const hook = path.join(projectRoot, 'bench/lib/record-loads.ts');

interface Load {
  ms: number;
  rss: number;
  packages: LoadedPackage[];
}

function loadIn(root: string): Load {
  const record = path.join(tmpdir(), `tjw-imports-${process.pid}`);
  rmSync(record, { force: true });
  const out = execFileSync(
    process.execPath,
    [
      '--import',
      hook,
      '--input-type=module',
      '-e',
      "const t0 = performance.now(); await import('./src/commands/reconcile.ts'); console.log(JSON.stringify({ ms: performance.now() - t0, rss: process.memoryUsage().rss }))",
    ],
    { cwd: root, encoding: 'utf8', env: { ...process.env, TJW_RECORD_LOADS: record } },
  );
  const { ms, rss } = JSON.parse(out.trim().split('\n').pop()!) as { ms: number; rss: number };
  return { ms, rss, packages: loadedPackages(record) };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
const sum = (ps: LoadedPackage[], f: (p: LoadedPackage) => number) => ps.reduce((s, p) => s + f(p), 0);

function main() {
  const started = new Date();
  const load = [loadavg()[0]];
  const baseRoot = mkdtempSync(path.join(tmpdir(), 'tjw-base-'));
  execFileSync('sh', ['-c', `git archive ${base} | tar -x -C ${baseRoot}`], { cwd: projectRoot });
  symlinkSync(path.join(projectRoot, 'node_modules'), path.join(baseRoot, 'node_modules'));
  const runs: Record<'base' | 'head', Load[]> = { base: [], head: [] };
  try {
    for (let r = 0; r < rounds; r++) {
      runs.base.push(loadIn(baseRoot));
      runs.head.push(loadIn(projectRoot));
    }
  } finally {
    rmSync(baseRoot, { recursive: true, force: true });
  }
  load.push(loadavg()[0]);
  const m = (w: 'base' | 'head', f: (l: Load) => number) => median(runs[w].map(f));
  const pk = (w: 'base' | 'head') => runs[w][0].packages;
  const row = (what: string, f: (w: 'base' | 'head') => number, fmt: (x: number) => string) => [
    what,
    fmt(f('base')),
    fmt(f('head')),
    ratio(f('head'), f('base')),
  ];
  const only = pk('base').filter((p) => !pk('head').some((q) => q.name === p.name));
  const report = [
    '## What the reconcile command loads (`node bench/reconciler-imports.bench.ts`)',
    '',
    `- date: ${started.toISOString()}; ${cpus().length} cores (${cpus()[0]?.model}), ${(totalmem() / 2 ** 30).toFixed(1)} GiB; load average ${load[0].toFixed(2)} at the start, ${load[1].toFixed(2)} at the end`,
    `- base ${base.slice(0, 7)} against ${head}: \`import('src/commands/reconcile.ts')\` in a fresh process, ${rounds} interleaved rounds (medians)`,
    '',
    table(
      ['reconcile command', `base ${base.slice(0, 7)}`, head, 'after / before'],
      [
        row(
          'import, ms',
          (w) => m(w, (l) => l.ms),
          (x) => x.toFixed(0),
        ),
        row('RSS after it, MiB', (w) => m(w, (l) => l.rss), mib),
        row('npm packages loaded', (w) => pk(w).length, String),
        row('their loaded files, MiB', (w) => sum(pk(w), (p) => p.loadedBytes), mib),
        row('their size on disk, MiB', (w) => sum(pk(w), (p) => p.diskBytes), mib),
      ],
    ),
    '',
    `Loaded by the base only: ${only.length} packages, ${mib(sum(only, (p) => p.diskBytes))} MiB on disk (${only
      .slice(0, 5)
      .map((p) => `${p.name} ${mib(p.diskBytes)}`)
      .join(', ')}, ...).`,
    '',
  ].join('\n');
  process.stdout.write(report);
  if (process.env.BENCH_OUT) writeFileSync(process.env.BENCH_OUT, report);
}

main();
