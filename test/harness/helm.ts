// Helm 3 and Helm 4, built by `hack/build-binaries.sh helm` into the binary cache (TEST_ASSET_HELM3
// and TEST_ASSET_HELM4 point elsewhere). The chart's tests render with both; upgrades try both.
import path from 'node:path';
import { binCacheDir, buildScript, goAvailable, isExecutable, readVersionsFile } from './binaries.ts';
import { spawn } from 'node:child_process';

export interface HelmBinaries {
  helm3: string;
  helm4: string;
}

export function locateHelmBinaries(env: NodeJS.ProcessEnv = process.env): HelmBinaries | { missing: string[] } {
  const v = readVersionsFile();
  const helm3 = env.TEST_ASSET_HELM3 || path.join(binCacheDir(env), `helm-${v.HELM3_VERSION}-stamped`, 'helm');
  const helm4 = env.TEST_ASSET_HELM4 || path.join(binCacheDir(env), `helm-${v.HELM4_VERSION}-stamped`, 'helm');
  const missing = [helm3, helm4].filter((f) => !isExecutable(f));
  return missing.length > 0 ? { missing } : { helm3, helm4 };
}

/**
 * Why a suite that runs Helm skips, or false: Helm neither built nor buildable (no Go, or
 * TJW_NO_BUILD=1), outside CI (in CI a missing Helm fails the suite instead).
 */
export function helmSkipReason(env: NodeJS.ProcessEnv = process.env): string | false {
  const missing = 'missing' in locateHelmBinaries(env) && !(goAvailable(env) && env.TJW_NO_BUILD !== '1');
  return missing && env.CI !== 'true'
    ? 'Helm 3 and 4 are not built and Go is not installed (hack/build-binaries.sh helm)'
    : false;
}

/** Both Helms, building them first when missing and Go is available (minutes, cold). */
export async function ensureHelmBinaries(env: NodeJS.ProcessEnv = process.env): Promise<HelmBinaries> {
  let found = locateHelmBinaries(env);
  if ('missing' in found && goAvailable(env) && env.TJW_NO_BUILD !== '1') {
    process.stderr.write(`[harness] building Helm with ${buildScript} helm (cold: minutes)\n`);
    const child = spawn('bash', [buildScript, 'helm'], { stdio: ['ignore', 2, 2] });
    const code = await new Promise<number | null>((resolve, reject) => {
      child.once('error', reject);
      child.once('exit', resolve);
    });
    if (code !== 0) throw new Error(`${buildScript} helm failed with exit code ${code}`);
    found = locateHelmBinaries(env);
  }
  if ('missing' in found)
    throw new Error(
      `Helm not available: missing ${found.missing.join(', ')} (run \`hack/build-binaries.sh helm\`, needs Go)`,
    );
  return found;
}
