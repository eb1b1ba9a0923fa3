// One test file, or the tests in it whose name matches (npm run test:one):
//   npm run test:one -- test/rules/table.test.ts [--name PATTERN]
// runs `node --test` on the file with npm test's per-file timeout; --name is Node's --test-name-pattern
// (a regular expression matched against each test's name and its suites' names; repeat it for more).
// More than one file may be given. An end-to-end file runs in the cell TJW_CELL names (the default
// cell without it) and builds the binaries it misses, as under npm test.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { TEST_TIMEOUT_MS } from './test-suites.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const USAGE = 'usage: npm run test:one -- FILE... [--name PATTERN]';

/** The `node` arguments that run `files`, only the tests matching one of `names` when some are given. */
export function testOneArgs(files: readonly string[], names: readonly string[]): string[] {
  return [
    '--test',
    '--test-concurrency=1',
    `--test-timeout=${TEST_TIMEOUT_MS}`,
    ...names.map((n) => `--test-name-pattern=${n}`),
    ...files,
  ];
}

async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: { name: { type: 'string', multiple: true }, help: { type: 'boolean', short: 'h' } },
    });
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n${USAGE}\n`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (positionals.length === 0) {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  // npm runs scripts from the project's root; a path is the caller's, from where npm was run (INIT_CWD).
  const from = process.env.INIT_CWD ?? process.cwd();
  const files = positionals.map((f) => path.relative(root, path.resolve(from, f)));
  const missing = files.filter((f) => !existsSync(path.join(root, f)));
  if (missing.length > 0) {
    process.stderr.write(`test-one: no such file: ${missing.join(', ')}\n`);
    return 2;
  }
  const child = spawn(process.execPath, testOneArgs(files, values.name ?? []), { cwd: root, stdio: 'inherit' });
  return new Promise((resolve) => child.once('close', (code) => resolve(code ?? 1)));
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url))
  process.exitCode = await main(process.argv.slice(2));
