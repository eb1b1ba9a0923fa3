// The test suites a contributor runs, split by what they need (docs/testing.md says which to run when):
//   node hack/test-suites.ts unit   the pure suites: no type-check, no lint, no built binaries (npm run test:unit)
//   node hack/test-suites.ts e2e    the suites that need more than Node: the chart's and the image's, then the
//                                   default cell of the version matrix (test/faults/, test/e2e/) (npm run test:e2e)
//   node hack/test-suites.ts list   every file of each set, one `set file` line each
// `npm test` runs the union, and more: its first phase runs NPM_TEST_FIRST_PHASE (unit and the chart's and
// image's suites), then hack/test-matrix.ts runs every cell. test/repo/test-scripts.test.ts checks that each
// file npm test runs is either in the pure set or in a set that needs binaries (test:e2e's, or the other
// cells' of npm run test:matrix), never both, so a new file cannot fall out of both.
import { spawn } from 'node:child_process';
import { globSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { matrixCells } from '../test/harness/binaries.ts';
import { COMPAT_FILES, defaultCellParts } from './test-matrix.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** The globs of npm test's first `node --test` run, as package.json's "test" script writes them. */
export const NPM_TEST_FIRST_PHASE = ['test/!(e2e|faults|compat)/**/*.test.ts', 'test/*.test.ts'];

/**
 * The folders of that first run whose suites need more than Node: test/chart/ renders with the pinned
 * kubectl (kustomize) and Helm 3 and 4, built by hack/build-binaries.sh (minutes cold); test/image/
 * rebuilds the image's stages in folders (an npm install from the lockfile and `npm run build`, a
 * type-check); test/release/ builds the kubectl plugin's executables (Node binaries from the npm
 * registry) and installs one with krew. chart-templates.test.ts needs neither, but goes with its
 * folder: a chart change runs it all.
 */
export const FIRST_PHASE_NEEDS_BINARIES = [
  'test/chart/**/*.test.ts',
  'test/image/**/*.test.ts',
  'test/release/**/*.test.ts',
];

/** The per-file timeout npm test gives (45 minutes: a suite may wait for a cold build of its binaries). */
export const TEST_TIMEOUT_MS = 2_700_000;

const files = (globs: readonly string[]): string[] =>
  [...new Set(globs.flatMap((g) => globSync(g, { cwd: root })))].map((f) => f.split(path.sep).join('/')).sort();

/** npm run test:unit's files: the first phase without its folders that need binaries. */
export function unitFiles(): string[] {
  const excluded = new Set(files(FIRST_PHASE_NEEDS_BINARIES));
  return files(NPM_TEST_FIRST_PHASE).filter((f) => !excluded.has(f));
}

/** npm run test:e2e's files: the first phase's that need binaries, then the default cell's. */
export function e2eFiles(): { firstPhase: string[]; defaultCell: string[] } {
  const firstPhase = new Set(files(NPM_TEST_FIRST_PHASE));
  return {
    firstPhase: files(FIRST_PHASE_NEEDS_BINARIES).filter((f) => firstPhase.has(f)),
    defaultCell: defaultCellParts().flat().sort(),
  };
}

/** What the version matrix's other cells run (each cell runs them all again, under its own TJW_CELL). */
export const otherCellFiles = (): string[] => files(COMPAT_FILES);

function run(args: string[]): Promise<number> {
  const child = spawn(process.execPath, args, { cwd: root, stdio: 'inherit' });
  return new Promise((resolve) => {
    child.once('error', (err) => {
      process.stderr.write(`test-suites: could not start node: ${err.message}\n`);
      resolve(2);
    });
    child.once('close', (code) => resolve(code ?? 1));
  });
}

/**
 * The `node` runs of a script, in order: `unit` one `node --test` run of the pure files, two at a time,
 * as npm test runs its first phase; `e2e` the first phase's files that need binaries the same way, then
 * the default cell as npm test runs it (hack/test-matrix.ts: one file at a time, two runs side by side).
 */
export function scriptRuns(which: 'unit' | 'e2e'): string[][] {
  const nodeTest = ['--test', '--test-concurrency=2', `--test-timeout=${TEST_TIMEOUT_MS}`];
  if (which === 'unit') return [[...nodeTest, ...unitFiles()]];
  return [
    [...nodeTest, ...e2eFiles().firstPhase],
    ['hack/test-matrix.ts', '--cells', matrixCells()[0].name],
  ];
}

async function main(which: string | undefined): Promise<number> {
  if (which === 'unit' || which === 'e2e') {
    // Every run runs, even after a failure (as npm test would not): the first failure's code is the result.
    let result = 0;
    for (const args of scriptRuns(which)) {
      const code = await run(args);
      if (result === 0) result = code;
    }
    return result;
  }
  if (which === 'list') {
    const { firstPhase, defaultCell } = e2eFiles();
    for (const f of unitFiles()) process.stdout.write(`unit ${f}\n`);
    for (const f of [...firstPhase, ...defaultCell]) process.stdout.write(`e2e ${f}\n`);
    for (const f of otherCellFiles()) process.stdout.write(`other-cells ${f}\n`);
    return 0;
  }
  process.stderr.write('usage: node hack/test-suites.ts unit|e2e|list\n');
  return 2;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url))
  process.exitCode = await main(process.argv[2]);
