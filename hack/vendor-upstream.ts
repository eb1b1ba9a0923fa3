// Refreshes the vendored upstream files (upstream/) from the Go module cache, where the same files
// ship in the modules' zips; upstream/SOURCES.md's table says which file comes from where.
//   node hack/vendor-upstream.ts           copy every file from its module (downloading it if needed)
//   node hack/vendor-upstream.ts --check   write nothing; exit 1 when a file differs from its source
// The newer Trainer snapshot (not served by the Go module proxy) is pinned by SHA-256 instead; a
// pinned file named SHA256SUMS pins a whole tree: every file it lists, by the sum it gives.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

export const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const upstreamRoot = path.join(projectRoot, 'upstream');

/** A file copied from a Go module: `file` is relative to upstream/, `source` to the module's root. */
export interface ModuleFile {
  file: string;
  module: string;
  version: string;
  source: string;
}

/** A file that no module on the proxy ships, pinned by its SHA-256. */
export interface PinnedFile {
  file: string;
  sha256: string;
}

const cell = (s: string): string => s.trim().replace(/^`|`$/g, '');

/**
 * The two tables of upstream/SOURCES.md: rows of `| file | module | version | path |` and of
 * `| file | repository | commit | path | sha256 |`.
 */
export async function vendoredFiles(root = upstreamRoot): Promise<{ modules: ModuleFile[]; pinned: PinnedFile[] }> {
  const text = await readFile(path.join(root, 'SOURCES.md'), 'utf8');
  const modules: ModuleFile[] = [];
  const pinned: PinnedFile[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith('|') || /^\|\s*(file|-)/.test(line)) continue;
    const cells = line.split('|').slice(1, -1).map(cell);
    if (cells.length === 4) modules.push({ file: cells[0], module: cells[1], version: cells[2], source: cells[3] });
    else if (cells.length === 5) pinned.push({ file: cells[0], sha256: cells[4] });
    else throw new Error(`upstream/SOURCES.md: a table row with ${cells.length} cells: ${line}`);
  }
  return { modules, pinned: [...pinned, ...(await pinnedTrees(root, pinned))] };
}

/** The files a pinned `<dir>/SHA256SUMS` (sha256sum's format) lists, each pinned by its sum. */
async function pinnedTrees(root: string, pinned: PinnedFile[]): Promise<PinnedFile[]> {
  const out: PinnedFile[] = [];
  for (const sums of pinned.filter((f) => path.posix.basename(f.file) === 'SHA256SUMS')) {
    const dir = path.posix.dirname(sums.file);
    const text = await readFile(path.join(root, sums.file), 'utf8').catch(() => '');
    for (const line of text.split('\n')) {
      const m = /^([0-9a-f]{64}) [ *](.+)$/.exec(line);
      if (m) out.push({ file: path.posix.join(dir, m[2]), sha256: m[1] });
      else if (line !== '') throw new Error(`upstream/${sums.file}: not a sha256sum line: ${line.slice(0, 120)}`);
    }
  }
  return out;
}

/** The module's folder in the Go module cache, downloaded from the proxy when absent. */
export async function moduleDir(module: string, version: string, go = 'go'): Promise<string> {
  let stdout: string;
  let failure = '';
  try {
    ({ stdout } = await promisify(execFile)(go, ['mod', 'download', '-json', `${module}@${version}`], {
      cwd: projectRoot,
      env: { ...process.env, GOWORK: 'off', GOFLAGS: '-mod=mod', GOTOOLCHAIN: 'local' },
      maxBuffer: 1 << 20,
    }));
  } catch (err) {
    const e = err as { code?: string; stdout?: string; message: string };
    if (e.code === 'ENOENT')
      throw new Error(
        `\`${go}\` not found: the vendored files are refreshed from the Go module cache, which needs Go`,
        { cause: err },
      );
    stdout = e.stdout ?? '';
    failure = e.message.split('\n')[0];
  }
  let info: { Dir?: string; Error?: string } = {};
  try {
    info = JSON.parse(stdout || '{}');
  } catch {
    failure ||= `unreadable output: ${stdout.slice(0, 200)}`;
  }
  if (!info.Dir)
    throw new Error(`go mod download ${module}@${version}: ${info.Error ?? failure ?? 'no folder reported'}`);
  return info.Dir;
}

export const sha256 = (data: Buffer | string): string => createHash('sha256').update(data).digest('hex');

/** Each vendored file that differs from its source, with why (empty when all match). */
export async function staleFiles(root = upstreamRoot, go = 'go'): Promise<string[]> {
  const { modules, pinned } = await vendoredFiles(root);
  const out: string[] = [];
  for (const f of modules) {
    const dir = await moduleDir(f.module, f.version, go);
    const [ours, theirs] = await Promise.all([
      readFile(path.join(root, f.file)).catch(() => undefined),
      readFile(path.join(dir, f.source)),
    ]);
    if (ours === undefined || !ours.equals(theirs))
      out.push(`${f.file}: differs from ${f.module}@${f.version} ${f.source}`);
  }
  for (const f of pinned) {
    const ours = await readFile(path.join(root, f.file)).catch(() => undefined);
    if (ours === undefined || sha256(ours) !== f.sha256)
      out.push(`${f.file}: its SHA-256 is not the one upstream/SOURCES.md pins`);
  }
  return out;
}

async function main(): Promise<number> {
  if (process.argv.includes('--check')) {
    const stale = await staleFiles();
    for (const s of stale) console.error(s);
    return stale.length > 0 ? 1 : 0;
  }
  const { modules } = await vendoredFiles();
  for (const f of modules) {
    const dir = await moduleDir(f.module, f.version);
    // A new component's folder (e.g. kueue-v0.19.2/crds/) is made on first refresh.
    await mkdir(path.dirname(path.join(upstreamRoot, f.file)), { recursive: true });
    await writeFile(path.join(upstreamRoot, f.file), await readFile(path.join(dir, f.source)));
    console.log(`upstream/${f.file} <- ${f.module}@${f.version}/${f.source}`);
  }
  return 0;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exitCode = await main().catch((err: Error) => {
    console.error(`vendor-upstream: ${err.message}`);
    return 2;
  });
}
