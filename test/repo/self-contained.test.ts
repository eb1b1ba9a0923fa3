// Nothing reads outside the repository: a clone with nothing beside it runs, tests, generates and
// benchmarks. Every relative path written in the sources, scripts, manifests and docs that climbs
// with `..` must resolve inside the tree (from its file's folder, or from the project root where
// the text is run from there: package.json scripts, README and docs commands).
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
/** Folders not walked: installed or generated data, and the vendored upstream files themselves. */
const SKIP = new Set(['node_modules', '.git', 'upstream', 'certs', 'embedded']);
const TEXT = /\.(ts|js|mjs|cjs|sh|ya?ml|json|md|env)$|^(Dockerfile|run)$/;

async function walk(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    if (SKIP.has(e.name)) continue;
    const at = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...(await walk(at)));
    else if (TEXT.test(e.name)) out.push(at);
  }
  return out;
}

/** Relative paths that climb: `../x`, `../../x/y`, `..` at the end of a path. */
const CLIMBING = /(?<![\w.])(?:\.\.\/)+[\w.@-]*(?:\/[\w.@-]+)*|(?<=\/)\.\.(?![\w.\/])/g;

/** Places a path may start from: its file's folder; also the root for text run from there. */
function bases(file: string): string[] {
  const rel = path.relative(root, file);
  const fromRoot = rel === 'package.json' || rel.endsWith('.md');
  return fromRoot ? [path.dirname(file), root] : [path.dirname(file)];
}

export function escapes(file: string, text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(CLIMBING)) {
    const p = m[0];
    const inside = bases(file).some((b) => {
      const r = path.resolve(b, p);
      return r === root || r.startsWith(root + path.sep);
    });
    if (!inside) out.push(`${path.relative(root, file)}: ${p}`);
  }
  return out;
}

describe('the repository stands alone', () => {
  it('no path in the sources, scripts, manifests or docs leaves the tree', async () => {
    const files = [...(await walk(root)), path.join(root, '.ci/run')];
    const bad: string[] = [];
    for (const f of files) if (f !== fileURLToPath(import.meta.url)) bad.push(...escapes(f, await readFile(f, 'utf8')));
    assert.deepEqual(bad, []);
    assert.ok(files.length > 100, `walked ${files.length} files`);
  });

  it('nothing names the shared folder beside the repository', async () => {
    const files = [...(await walk(root)), path.join(root, '.ci/run')];
    const named: string[] = [];
    for (const f of files) if (f !== fileURLToPath(import.meta.url) && /shared\/upstream|\.\.\/shared\b/.test(await readFile(f, 'utf8'))) named.push(path.relative(root, f));
    assert.deepEqual(named, []);
  });

  it('the check catches a climbing path (the check itself can fail)', () => {
    const f = path.join(root, 'test/x/y.test.ts');
    assert.deepEqual(escapes(f, "path.resolve(here, '../../../shared/upstream')"), ['test/x/y.test.ts: ../../../shared/upstream']);
    assert.deepEqual(escapes(f, "path.resolve(here, '../../upstream')"), []);
    assert.deepEqual(escapes(path.join(root, 'package.json'), '"generate": "node x --crd ../shared/upstream/crds/a.yaml"'), ['package.json: ../shared/upstream/crds/a.yaml']);
  });
});
