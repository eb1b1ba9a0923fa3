// Runs the version matrix (test/harness/binaries.ts matrixCells; README "Supported versions"): the
// default cell runs the fault and end-to-end suites, every other cell the compatibility suite
// (test/compat/ and the differential oracle). Each cell is a `node --test` run of its own with
// TJW_CELL set, one file at a time, its lines prefixed with the cell's name; cells run side by side
// (the default cell's long run in one slot, the others one after another in the next), and the last
// lines say what each cell cost and which failed.
//   node hack/test-matrix.ts [--cells a,b] [--jobs N]     (default: every cell, 2 at a time)
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { matrixCells, type Cell } from '../test/harness/binaries.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/** What the other cells run: the compatibility suite and the differential oracle (three enforcers, one table). */
export const COMPAT_FILES = ['test/compat/**/*.test.ts', 'test/e2e/differential.test.ts'];
/** What the default cell runs: every suite that needs the real control plane. */
export const FULL_FILES = ['test/{faults,e2e}/**/*.test.ts'];

interface CellResult {
  cell: Cell;
  code: number | null;
  seconds: number;
  summary: string[];
}

/**
 * The environment of a cell's run: TJW_CELL, and for every cell but the default none of the
 * binary overrides (TEST_ASSET_*, KUBEBUILDER_ASSETS), which would make it run the default
 * cell's binaries under another cell's name.
 */
function cellEnv(cell: Cell): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, TJW_CELL: cell.name };
  if (cell.name !== matrixCells()[0].name)
    for (const key of Object.keys(env))
      if (key.startsWith('TEST_ASSET_') || key === 'KUBEBUILDER_ASSETS') delete env[key];
  return env;
}

function runCell(cell: Cell, files: string[]): Promise<CellResult> {
  const t0 = Date.now();
  const child = spawn(process.execPath, ['--test', '--test-concurrency=1', ...files], {
    cwd: root,
    env: cellEnv(cell),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const summary: string[] = [];
  const prefix = (stream: NodeJS.ReadableStream, out: NodeJS.WriteStream) => {
    let rest = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      const lines = (rest + chunk).split('\n');
      rest = lines.pop() ?? '';
      for (const line of lines) {
        if (/^ℹ (tests|pass|fail|skipped|duration_ms) /.test(line)) summary.push(line.slice(2));
        out.write(`[${cell.name}] ${line}\n`);
      }
    });
    stream.on('end', () => rest && out.write(`[${cell.name}] ${rest}\n`));
  };
  prefix(child.stdout, process.stdout);
  prefix(child.stderr, process.stderr);
  return new Promise((resolve) => {
    child.once('error', (err) => {
      process.stderr.write(`[${cell.name}] could not start: ${err.message}\n`);
      resolve({ cell, code: -1, seconds: 0, summary });
    });
    child.once('close', (code) => resolve({ cell, code, seconds: Math.round((Date.now() - t0) / 1000), summary }));
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
  const queue = all.filter((c) => wanted.includes(c.name));
  const results: CellResult[] = [];
  const t0 = Date.now();
  await Promise.all(
    Array.from({ length: Math.min(jobs, queue.length) }, async () => {
      for (let cell = queue.shift(); cell; cell = queue.shift())
        results.push(await runCell(cell, cell === all[0] ? FULL_FILES : COMPAT_FILES));
    }),
  );
  const failed = results.filter((r) => r.code !== 0);
  process.stdout.write(`\nversion matrix: ${results.length} cells in ${Math.round((Date.now() - t0) / 1000)} s\n`);
  for (const r of results.sort((x, y) => all.indexOf(x.cell) - all.indexOf(y.cell)))
    process.stdout.write(
      `  ${r.code === 0 ? 'ok  ' : 'FAIL'} ${r.cell.name}: ${r.seconds} s; ${r.summary.join(', ')}\n`,
    );
  if (failed.length > 0) process.stdout.write(`failed cells: ${failed.map((r) => r.cell.name).join(', ')}\n`);
  return failed.length > 0 ? 1 : 0;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url))
  process.exitCode = await main();
