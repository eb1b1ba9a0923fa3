// Runs the version matrix (test/harness/binaries.ts matrixCells; docs/versions.md, "Supported versions"): the
// default cell runs the fault and end-to-end suites, every other cell the compatibility suite
// (test/compat/, the differential oracle, docs/answers.md's answers and the README's kubectl
// session), and some a default-cell suite again (cellExtraFiles). Each cell is a `node --test` run
// of its own with TJW_CELL set, one file at a time, its lines prefixed with the cell's name. Runs
// go side by side: the default cell's suites in two parts (the second: the upgrade, Helm and queue
// suites), then the other cells, each taking the next free slot; the last lines say what each run
// cost and which failed.
//   node hack/test-matrix.ts [--cells a,b] [--jobs N]     (default: every cell, 2 at a time)
import { spawn } from 'node:child_process';
import { globSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { isDefaultCell, matrixCells, type Cell } from '../test/harness/binaries.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/**
 * What the other cells run: the compatibility suite, the differential oracle (three enforcers, one
 * table), docs/answers.md's answers and README.md's kubectl session (every supported version
 * answers as the docs say).
 */
export const COMPAT_FILES = [
  'test/compat/**/*.test.ts',
  'test/e2e/differential.test.ts',
  'test/e2e/docs-answers.test.ts',
  'test/e2e/readme-session.test.ts',
];
/**
 * What a cell runs beyond COMPAT_FILES: suites of the default cell run again where a component of
 * theirs differs. The Kueue suites (Kueue's flows, and the plugin's under Kueue) run beside Kueue
 * KUEUE_NEXT_VERSION in Trainer v2.3.0's cell on the newer Kubernetes (whose Kueue that is,
 * test/harness/binaries.ts readVersions), so both Kueue versions run them beside the same Trainer;
 * that cell is short enough to take them without making CI's run longer (docs/testing.md).
 */
export function cellExtraFiles(cell: Pick<Cell, 'trainer' | 'k8sMinor'>): string[] {
  return cell.trainer === 'v2.3.0' && cell.k8sMinor === '1.37'
    ? ['test/e2e/kubectl-trainjob-kueue.test.ts', 'test/e2e/kueue.test.ts']
    : [];
}

/** The default cell's second part: the upgrade, Helm and queueing suites (about a third of its time). */
// node --test runs them in the order of their paths, whatever this list's; .ci/run builds their
// binaries in that order (scheduler-plugins for gang-scheduling, Kueue, then Trainer's other lines).
export const SECOND_PART = [
  'test/e2e/project-upgrade.test.ts',
  'test/e2e/crd-patch-restorer-helm.test.ts',
  'test/e2e/install-helm.test.ts',
  'test/e2e/crd-patch-lines.test.ts',
  'test/e2e/reconciler-cache-initializer.test.ts',
  'test/e2e/upgrade-strands-nothing.test.ts',
  'test/e2e/kueue.test.ts',
  'test/e2e/kubectl-trainjob-kueue.test.ts',
  'test/e2e/admission-survives-reconciler.test.ts',
  'test/e2e/gang-scheduling.test.ts',
];

/** What the default cell runs: every suite that needs the real control plane, in two parts. */
export function defaultCellParts(): string[][] {
  const all = [
    ...globSync('test/faults/**/*.test.ts', { cwd: root }),
    ...globSync('test/e2e/**/*.test.ts', { cwd: root }),
  ]
    .map((f) => f.split(path.sep).join('/'))
    .sort();
  const missing = SECOND_PART.filter((f) => !all.includes(f));
  if (missing.length > 0)
    throw new Error(`test-matrix: SECOND_PART names files that do not exist: ${missing.join(', ')}`);
  return [all.filter((f) => !SECOND_PART.includes(f)), SECOND_PART];
}

interface Run {
  cell: Cell;
  /** The run's name: the cell's, with the part for the default cell's two. */
  name: string;
  files: string[];
}

interface CellResult {
  run: Run;
  cell: Cell;
  code: number | null;
  seconds: number;
  summary: string[];
  /** What node's spec reporter listed under "failing tests" (failingTestLines). */
  failing: string[];
}

/** At most this many lines of a run's failing tests in the matrix's last lines. */
const MAX_FAILING_LINES = 24;

/** The spec reporter's error for a test whose suite ended first (its `before` hook failed, or it timed out). */
const CANCELLED_BY_PARENT = /did not finish before its parent and was cancelled/;

/**
 * The gist of the spec reporter's "✖ failing tests:" section (its last lines): each failing test's
 * place ("test at FILE:LINE:COL"), its name, and its error's first line, without the stack; the
 * tests their suite cancelled as one count after the rest, so the suite's own error (a `before`
 * hook's, say) comes first. The matrix's last lines then say what failed where: CI often keeps only
 * the tail of the log, and a test a `before` hook cancelled, or one that timed out, counts under
 * neither pass nor fail. Pure.
 */
export function failingTestLines(lines: string[]): string[] {
  const start = lines.findIndex((l) => /^✖ failing tests:/.test(l));
  if (start < 0) return [];
  const entries: { place?: string; name: string; error?: string }[] = [];
  let place: string | undefined;
  for (const raw of lines.slice(start + 1)) {
    const line = raw.trim();
    const last = entries.at(-1);
    if (/^test at /.test(line)) place = line;
    else if (/^✖ /.test(line)) {
      entries.push({ place, name: line, error: undefined });
      place = undefined;
    } else if (last && last.error === undefined && line) last.error = line.slice(0, 240);
  }
  const cancelled = entries.filter((e) => CANCELLED_BY_PARENT.test(e.error ?? ''));
  return [
    ...entries
      .filter((e) => !cancelled.includes(e))
      .flatMap((e) => [...(e.place ? [e.place] : []), e.name, ...(e.error ? [`  ${e.error}`] : [])]),
    ...(cancelled.length > 0
      ? [
          `${cancelled.length} test(s) cancelled by their suite: ${cancelled.map((e) => e.name.slice(2)).join(', ')}`.slice(
            0,
            240,
          ),
        ]
      : []),
  ];
}

/**
 * The environment of a cell's run: TJW_CELL, and for every cell but the default none of the
 * binary overrides (TEST_ASSET_*, KUBEBUILDER_ASSETS), which would make it run the default
 * cell's binaries under another cell's name.
 */
function cellEnv(cell: Cell): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, TJW_CELL: cell.name };
  if (!isDefaultCell(cell))
    for (const key of Object.keys(env))
      if (key.startsWith('TEST_ASSET_') || key === 'KUBEBUILDER_ASSETS') delete env[key];
  return env;
}

function runCell(run: Run): Promise<CellResult> {
  const { cell, files, name } = run;
  const t0 = Date.now();
  const child = spawn(process.execPath, ['--test', '--test-concurrency=1', ...files], {
    cwd: root,
    env: cellEnv(cell),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const summary: string[] = [];
  /** The run's stdout from the reporter's "failing tests" section on (failingTestLines). */
  const stdoutLines: string[] = [];
  const prefix = (stream: NodeJS.ReadableStream, out: NodeJS.WriteStream) => {
    let rest = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      const lines = (rest + chunk).split('\n');
      rest = lines.pop() ?? '';
      for (const line of lines) {
        if (/^ℹ (tests|pass|fail|cancelled|skipped|todo|duration_ms) /.test(line)) summary.push(line.slice(2));
        if (out === process.stdout && (stdoutLines.length > 0 || /^✖ failing tests:/.test(line)))
          stdoutLines.push(line);
        out.write(`[${name}] ${line}\n`);
      }
    });
    stream.on('end', () => rest && out.write(`[${name}] ${rest}\n`));
  };
  prefix(child.stdout, process.stdout);
  prefix(child.stderr, process.stderr);
  return new Promise((resolve) => {
    child.once('error', (err) => {
      process.stderr.write(`[${name}] could not start: ${err.message}\n`);
      resolve({ run, cell, code: -1, seconds: 0, summary, failing: [] });
    });
    child.once('close', (code) =>
      resolve({
        run,
        cell,
        code,
        seconds: Math.round((Date.now() - t0) / 1000),
        summary,
        failing: failingTestLines(stdoutLines),
      }),
    );
  });
}

async function main(): Promise<number> {
  const { values } = parseArgs({ options: { cells: { type: 'string' }, jobs: { type: 'string', default: '2' } } });
  const all = matrixCells();
  const wanted = values.cells ? values.cells.split(',') : all.map((c) => c.name);
  const unknown = wanted.filter((n) => !all.some((c) => c.name === n));
  if (unknown.length > 0) {
    process.stderr.write(
      `test-matrix: not cells of the matrix: ${unknown.join(', ')} (cells: ${all.map((c) => c.name).join(', ')})\n`,
    );
    return 2;
  }
  const jobs = Number(values.jobs);
  if (!Number.isInteger(jobs) || jobs < 1) {
    process.stderr.write(`test-matrix: --jobs must be a whole number of at least 1, not ${values.jobs}\n`);
    return 2;
  }
  // The cells of the other Kubernetes last: a cold run is still building it (.ci/run).
  const queue: Run[] = [...all.filter((c) => c.k8sMinor === '1.35'), ...all.filter((c) => c.k8sMinor !== '1.35')]
    .filter((c) => wanted.includes(c.name))
    .flatMap((cell) =>
      cell === all[0]
        ? defaultCellParts().map((files, i) => ({ cell, name: `${cell.name} (${i + 1}/2)`, files }))
        : [{ cell, name: cell.name, files: [...COMPAT_FILES, ...cellExtraFiles(cell)] }],
    );
  const results: CellResult[] = [];
  const t0 = Date.now();
  const runs = [...queue];
  await Promise.all(
    Array.from({ length: Math.min(jobs, queue.length) }, async () => {
      for (let run = queue.shift(); run; run = queue.shift()) results.push(await runCell(run));
    }),
  );
  const failed = results.filter((r) => r.code !== 0);
  process.stdout.write(
    `\nversion matrix: ${results.length} runs of ${new Set(results.map((r) => r.cell)).size} cells in ${Math.round((Date.now() - t0) / 1000)} s\n`,
  );
  for (const r of results.sort((x, y) => runs.indexOf(x.run) - runs.indexOf(y.run)))
    process.stdout.write(
      `  ${r.code === 0 ? 'ok  ' : 'FAIL'} ${r.run.name}: ${r.seconds} s; ${r.summary.join(', ')}\n`,
    );
  for (const r of failed) {
    const shown = r.failing.slice(0, MAX_FAILING_LINES);
    const more = r.failing.length - shown.length;
    process.stdout.write(
      `failing in ${r.run.name}:\n${[...shown, ...(more > 0 ? [`(${more} more lines)`] : [])].map((l) => `    ${l}\n`).join('')}`,
    );
  }
  if (failed.length > 0) process.stdout.write(`failed: ${failed.map((r) => r.run.name).join(', ')}\n`);
  return failed.length > 0 ? 1 : 0;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url))
  process.exitCode = await main();
