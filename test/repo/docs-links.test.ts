// The docs hold together: every page of docs/ is linked from docs/README.md (the index) or the
// root README; every relative link in README.md, CONTRIBUTING.md and docs/*.md resolves to a file
// of the repository, and a `#anchor` to a heading of its target (GitHub's slugs); the README stays
// a front door of at most 200 lines; no table cell is over 300 characters (a cell that long is a
// paragraph: it belongs in the text).
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const README_MAX_LINES = 200;
const CELL_MAX_CHARS = 300;

/** The docs checked, relative to the root: the README, CONTRIBUTING and every page of docs/. */
function docFiles(): string[] {
  const pages = readdirSync(path.join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`);
  return ['README.md', 'CONTRIBUTING.md', ...pages.sort()];
}

/** The lines outside fenced code blocks (``` or ~~~), with their 1-based numbers. */
export function proseLines(text: string): { line: string; n: number }[] {
  const out: { line: string; n: number }[] = [];
  let fence: string | undefined;
  text.split('\n').forEach((line, i) => {
    const m = /^\s*(`{3,}|~{3,})/.exec(line);
    if (m) {
      if (fence === undefined) fence = m[1][0];
      else if (m[1][0] === fence) fence = undefined;
      return;
    }
    if (fence === undefined) out.push({ line, n: i + 1 });
  });
  return out;
}

/** A line without its inline code spans (a `[x](y)` inside backticks is no link). */
const withoutCode = (line: string): string => line.replace(/(`+)[^`]*?\1/g, '');

/** Inline links `[text](target)` and images, outside code; the target without a title. */
export function links(text: string): { target: string; n: number }[] {
  const out: { target: string; n: number }[] = [];
  for (const { line, n } of proseLines(text)) {
    for (const m of withoutCode(line).matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g))
      out.push({ target: m[1], n });
  }
  return out;
}

/**
 * GitHub's heading anchor: the rendered text lower-cased, everything but letters, digits,
 * spaces, hyphens and underscores dropped, spaces turned into hyphens; a repeated slug gets
 * -1, -2, … in order.
 */
export function slugs(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const { line } of proseLines(text)) {
    const h = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!h) continue;
    const rendered = h[1]
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
      .replace(/`/g, '')
      .replace(/(\*\*|__|\*|(?<![\w])_|_(?![\w]))/g, '');
    const base = rendered
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    out.add(count === 0 ? base : `${base}-${count}`);
  }
  return out;
}

/** Table cells longer than the limit, as `line: length`. */
export function longCells(text: string, max = CELL_MAX_CHARS): string[] {
  const out: string[] = [];
  for (const { line, n } of proseLines(text)) {
    if (!line.trimStart().startsWith('|')) continue;
    const cells = line
      .trim()
      .replace(/^\||\|$/g, '')
      .split(/(?<!\\)\|/)
      .map((c) => c.trim());
    for (const c of cells) if (c.length > max) out.push(`${n}: ${c.length} characters: ${c.slice(0, 60)}…`);
  }
  return out;
}

const isExternal = (target: string): boolean => /^[a-z][a-z0-9+.-]*:/i.test(target);

/** Relative links of `file` (root-relative) that do not resolve, as `file:line: target (why)`. */
export function brokenLinks(file: string, read: (rel: string) => string | undefined): string[] {
  const text = read(file);
  if (text === undefined) return [`${file}: missing`];
  const out: string[] = [];
  for (const { target, n } of links(text)) {
    if (isExternal(target)) continue;
    const [rawPath, anchor] = target.split('#', 2);
    const rel =
      rawPath === '' ? file : path.posix.normalize(path.posix.join(path.posix.dirname(file), decodeURI(rawPath)));
    const where = `${file}:${n}: ${target}`;
    if (rel.startsWith('..')) {
      out.push(`${where} (leaves the repository)`);
      continue;
    }
    const targetText = read(rel);
    if (targetText === undefined) {
      out.push(`${where} (no such file)`);
      continue;
    }
    if (anchor !== undefined && anchor !== '' && rel.endsWith('.md') && !slugs(targetText).has(anchor))
      out.push(`${where} (no heading with that anchor in ${rel})`);
  }
  return out;
}

/** Reads a root-relative path: a file's text, '' for a folder, undefined when absent. */
function readRepo(rel: string): string | undefined {
  const abs = path.join(root, rel);
  if (!existsSync(abs)) return undefined;
  return statSync(abs).isDirectory() ? '' : readFileSync(abs, 'utf8');
}

/** docs/ pages no link from docs/README.md or README.md reaches. */
export function unlinkedPages(pages: string[], read: (rel: string) => string | undefined): string[] {
  const linked = new Set<string>();
  for (const index of ['README.md', 'docs/README.md']) {
    const text = read(index) ?? '';
    for (const { target } of links(text)) {
      if (isExternal(target)) continue;
      const p = target.split('#')[0];
      if (p !== '') linked.add(path.posix.normalize(path.posix.join(path.posix.dirname(index), p)));
    }
  }
  return pages.filter((p) => !linked.has(p));
}

describe('the docs hold together', () => {
  const files = docFiles();

  it('every page of docs/ is linked from docs/README.md or README.md', () => {
    assert.deepEqual(
      unlinkedPages(
        files.filter((f) => f.startsWith('docs/')),
        readRepo,
      ),
      [],
    );
  });

  it('every relative link resolves to a file, and every #anchor to a heading of it', () => {
    assert.deepEqual(
      files.flatMap((f) => brokenLinks(f, readRepo)),
      [],
    );
  });

  it(`README.md is at most ${README_MAX_LINES} lines`, () => {
    const lines = readFileSync(path.join(root, 'README.md'), 'utf8').replace(/\n$/, '').split('\n').length;
    assert.ok(lines <= README_MAX_LINES, `README.md has ${lines} lines`);
  });

  it(`no table cell in README.md or docs/ is over ${CELL_MAX_CHARS} characters`, () => {
    const long = files
      .filter((f) => f !== 'CONTRIBUTING.md')
      .flatMap((f) => longCells(readFileSync(path.join(root, f), 'utf8')).map((c) => `${f}:${c}`));
    assert.deepEqual(long, []);
  });

  it('the checks catch what they are for (they can fail)', () => {
    const repo: Record<string, string> = {
      'README.md':
        '# T\n[a](docs/a.md) [gone](docs/gone.md) [b](docs/a.md#no-such) [ok](docs/a.md#why-failurepolicy-stays-fail)\n',
      'docs/README.md':
        '# Index\n[a](a.md)\n```\n[in code](nowhere.md)\n```\n`[inline](nowhere.md)`\n[self](#index) [up](../../x.md)\n',
      'docs/a.md':
        "# A\n## Why `failurePolicy` stays `Fail`\n## Trainer's chart from v2.2.1 to v2.3.0, and rolling back\n## A\n",
      'docs/orphan.md': '# Orphan\n',
    };
    const read = (rel: string) => repo[rel];
    assert.deepEqual(brokenLinks('README.md', read), [
      'README.md:2: docs/gone.md (no such file)',
      'README.md:2: docs/a.md#no-such (no heading with that anchor in docs/a.md)',
    ]);
    assert.deepEqual(brokenLinks('docs/README.md', read), ['docs/README.md:7: ../../x.md (leaves the repository)']);
    assert.deepEqual(unlinkedPages(['docs/a.md', 'docs/orphan.md'], read), ['docs/orphan.md']);
    assert.deepEqual(
      [...slugs(repo['docs/a.md'])],
      ['a', 'why-failurepolicy-stays-fail', 'trainers-chart-from-v221-to-v230-and-rolling-back', 'a-1'],
    );
    assert.equal(longCells(`| ${'x'.repeat(301)} | y |\n| a \\| b | c |`).length, 1);
    assert.deepEqual(longCells('```\n| ' + 'x'.repeat(400) + ' |\n```\n'), []);
  });
});
