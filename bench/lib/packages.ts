// The npm packages a process loaded (from the module URLs bench/lib/record-loads.ts wrote): each
// package's root under node_modules, the bytes of its files that were loaded, and its size on disk.
import { spawnSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export interface LoadedPackage {
  name: string;
  root: string;
  /** Bytes of the files of this package that were loaded. */
  loadedBytes: number;
  /** `du -sb` of the package's directory. */
  diskBytes: number;
}

/** `node_modules/a/…` → a, `node_modules/@s/a/…` → @s/a (the innermost node_modules). */
function packageOf(file: string): { name: string; root: string } | undefined {
  const at = file.lastIndexOf('/node_modules/');
  if (at < 0) return undefined;
  const rest = file.slice(at + '/node_modules/'.length).split('/');
  const name = rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0];
  return { name, root: `${file.slice(0, at)}/node_modules/${name}` };
}

export function loadedPackages(recordFile: string): LoadedPackage[] {
  const files = new Set(
    readFileSync(recordFile, 'utf8')
      .split('\n')
      .filter((u) => u.startsWith('file:'))
      .map((u) => fileURLToPath(u)),
  );
  const byRoot = new Map<string, LoadedPackage>();
  for (const file of files) {
    const pkg = packageOf(file);
    if (!pkg) continue;
    let entry = byRoot.get(pkg.root);
    if (!entry) {
      const du = spawnSync('du', ['-sb', '--exclude=node_modules', pkg.root], { encoding: 'utf8' });
      entry = { ...pkg, loadedBytes: 0, diskBytes: Number(du.stdout.split('\t')[0]) || 0 };
      byRoot.set(pkg.root, entry);
    }
    try {
      entry.loadedBytes += statSync(file).size;
    } catch {
      // gone since: not counted
    }
  }
  return [...byRoot.values()].sort((a, b) => b.diskBytes - a.diskBytes);
}
