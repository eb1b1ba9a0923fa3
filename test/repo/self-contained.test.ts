// Nothing reads outside the repository: a clone with nothing beside it runs, tests, generates and
// benchmarks. Two checks:
// - at run time, the commands run under Node's permission model with reads confined to the
//   clone (and a temp folder for serve's certificate): a read outside fails with ERR_ACCESS_DENIED;
// - in the text of every tracked source, script, manifest and doc, a relative path that climbs
//   with `..` must stay inside the tree from the base it is resolved against (its file's folder
//   for imports and `import.meta`/`dirname` lines; the project root on lines that name it and in
//   files run from there), and no absolute path names this workplace's folders.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { freePorts, httpGet, waitFor } from '../harness/wait.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const self = path.relative(root, fileURLToPath(import.meta.url));
/** Root-relative folders not read: installed or generated data, and the vendored upstream files. */
const SKIP = ['node_modules/', 'upstream/', 'src/embedded/', 'certs/'];
const TEXT = /\.(ts|js|mjs|cjs|sh|ya?ml|json|md|env)$|(^|\/)(Dockerfile|run|\.dockerignore)$/;
/** Files run from the project root (npm scripts, commands in docs, CI). */
const RUN_FROM_ROOT = /^(package\.json|\.ci\/run|Dockerfile)$|\.md$/;

/** What git tracks plus what it would add (untracked, not ignored). */
function repoFiles(): string[] {
  const out = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard'], {
    cwd: root,
    encoding: 'utf8',
  });
  return [...new Set(out.split('\n'))].filter(
    (f) => f !== '' && TEXT.test(f) && !SKIP.some((s) => f.startsWith(s)) && f !== self,
  );
}

/** Relative paths that climb: `../x`, `../../x/y`, and `..` as a path segment of its own. */
const CLIMBING = /(?<![\w.])(?:\.\.\/)+[\w.@-]*(?:\/[\w.@-]+)*|(?<=[/'"`(\s,])\.\.(?=['"`/)\s,]|$)/g;
/**
 * Lines resolving from their own file: imports, `import.meta`, `__dirname`/`dirname "$0"`, `here`,
 * and the line defining the root.
 */
const FROM_FILE =
  /\bimport\b|\bfrom\s+['"]|import\.meta|__dirname|\bdirname\b|\bhere\b|\b(root|projectRoot|repoRoot)\s*=/;
const NAMES_ROOT = /\b(root|projectRoot|repoRoot|cwd)\b/;
/** Absolute folders of this workplace, which a clone elsewhere does not have. */
const MACHINE_PATH = /(?<![\w.])\/work\/[\w.-]+/g;

/** Where the climbing paths on a line are resolved from. */
function baseOf(rel: string, line: string): string {
  const dir = path.dirname(path.join(root, rel));
  if (FROM_FILE.test(line)) return dir;
  return RUN_FROM_ROOT.test(rel) || NAMES_ROOT.test(line) ? root : dir;
}

export function escapes(rel: string, text: string): string[] {
  const out: string[] = [];
  text.split('\n').forEach((line, i) => {
    const base = baseOf(rel, line);
    for (const m of line.matchAll(CLIMBING)) {
      // A Markdown link's target resolves from the page's own folder, as a renderer resolves it.
      const link = rel.endsWith('.md') && line.slice(0, m.index).endsWith('](');
      const r = path.resolve(link ? path.dirname(path.join(root, rel)) : base, m[0]);
      if (r !== root && !r.startsWith(root + path.sep)) out.push(`${rel}:${i + 1}: ${m[0]}`);
    }
    for (const m of line.matchAll(MACHINE_PATH)) out.push(`${rel}:${i + 1}: ${m[0]}`);
  });
  return out;
}

/** Runs a project command with reads confined to the clone (plus `also`). */
function confined(
  args: string[],
  also: string[] = [],
  cwd = root,
): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const reads = [root, ...also].map((p) => `--allow-fs-read=${p}`);
    const child = spawn(
      process.execPath,
      ['--permission', ...reads, ...also.map((p) => `--allow-fs-write=${p}`), ...args],
      { cwd, env: { PATH: process.env.PATH ?? '' } },
    );
    let out = '';
    let err = '';
    child.stdout.on('data', (c) => (out += c));
    child.stderr.on('data', (c) => (err += c));
    child.on('close', (code) => resolve({ code, out, err }));
  });
}

describe('the repository stands alone', () => {
  it('no path in the tracked sources, scripts, manifests or docs leaves the tree', async () => {
    const files = repoFiles();
    assert.ok(files.length > 100, `read ${files.length} files`);
    assert.ok(
      files.includes('src/certs/authority.ts') || files.some((f) => f.startsWith('src/')),
      'folders named like skipped ones are still read',
    );
    const bad: string[] = [];
    for (const f of files) bad.push(...escapes(f, await readFile(path.join(root, f), 'utf8')));
    assert.deepEqual(bad, []);
  });

  it('the check catches what leaked before (it can fail)', () => {
    const leaks: [string, string][] = [
      [
        'test/crd/fixtures.ts',
        "export const upstreamCrdPath = (...parts) => path.resolve(projectRoot, '../elsewhere/upstream/crds', ...parts);",
      ],
      ['test/harness/binaries.ts', "export const upstreamDir = path.resolve(projectRoot, '../elsewhere/upstream');"],
      ['test/rebuild/fixtures.ts', "const upstream = path.resolve(here, '../../../elsewhere/upstream');"],
      ['package.json', '"generate": "node x --crd ../elsewhere/upstream/crds/a.yaml"'],
      ['src/x.ts', "const dir = path.join(root, '..', 'elsewhere');"],
      ['src/x.ts', "readFileSync('/work/elsewhere/crds/a.yaml')"],
      ['docs/x.md', 'See [the results](../../elsewhere/RESULTS.md).'],
      ['docs/x.md', 'see [it](../../elsewhere/a.md)'],
    ];
    for (const [file, line] of leaks) assert.equal(escapes(file, line).length, 1, `${file}: ${line}`);
    const fine: [string, string][] = [
      ['test/rebuild/fixtures.ts', "const upstream = path.resolve(here, '../../upstream');"],
      ['bin/trainjob-webhook.js', "const { main } = await import('../src/cli.ts');"],
      ['manifests/crd-patch/kustomization.yaml', '  - ../../upstream/crds/trainer-v2.3.0'],
      ['.ci/run', 'cd "$(dirname "$0")/.."'],
      ['docs/x.md', 'See [the results](../bench/RESULTS.md).'],
      ['docs/x.md', 'see [the README](../README.md) and [a file](../src/cli.ts#L1)'],
    ];
    for (const [file, line] of fine) assert.deepEqual(escapes(file, line), [], `${file}: ${line}`);
  });

  it('review and generate run with reads confined to the clone', async () => {
    const review = await confined([
      'bin/trainjob-webhook.js',
      'review',
      '--old',
      'examples/objects/image-v1.yaml',
      '--new',
      'examples/objects/image-v2.yaml',
    ]);
    assert.equal(review.code, 1, review.err);
    assert.match(review.out, /field is immutable/);
    const generate = await confined(['hack/generate.ts', '--check']);
    assert.equal(generate.code, 0, generate.err);
    // The confinement is real: a read outside the clone is refused.
    const outside = await confined(['bin/trainjob-webhook.js', 'review', '--new', path.join(tmpdir(), 'nothing.yaml')]);
    assert.match(outside.err, /ERR_ACCESS_DENIED/);
  });

  it('serve starts on its embedded defaults with reads confined to the clone and its certificate folder', async () => {
    const cwd = await mkdtemp(path.join(tmpdir(), 'tjw-confined-'));
    // Two ports chosen together: two calls of freePort may be handed the same one.
    const [port, opsPort] = await freePorts(2);
    const child = spawn(
      process.execPath,
      [
        '--permission',
        `--allow-fs-read=${root}`,
        `--allow-fs-read=${cwd}`,
        `--allow-fs-write=${cwd}`,
        path.join(root, 'bin/trainjob-webhook.js'),
        'serve',
        '--host',
        '127.0.0.1',
        '--port',
        String(port),
        '--ops-port',
        String(opsPort),
      ],
      { cwd, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let log = '';
    child.stdout.on('data', (c) => (log += c));
    child.stderr.on('data', (c) => (log += c));
    // Listened for from the start: awaiting 'close' only in `finally` hung the test when serve
    // had already exited (the event had passed).
    const closed = new Promise((r) => child.once('close', r));
    try {
      // An exit ends the wait at once (it polled on to its timeout before); two minutes for a
      // start on a loaded machine.
      const state = await waitFor(
        'confined serve ready',
        async () =>
          child.exitCode !== null
            ? `exited with ${child.exitCode}`
            : (await httpGet(`http://127.0.0.1:${opsPort}/readyz`)).status === 200 && 'ready',
        { timeoutMs: 120_000 },
      );
      assert.equal(state, 'ready');
      assert.match(log, /embedded Trainer v2\.3\.0 TrainJob CRD/);
      assert.doesNotMatch(log, /ERR_ACCESS_DENIED/);
    } catch (err) {
      throw new Error(`${(err as Error).message}\n${log}`, { cause: err });
    } finally {
      child.kill('SIGTERM');
      await closed;
      await rm(cwd, { recursive: true, force: true });
    }
  });
});
