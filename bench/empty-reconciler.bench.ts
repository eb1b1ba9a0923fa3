// What an empty reconciler holds (issue 28, item 4): `trainjob-webhook reconcile` in companion mode,
// with the shipped reconciler container's NODE_OPTIONS, against a control plane with no TrainJob
// (test/reconciler/support/world.ts, without Trainer's manager or the webhook). Once it leads and
// BENCH_IDLE_S have passed, it reads the process's RSS from /proc, what V8 says it holds (a probe
// preloaded with --import: heap spaces, code, external memory), and a heap snapshot it writes on
// SIGUSR2 (--heapsnapshot-signal): its self size by type and by origin (node's own modules, each npm
// package, the project's files), and the modules it loaded (the snapshot's scripts).
//
//   flock /tmp/tjw-e2e.lock node bench/empty-reconciler.bench.ts
//
// Env: BENCH_VARIANTS  label=root, comma-separated: the checkout (or its `dist` after `npm run
//                      build`, as the image runs it) whose bin/trainjob-webhook.js runs (default
//                      "js=<this checkout>/dist,ts=<this checkout>")
//      BENCH_ROUNDS (1): each variant started this many times, interleaved; medians reported
//      BENCH_IDLE_S (60), BENCH_OUT=FILE, BENCH_KEEP=DIR (keep the heap snapshots and readings there)
//      BENCH_NODE_OPTIONS: node flags in place of the container's (e.g. "--max-semi-space-size=1")
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { stripTypeScriptTypes } from 'node:module';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import path from 'node:path';
import { controlPlaneAvailability, projectRoot, waitFor } from '../test/harness/index.ts';
import { startSidecar } from '../test/reconciler/support/sidecar.ts';
import { RECONCILER_SA, startWorld } from '../test/reconciler/support/world.ts';
import { summarizeHeap, originOf, type HeapSummary } from './lib/heap-summary.ts';
import { mib, table } from './lib/markdown.ts';
import type { ProbeReading } from './lib/memory-probe.ts';
import { processMemory, type Memory } from './lib/proc.ts';
import { shippedReconcilerNodeOptions } from './lib/reconciler-node-options.ts';
import { sumOf } from './lib/sidecar-probe.ts';
import { median } from './lib/stats.ts';

const keepProbe = process.env.BENCH_KEEP;
const idleSeconds = Number(process.env.BENCH_IDLE_S ?? 60);
const rounds = Number(process.env.BENCH_ROUNDS ?? 1);
const variants = (process.env.BENCH_VARIANTS ?? `js=${path.join(projectRoot, 'dist')},ts=${projectRoot}`)
  .split(',')
  .map((v) => {
    const [label, root] = v.split('=');
    if (!label || !root || !existsSync(path.join(root, 'bin/trainjob-webhook.js')))
      throw new Error(`BENCH_VARIANTS: ${v} is not label=root with a bin/trainjob-webhook.js (npm run build for dist)`);
    return { label, root };
  });
const progress = (line: string) => process.stderr.write(`  ${line}\n`);

/** The NODE_OPTIONS of the shipped reconciler container, or BENCH_NODE_OPTIONS. */
const reconcilerNodeOptions = (): string => process.env.BENCH_NODE_OPTIONS ?? shippedReconcilerNodeOptions();

interface Reading {
  proc: Memory;
  probe: ProbeReading;
  heap: HeapSummary;
}

const scratch = mkdtempSync(path.join(tmpdir(), 'tjw-empty-reconciler-'));
// The probe as JavaScript: a .ts preload would make the compiled variant load Node's type stripper.
const probe = path.join(scratch, 'memory-probe.mjs');
writeFileSync(
  probe,
  stripTypeScriptTypes(readFileSync(path.join(projectRoot, 'bench/lib/memory-probe.ts'), 'utf8'), { mode: 'strip' }),
);

async function measure(w: Awaited<ReturnType<typeof startWorld>>, label: string, root: string): Promise<Reading> {
  const dir = mkdtempSync(path.join(scratch, `${label}-`));
  const probeFile = path.join(dir, 'probe.json');
  const sidecar = await startSidecar(w.cp, {
    name: `reconciler-${label}`,
    mode: 'companion',
    kubeconfig: w.reconcilerKubeconfig.path,
    leaseNamespace: RECONCILER_SA.namespace,
    handoffPort: w.handoffPort,
    root,
    env: {
      NODE_OPTIONS: `${reconcilerNodeOptions()} --import=${probe} --heapsnapshot-signal=SIGUSR2 --diagnostic-dir=${dir}`,
      TJW_MEMORY_PROBE: probeFile,
    },
  });
  try {
    const scrape = async () => (await fetch(`http://127.0.0.1:${sidecar.opsPort}/metrics`)).text();
    await waitFor('the sidecar leading', async () =>
      sumOf(await scrape(), 'trainjob_reconciler_leader') === 1 ? true : undefined,
    );
    await new Promise((r) => setTimeout(r, idleSeconds * 1000));
    // Read before the snapshot: writing one grows the process.
    const proc = processMemory(sidecar.proc.pid);
    const probeReading = JSON.parse(readFileSync(probeFile, 'utf8')) as ProbeReading;
    process.kill(sidecar.proc.pid, 'SIGUSR2');
    const snapshot = await waitFor(
      'the heap snapshot written',
      () => {
        const f = readdirSync(dir).find((n) => n.endsWith('.heapsnapshot'));
        if (!f) return undefined;
        const file = path.join(dir, f);
        const size = statSync(file).size;
        // Complete once it parses: the writer ends the JSON last.
        if (size === 0 || !readFileSync(file, 'utf8').trimEnd().endsWith('}')) return undefined;
        return file;
      },
      { timeoutMs: 120_000, intervalMs: 500 },
    );
    const heap = summarizeHeap(snapshot);
    if (keepProbe) {
      writeFileSync(path.join(keepProbe, `${label}.heapsnapshot`), readFileSync(snapshot));
      writeFileSync(path.join(keepProbe, `${label}.probe.json`), JSON.stringify(probeReading, null, 1));
    }
    progress(`${label}: RSS ${mib(proc.rss)} MiB, heap snapshot ${mib(heap.total)} MiB`);
    return { proc, probe: probeReading, heap };
  } finally {
    await sidecar.proc.stop();
  }
}

const space = (r: Reading, name: string) => r.probe.spaces.find((s) => s.name === name);
const packagesOf = (r: Reading) =>
  new Set(r.heap.scripts.map(originOf).filter((o) => o !== 'node' && o !== 'project' && o !== ''));
const projectFiles = (r: Reading) =>
  r.heap.scripts.filter((u) => originOf(u) === 'project' && u.includes('/src/')).length;

function report(readings: Map<string, Reading[]>, started: Date, load: number[]): string {
  const labels = [...readings.keys()];
  const med = (label: string, f: (r: Reading) => number) => median(readings.get(label)!.map(f));
  const row = (what: string, f: (r: Reading) => number, fmt: (x: number) => string = mib) => [
    what,
    ...labels.map((l) => fmt(med(l, f))),
  ];
  const first = (label: string) => readings.get(label)![0];
  const origins = new Set(labels.flatMap((l) => Object.keys(first(l).heap.byOrigin)));
  const topOrigins = [...origins]
    .map((o) => ({ o, size: Math.max(...labels.map((l) => first(l).heap.byOrigin[o] ?? 0)) }))
    .sort((a, b) => b.size - a.size)
    .slice(0, 12);
  return [
    '## What an empty reconciler holds (`node bench/empty-reconciler.bench.ts`)',
    '',
    `- date: ${started.toISOString()}; ${cpus().length} cores (${cpus()[0]?.model}), ${(totalmem() / 2 ** 30).toFixed(1)} GiB; load average ${load[0].toFixed(2)} at the start, ${load[1].toFixed(2)} at the end`,
    `- \`reconcile\` in companion mode, no TrainJob in the cluster, NODE_OPTIONS \`${reconcilerNodeOptions()}\` (${process.env.BENCH_NODE_OPTIONS !== undefined ? 'BENCH_NODE_OPTIONS' : "the reconciler container's"}) plus the probe; read leading, ${idleSeconds} s after it started leading; ${rounds} round(s), medians`,
    `- variants: ${variants.map((v) => `${v.label} = \`${v.root}\``).join(', ')}`,
    '',
    table(
      ['MiB', ...labels],
      [
        row('RSS (VmRSS)', (r) => r.proc.rss),
        row('peak RSS (VmHWM)', (r) => r.proc.peak),
        row('V8 heap committed (heapTotal)', (r) => r.probe.memory.heapTotal),
        row('  of which new space (committed)', (r) => space(r, 'new_space')?.size ?? NaN),
        row('  of which old space (committed)', (r) => space(r, 'old_space')?.size ?? NaN),
        row('  of which code space (committed)', (r) => space(r, 'code_space')?.size ?? NaN),
        row('V8 heap in use (heapUsed)', (r) => r.probe.memory.heapUsed),
        row('external (C++ objects bound to JS)', (r) => r.probe.memory.external),
        row('  of which array buffers', (r) => r.probe.memory.arrayBuffers),
        row('code and metadata; bytecode', (r) => r.probe.code.codeAndMetadata + r.probe.code.bytecodeAndMetadata),
        row(
          'RSS outside the V8 heap and external (node, libuv, malloc, stacks)',
          (r) => r.proc.rss - r.probe.memory.heapTotal - r.probe.memory.external,
        ),
        row('heap snapshot, live objects after a full GC', (r) => r.heap.total),
        row(
          '  strings',
          (r) =>
            (r.heap.byType.string ?? 0) +
            (r.heap.byType['concatenated string'] ?? 0) +
            (r.heap.byType['sliced string'] ?? 0),
        ),
        row('  code (functions, bytecode, scripts)', (r) => r.heap.byType.code ?? 0),
        row('  objects, arrays, closures, shapes', (r) =>
          ['object', 'array', 'closure', 'object shape', 'hidden'].reduce((s, t) => s + (r.heap.byType[t] ?? 0), 0),
        ),
        row('npm packages loaded', (r) => packagesOf(r).size, String),
        row('project files loaded (src/)', projectFiles, String),
      ],
    ),
    '',
    "Functions and their scripts in the heap snapshot by origin (the largest; MiB, each variant's first round):",
    '',
    table(
      ['origin', ...labels],
      topOrigins.map(({ o }) => [o, ...labels.map((l) => mib(first(l).heap.byOrigin[o] ?? 0))]),
    ),
    '',
    ...labels.map((l) => `npm packages loaded by ${l}: ${[...packagesOf(first(l))].sort().join(', ')}.`),
    '',
    ...labels.map(
      (l) =>
        `Largest constructors in ${l} (self size): ${first(l)
          .heap.constructors.slice(0, 8)
          .map((c) => `${c.name} ×${c.count} ${mib(c.size)}`)
          .join(', ')}.`,
    ),
    '',
  ].join('\n');
}

async function main() {
  const a = controlPlaneAvailability();
  if (!a.available) throw new Error(`cannot run: ${a.reason}`);
  const started = new Date();
  const load = [loadavg()[0]];
  const w = await startWorld({ trainer: false, webhook: false });
  const readings = new Map<string, Reading[]>(variants.map((v) => [v.label, []]));
  try {
    for (let r = 0; r < rounds; r++)
      for (const v of variants) readings.get(v.label)!.push(await measure(w, `${v.label}-${r}`, v.root));
  } finally {
    await w.stop();
    rmSync(scratch, { recursive: true, force: true });
  }
  load.push(loadavg()[0]);
  const out = report(readings, started, load);
  process.stdout.write(out);
  if (process.env.BENCH_OUT) writeFileSync(process.env.BENCH_OUT, out);
}

await main();
