// The test scripts split npm test's files without losing one (hack/test-suites.ts): every file npm
// test runs is in exactly one of npm run test:unit's set and the sets of the suites that need built
// binaries (npm run test:e2e, and the matrix's other cells, npm run test:matrix); none of the pure set
// starts a control plane or builds binaries itself; npm run test:one passes --name as Node's pattern.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { globSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { testOneArgs } from '../../hack/test-one.ts';
import { cellExtraFiles, defaultCellParts, failingTestLines } from '../../hack/test-matrix.ts';
import {
  e2eFiles,
  FIRST_PHASE_NEEDS_BINARIES,
  NPM_TEST_FIRST_PHASE,
  otherCellFiles,
  scriptRuns,
  TEST_TIMEOUT_MS,
  unitFiles,
} from '../../hack/test-suites.ts';
import { matrixCells } from '../harness/binaries.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const scripts = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).scripts as Record<string, string>;
const posix = (f: string) => f.split(path.sep).join('/');
const glob = (g: string) => globSync(g, { cwd: root }).map(posix);

/** The files npm test runs: its first `node --test` run's globs, then every cell of hack/test-matrix.ts. */
function npmTestFiles(): Set<string> {
  return new Set([...NPM_TEST_FIRST_PHASE.flatMap(glob), ...defaultCellParts().flat(), ...otherCellFiles()]);
}

/** Calls that start the real control plane or its controllers, or build or find a pinned binary to run. */
const NEEDS_BINARIES =
  /\b(startControlPlane|startWorld|startUpstreamControllers|startCoscheduler|ensure[A-Za-z]*Binaries|pinnedKubectl)\(/;

describe('the test scripts', () => {
  it("npm test's first run is the globs hack/test-suites.ts splits, with the same timeout, then the whole matrix", () => {
    const globs = [...scripts.test.matchAll(/'([^']+)'/g)].map((m) => m[1]);
    assert.deepEqual(globs, NPM_TEST_FIRST_PHASE);
    assert.match(scripts.test, new RegExp(`--test-timeout=${TEST_TIMEOUT_MS} `));
    assert.match(scripts.test, /&& node hack\/test-matrix\.ts$/, 'npm test ends with every cell of the matrix');
  });

  it('npm run test:unit, test:e2e and test:one run hack/test-suites.ts and hack/test-one.ts', () => {
    assert.equal(scripts['test:unit'], 'node hack/test-suites.ts unit');
    assert.equal(scripts['test:e2e'], 'node hack/test-suites.ts e2e');
    assert.equal(scripts['test:one'], 'node hack/test-one.ts');
  });

  it('every test file under test/ is run by npm test', () => {
    const all = npmTestFiles();
    assert.deepEqual(
      glob('test/**/*.test.ts').filter((f) => !all.has(f)),
      [],
    );
  });

  it('every file npm test runs is in exactly one of the pure set and the sets that need binaries', () => {
    const unit = new Set(unitFiles());
    const { firstPhase, defaultCell } = e2eFiles();
    const binaries = new Set([...firstPhase, ...defaultCell, ...otherCellFiles()]);
    const all = npmTestFiles();
    assert.ok(unit.size > 100 && firstPhase.length > 0 && defaultCell.length > 20, 'the sets are not empty');
    assert.deepEqual(
      [...all].filter((f) => unit.has(f) === binaries.has(f)),
      [],
      'in both sets or in neither',
    );
    assert.deepEqual(
      [...unit, ...binaries].filter((f) => !all.has(f)),
      [],
      'run by a script but not by npm test',
    );
  });

  it("a cell's files beyond the compatibility suite are suites the default cell runs too (so the sets above hold)", () => {
    const defaultCell = new Set(defaultCellParts().flat());
    const extra = matrixCells().flatMap((c) => cellExtraFiles(c).map((f) => [c.name, f]));
    assert.deepEqual(extra, [
      ['trainer-v2.3.0/k8s-v1.37.2', 'test/e2e/kubectl-trainjob-kueue.test.ts'],
      ['trainer-v2.3.0/k8s-v1.37.2', 'test/e2e/kueue.test.ts'],
    ]);
    assert.deepEqual(
      extra.filter(([, f]) => !defaultCell.has(f)),
      [],
    );
  });

  it('test:unit runs the pure set as npm test runs its first phase; test:e2e the rest of that phase, then the default cell', () => {
    const flags = ['--test', '--test-concurrency=2', `--test-timeout=${TEST_TIMEOUT_MS}`];
    assert.ok(scripts.test.includes(`node ${flags.join(' ')} `), 'the same flags as npm test');
    assert.deepEqual(scriptRuns('unit'), [[...flags, ...unitFiles()]]);
    assert.deepEqual(scriptRuns('e2e'), [
      [...flags, ...e2eFiles().firstPhase],
      ['hack/test-matrix.ts', '--cells', matrixCells()[0].name],
    ]);
  });

  it('the pure set excludes whole folders only, and each excluded glob names some file', () => {
    for (const g of FIRST_PHASE_NEEDS_BINARIES) {
      assert.match(g, /^test\/[a-z-]+\/\*\*\/\*\.test\.ts$/);
      assert.ok(glob(g).length > 0, `${g} matches no file`);
    }
  });

  it('no file of the pure set starts a control plane or builds or runs a pinned binary itself', () => {
    const offending = unitFiles().filter((f) => NEEDS_BINARIES.test(readFileSync(path.join(root, f), 'utf8')));
    assert.deepEqual(offending, [], 'move these to a folder FIRST_PHASE_NEEDS_BINARIES names, or to test/e2e/');
    // The check would catch the chart's suites, which do need them.
    const chart = e2eFiles().firstPhase.filter((f) => NEEDS_BINARIES.test(readFileSync(path.join(root, f), 'utf8')));
    assert.ok(chart.includes('test/chart/chart-matches-kustomize.test.ts'), chart.join(', '));
  });

  it('test:one: --name becomes --test-name-pattern, with npm test per-file timeout', () => {
    assert.deepEqual(testOneArgs(['test/rules/table.test.ts'], ['numNodes']), [
      '--test',
      '--test-concurrency=1',
      `--test-timeout=${TEST_TIMEOUT_MS}`,
      '--test-name-pattern=numNodes',
      'test/rules/table.test.ts',
    ]);
  });

  it('test:one refuses a file that does not exist, and no file at all', () => {
    const none = spawnSync(process.execPath, ['hack/test-one.ts', 'test/no-such.test.ts'], {
      cwd: root,
      encoding: 'utf8',
      env: { ...process.env, INIT_CWD: root },
    });
    assert.equal(none.status, 2);
    assert.match(none.stderr, /no such file: test\/no-such\.test\.ts/);
    const empty = spawnSync(process.execPath, ['hack/test-one.ts'], { cwd: root, encoding: 'utf8' });
    assert.equal(empty.status, 2);
    assert.match(empty.stderr, /usage: npm run test:one -- FILE/);
  });

  it('test:one runs only the tests --name matches', () => {
    // Without this test run's context, which would make the child report to it instead of printing.
    const { NODE_TEST_CONTEXT: _, ...env } = process.env;
    const one = spawnSync(
      process.execPath,
      ['hack/test-one.ts', 'test/harness/stages.test.ts', '--name', 'have no jitter'],
      { cwd: root, encoding: 'utf8', env: { ...env, INIT_CWD: root } },
    );
    assert.equal(one.status, 0, one.stderr);
    assert.match(one.stdout, /✔ have no jitter/);
    assert.match(one.stdout, /ℹ tests 1\n/);
    assert.match(one.stdout, /ℹ pass 1\n/);
  });

  it("the matrix's last lines name each failing test, a cancelled one too, with its error's first line (node's own reporter)", () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'tjw-matrix-'));
    const file = path.join(dir, 'three.test.mjs');
    writeFileSync(
      file,
      [
        "import assert from 'node:assert/strict';",
        "import { before, describe, it } from 'node:test';",
        "describe('s', () => {",
        "  it('passes', () => {});",
        "  it('asserts', () => assert.equal(1, 2, 'one is not two'));",
        "  it('hangs', { timeout: 20 }, () => new Promise((r) => setTimeout(r, 2000)));",
        "  describe('world', () => {",
        "    before(() => { throw new Error('the world did not start'); });",
        ...Array.from({ length: 12 }, (_, i) => `    it('uses it ${i}', () => {});`),
        '  });',
        '});',
      ].join('\n'),
    );
    const { NODE_TEST_CONTEXT: _, ...env } = process.env;
    const run = spawnSync(process.execPath, ['--test', file], { encoding: 'utf8', env });
    rmSync(dir, { recursive: true, force: true });
    assert.equal(run.status, 1);
    const lines = failingTestLines(run.stdout.split('\n'));
    const named = lines.filter((l) => l.startsWith('✖ ')).map((l) => l.replace(/ \(.*\)$/, ''));
    assert.deepEqual(
      named,
      ['✖ asserts', '✖ hangs', '✖ world'],
      'the suite whose hook failed before its 12 cancelled tests',
    );
    assert.match(lines.at(-1) ?? '', /^12 test\(s\) cancelled by their suite: uses it 0, uses it 1, /);
    assert.ok(
      lines.some((l) => /^test at .*three\.test\.mjs:5:/.test(l)),
      lines.join('\n'),
    );
    assert.ok(lines.includes('  AssertionError [ERR_ASSERTION]: one is not two'), lines.join('\n'));
    assert.ok(
      lines.some((l) => /timed out after 20ms/.test(l)),
      lines.join('\n'),
    );
    assert.ok(
      lines.some((l) => /the world did not start/.test(l)),
      lines.join('\n'),
    );
    assert.ok(!lines.some((l) => /^\s+at /.test(l)), 'no stack frames');
    assert.deepEqual(failingTestLines(['✔ fine', 'ℹ tests 1']), []);
  });
});
