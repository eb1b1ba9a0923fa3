// Which npm packages a process loaded (bench/lib/packages.ts), from the module URLs recorded:
// files under node_modules grouped by package (scoped names too, the innermost node_modules),
// the project's own files and node: builtins left out, each file's bytes counted once, a nested
// package's size on disk not counted in its parent's.
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, it } from 'node:test';
import { loadedPackages } from '../../bench/lib/packages.ts';

describe('loadedPackages', () => {
  it('groups loaded files by package, nested and scoped, and counts each once', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'tjw-packages-'));
    try {
      const file = (rel: string, bytes: number) => {
        const p = path.join(dir, rel);
        mkdirSync(path.dirname(p), { recursive: true });
        writeFileSync(p, 'x'.repeat(bytes));
        return pathToFileURL(p).href;
      };
      const urls = [
        file('node_modules/a/index.js', 10),
        file('node_modules/a/lib/b.js', 5),
        file('node_modules/@s/c/x.js', 7),
        file('node_modules/a/node_modules/d/y.js', 100_000),
        file('src/own.ts', 100),
        'node:fs',
      ];
      const record = path.join(dir, 'record');
      writeFileSync(record, [...urls, urls[0]].join('\n'));
      const packages = loadedPackages(record);
      const got = packages.map((p) => [p.name, p.loadedBytes, p.diskBytes > 0]);
      // a's size on disk leaves out its nested d (counted as d).
      assert.ok(packages.find((p) => p.name === 'a')!.diskBytes < 100_000);
      assert.deepEqual(
        got.sort((x, y) => String(x[0]).localeCompare(String(y[0]))),
        [
          ['@s/c', 7, true],
          ['a', 15, true],
          ['d', 100_000, true],
        ],
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
