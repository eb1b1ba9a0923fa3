// The kubectl plugin as users without Node get it: the single executable hack/build-plugin.ts makes,
// for this machine's platform (linux-x64), built once per content of its bundle and cached; and krew,
// built by `hack/build-binaries.sh krew`, to install it from its manifest as krew users would.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { bundle, inject, PLATFORMS, seaBlob } from '../../hack/build-plugin.ts';
import { binCacheDir, buildScript, goAvailable, isExecutable, readVersionsFile } from './binaries.ts';

/** Where krew is (TEST_ASSET_KREW, else the build cache). */
export function krewPath(env: NodeJS.ProcessEnv = process.env): string {
  return env.TEST_ASSET_KREW || path.join(binCacheDir(env), `krew-${readVersionsFile().KREW_VERSION}`, 'krew');
}

/** krew, building it first when missing and Go is available (about 20 s cold). */
export async function ensureKrew(env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const krew = krewPath(env);
  if (!isExecutable(krew) && goAvailable(env) && env.TJW_NO_BUILD !== '1') {
    const child = spawn('bash', [buildScript, 'krew'], { stdio: ['ignore', 2, 2] });
    const code = await new Promise<number | null>((resolve, reject) => {
      child.once('error', reject);
      child.once('exit', resolve);
    });
    if (code !== 0) throw new Error(`${buildScript} krew failed with exit code ${code}`);
  }
  if (!isExecutable(krew))
    throw new Error(`krew not available at ${krew} (run \`hack/build-binaries.sh krew\`, needs Go)`);
  return krew;
}

let built: Promise<string> | undefined;

/**
 * The linux-x64 single executable of the plugin as it is in this tree: the bundle is made (half a
 * second) and hashed; the executable for that hash is made once (about 5 s) and kept in the cache.
 */
export function pluginExecutable(env: NodeJS.ProcessEnv = process.env): Promise<string> {
  built ??= (async () => {
    const cache = path.join(binCacheDir(env), '..', 'sea', 'built');
    await mkdir(cache, { recursive: true });
    const scratch = await mkdtemp(path.join(cache, '.build-'));
    try {
      const file = await bundle(scratch);
      const key = createHash('sha256')
        .update(process.versions.node)
        .update(await readFile(file))
        .digest('hex')
        .slice(0, 16);
      const dir = path.join(cache, key);
      const exe = path.join(dir, 'kubectl-trainjob');
      if (existsSync(exe)) return exe;
      const blob = await seaBlob(scratch, file);
      const x64 = PLATFORMS.find((p) => p.id === 'linux-x64')!;
      await inject(x64, process.versions.node, blob, path.join(scratch, 'out'));
      // Another test process may have made the same one meanwhile: either rename wins, both are equal.
      await rename(path.join(scratch, 'out'), dir).catch((err: NodeJS.ErrnoException) => {
        if (!existsSync(exe)) throw err;
      });
      return exe;
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
  })();
  return built;
}
