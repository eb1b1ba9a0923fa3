// Builds `kubectl-trainjob` as one executable per platform, for users without Node 24 (Node's single
// executable applications): the plugin is bundled into one CommonJS file (esbuild), made into a SEA
// blob by the Node that runs this script, and the blob is injected (postject) into the `node` binary
// of each platform, the same Node version, which the npm registry ships as `node-<os>-<arch>`
// packages. No code cache and no snapshot: both are tied to the building machine's CPU and
// platform, and the blob must run everywhere. Then one .tar.gz per platform and a krew manifest
// naming them by sha256 (`kubectl krew install --manifest=... --archive=...` installs from them).
// The linux archives also hold bin/kubectl_complete-trainjob, the POSIX shell script through which
// kubectl (1.26 and later) completes `kubectl trainjob ...`: it runs `kubectl-trainjob __complete`
// from its own directory. Not for Windows: kubectl runs no shell script there.
//
//   node hack/build-plugin.ts [--out dist/plugin] [--platforms linux-x64,linux-arm64,win-x64]
//                             [--base-uri https://example.invalid/releases/v0.1.0]
//
// darwin is not built: the registry serves no `node-darwin-*` package for this Node version (their
// last is 18.9.0); a darwin build would also need its signature removed before the injection and an
// ad-hoc one (`codesign --sign -`) after, which needs macOS.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmod, copyFile, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { stringify } from 'yaml';

const run = promisify(execFile);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** The module whose `pluginMain(argv, io)` the executable runs (as bin/kubectl-trainjob does). */
export const PLUGIN_MAIN = 'src/commands/trainjob.ts';
/** postject's fuse: Node looks for it to know a blob was injected (Node's docs, "Single executable applications"). */
export const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';
export const SEA_RESOURCE = 'NODE_SEA_BLOB';
/** kubectl's name for the plugin's completion helper (found on PATH beside kubectl-trainjob). */
export const COMPLETION_HELPER = 'kubectl_complete-trainjob';

export interface Platform {
  /** npm's name for it: node-<id> is the package with its node binary. */
  id: 'linux-x64' | 'linux-arm64' | 'win-x64';
  /** krew's selector labels (Go's GOOS/GOARCH). */
  os: 'linux' | 'windows';
  arch: 'amd64' | 'arm64';
  exe: string;
}

export const PLATFORMS: readonly Platform[] = [
  { id: 'linux-x64', os: 'linux', arch: 'amd64', exe: 'kubectl-trainjob' },
  { id: 'linux-arm64', os: 'linux', arch: 'arm64', exe: 'kubectl-trainjob' },
  { id: 'win-x64', os: 'windows', arch: 'amd64', exe: 'kubectl-trainjob.exe' },
];

export interface BuiltPlatform extends Platform {
  binary: string;
  archive: string;
  sha256: string;
}

export interface BuildResult {
  bundle: string;
  blob: string;
  platforms: BuiltPlatform[];
  manifest: string;
  nodeVersion: string;
}

const cacheDir = () =>
  path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'), 'trainjob-webhook', 'sea');

/** The bundle's start: bin/kubectl-trainjob's io and exit codes, without its top-level await (CommonJS). */
function entrySource(mainModule: string): string {
  return [
    `import { pluginMain as main } from ${JSON.stringify(mainModule)};`,
    'const line = (t) => (t.endsWith("\\n") ? t : `${t}\\n`);',
    'const io = { out: (t) => process.stdout.write(line(t)), err: (t) => process.stderr.write(line(t)) };',
    'main(process.argv.slice(2), io).then(',
    '  (code) => { process.exitCode = code; },',
    '  (err) => { process.stderr.write(`error: ${err?.stack ?? err}\\n`); process.exitCode = 1; },',
    ');',
    '',
  ].join('\n');
}

export async function bundle(out: string): Promise<string> {
  const { build } = await import('esbuild');
  const entry = path.join(out, 'entry.mjs');
  await writeFile(entry, entrySource(path.join(root, PLUGIN_MAIN)));
  const file = path.join(out, 'kubectl-trainjob.cjs');
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    platform: 'node',
    target: `node${process.versions.node.split('.')[0]}`,
    format: 'cjs',
    outfile: file,
    minify: true,
    legalComments: 'linked',
    logLevel: 'silent',
  });
  // import.meta is empty in CommonJS: code that reads files beside itself would break only at run time.
  const metaWarnings = result.warnings.filter((w) => w.id === 'empty-import-meta');
  if (metaWarnings.length > 0)
    throw new Error(
      `build-plugin: the plugin's code uses import.meta, which a single executable lacks:\n${metaWarnings
        .map((w) => `  ${w.location?.file}:${w.location?.line}: ${w.text}`)
        .join('\n')}`,
    );
  await rm(entry);
  return file;
}

export async function seaBlob(out: string, bundleFile: string): Promise<string> {
  const blob = path.join(out, 'kubectl-trainjob.blob');
  const config = path.join(out, 'sea-config.json');
  // Names relative to the folder it runs in: the blob records the main script's path, and an
  // absolute one would make the same tree build different archives in different folders.
  await writeFile(
    config,
    JSON.stringify({
      main: path.relative(out, bundleFile),
      output: path.relative(out, blob),
      disableExperimentalSEAWarning: true,
      useSnapshot: false,
      useCodeCache: false,
    }),
  );
  await run(process.execPath, ['--experimental-sea-config', path.basename(config)], { cwd: out });
  await rm(config);
  return blob;
}

/**
 * The sha256 of each platform's `node` binary, as the registry's `node-<id>` package ships it. npm
 * checks a tarball only against the registry's own integrity value and the lockfile does not name
 * these packages, so the binaries are pinned here and checked after every download and on every
 * cache hit. linux-x64's is the binary of the `node` package the lockfile pins (node_modules/node/bin/node).
 * A new Node version needs its three lines: download them once, compare linux-x64's with that binary.
 */
export const NODE_BINARY_SHA256: Readonly<Record<string, string>> = {
  'linux-x64@24.21.0': '7fde7b8afa198da66257f42ee2001d874c7355631e6d1579a5fb5ef1f246df4c',
  'linux-arm64@24.21.0': '0f8949d1028f6d61506b2d5bc57e7e6fe893d7b1997509b7847294fc9c616584',
  'win-x64@24.21.0': 'ba4e6d110e8c1592a1ecd390f6b05f3da124b13871a5be62b341a07a853c6c32',
};

/** The `node` binary of a platform at this Node's version, from the npm registry (cached, checked). */
async function nodeBinary(p: Platform, version: string): Promise<string> {
  const pinned = NODE_BINARY_SHA256[`${p.id}@${version}`];
  if (!pinned)
    throw new Error(
      `build-plugin: no pinned sha256 for node-${p.id}@${version} (NODE_BINARY_SHA256 in hack/build-plugin.ts)`,
    );
  const dir = path.join(cacheDir(), `node-${p.id}-${version}`);
  const binary = path.join(dir, 'package', 'bin', p.os === 'windows' ? 'node.exe' : 'node');
  if (!existsSync(binary)) {
    await mkdir(dir, { recursive: true });
    const { stdout } = await run('npm', ['pack', `node-${p.id}@${version}`, '--silent', '--pack-destination', dir], {
      maxBuffer: 1 << 20,
    });
    const tgz = path.join(dir, stdout.trim().split('\n').at(-1)!);
    await run('tar', ['-xzf', tgz, '-C', dir, 'package/bin']);
    await rm(tgz);
    if (!existsSync(binary)) throw new Error(`build-plugin: node-${p.id}@${version} has no ${binary}`);
  }
  const actual = await sha256(binary);
  if (actual !== pinned) {
    await rm(dir, { recursive: true, force: true });
    throw new Error(`build-plugin: node-${p.id}@${version}'s binary has sha256 ${actual}, not the pinned ${pinned}`);
  }
  return binary;
}

export async function inject(p: Platform, version: string, blob: string, dir: string): Promise<string> {
  const target = path.join(dir, p.exe);
  await mkdir(dir, { recursive: true });
  await copyFile(await nodeBinary(p, version), target);
  await chmod(target, 0o755);
  const postject = path.join(root, 'node_modules', 'postject', 'dist', 'cli.js');
  await run(process.execPath, [postject, target, SEA_RESOURCE, blob, '--sentinel-fuse', SEA_FUSE], {
    maxBuffer: 1 << 24,
  });
  return target;
}

/** A reproducible .tar.gz: fixed owner, mode and time, so the same binary gives the same sha256. */
async function archive(dir: string, files: string[], file: string): Promise<string> {
  await run('tar', [
    '--sort=name',
    '--owner=0',
    '--group=0',
    '--numeric-owner',
    '--mtime=@0',
    '-C',
    dir,
    '-cf',
    file.replace(/\.gz$/, ''),
    ...files,
  ]);
  await run('gzip', ['-n', '-f', file.replace(/\.gz$/, '')]);
  return file;
}

/** The files of a platform's archive: the executable, and on linux the completion helper. */
export const archiveFiles = (p: Platform): string[] => (p.os === 'linux' ? [p.exe, COMPLETION_HELPER] : [p.exe]);

/** The completion helper beside the executable, as it is in the checkout's bin/. */
async function completionHelper(dir: string): Promise<void> {
  const target = path.join(dir, COMPLETION_HELPER);
  await copyFile(path.join(root, 'bin', COMPLETION_HELPER), target);
  await chmod(target, 0o755);
}

const sha256 = async (file: string) =>
  createHash('sha256')
    .update(await readFile(file))
    .digest('hex');

/** krew's Plugin manifest for the archives (krew.sigs.k8s.io's schema, apiVersion v1alpha2). */
export function krewManifest(version: string, baseUri: string, built: readonly BuiltPlatform[]): string {
  return stringify({
    apiVersion: 'krew.googlecontainertools.github.com/v1alpha2',
    kind: 'Plugin',
    metadata: { name: 'trainjob' },
    spec: {
      version: `v${version}`,
      shortDescription: 'Scale a Kubeflow TrainJob and see its rebuild state',
      description:
        'Suspends a TrainJob, changes spec.trainer.numNodes, resumes it and waits until its JobSet runs the ' +
        'new count (trainjob-webhook must be installed in the cluster). `kubectl trainjob status` shows the ' +
        'count asked for, the count running and the rebuild state.',
      platforms: built.map((p) => ({
        selector: { matchLabels: { os: p.os, arch: p.arch } },
        uri: `${baseUri}/${path.basename(p.archive)}`,
        sha256: p.sha256,
        bin: p.exe,
        files: archiveFiles(p).map((from) => ({ from, to: '.' })),
      })),
    },
  });
}

export async function buildPlugin(
  opts: { out?: string; platforms?: readonly Platform['id'][]; baseUri?: string } = {},
): Promise<BuildResult> {
  const out = path.resolve(root, opts.out ?? 'dist/plugin');
  const nodeVersion = process.versions.node;
  const version = (JSON.parse(await readFile(path.join(root, 'package.json'), 'utf8')) as { version: string }).version;
  await rm(out, { recursive: true, force: true });
  await mkdir(out, { recursive: true });
  const bundleFile = await bundle(out);
  const blob = await seaBlob(out, bundleFile);
  const wanted = PLATFORMS.filter((p) => (opts.platforms ?? PLATFORMS.map((q) => q.id)).includes(p.id));
  const platforms: BuiltPlatform[] = [];
  for (const p of wanted) {
    const dir = path.join(out, p.id);
    const binary = await inject(p, nodeVersion, blob, dir);
    if (archiveFiles(p).includes(COMPLETION_HELPER)) await completionHelper(dir);
    const file = await archive(dir, archiveFiles(p), path.join(out, `kubectl-trainjob-${p.os}-${p.arch}.tar.gz`));
    platforms.push({ ...p, binary, archive: file, sha256: await sha256(file) });
  }
  const manifest = path.join(out, 'trainjob.yaml');
  await writeFile(
    manifest,
    krewManifest(version, opts.baseUri ?? `https://example.invalid/trainjob-webhook/releases/v${version}`, platforms),
  );
  return { bundle: bundleFile, blob, platforms, manifest, nodeVersion };
}

function flag(args: string[], name: string): string | undefined {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const result = await buildPlugin({
    out: flag(args, '--out'),
    platforms: flag(args, '--platforms')?.split(',') as Platform['id'][] | undefined,
    baseUri: flag(args, '--base-uri'),
  });
  for (const p of result.platforms) process.stdout.write(`${p.archive}  ${p.sha256}\n`);
  process.stdout.write(`${result.manifest}\n`);
}
