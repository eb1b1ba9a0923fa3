// Running the built kubectl (within the API server's version skew) against the test cluster.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';

export interface KubectlOptions {
  /** Written to kubectl's stdin (for `-f -`). */
  input?: string;
  /** Another identity's kubeconfig (see makeUserKubeconfig); default the admin's. */
  kubeconfig?: string;
  /** Throw on a non-zero exit (default true); false returns the result for assertions. */
  check?: boolean;
  timeoutMs?: number;
}

export interface KubectlResult {
  code: number;
  stdout: string;
  stderr: string;
}

export class KubectlError extends Error {
  result: KubectlResult;
  constructor(args: string[], result: KubectlResult) {
    super(`kubectl ${args.join(' ')} failed (exit ${result.code}): ${result.stderr.trim() || result.stdout.trim()}`);
    this.result = result;
  }
}

export interface KubectlTarget {
  bin: string;
  kubeconfig: string;
  /** Discovery cache of this cluster only: ports are reused across runs, caches must not be. */
  cacheDir: string;
}

export function runKubectl(target: KubectlTarget, args: string[], opts: KubectlOptions = {}): Promise<KubectlResult> {
  return new Promise((resolve, reject) => {
    // --kubeconfig explicitly, and a minimal env, so a developer's own cluster is never touched.
    const child = spawn(
      target.bin,
      ['--kubeconfig', opts.kubeconfig ?? target.kubeconfig, '--cache-dir', target.cacheDir, ...args],
      {
        env: { PATH: process.env.PATH, HOME: process.env.HOME },
        stdio: ['pipe', 'pipe', 'pipe'],
        timeout: opts.timeoutMs ?? 120_000,
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.once('error', reject);
    child.once('close', (code, signal) => {
      const result = { code: code ?? (signal ? 128 : -1), stdout, stderr };
      if (result.code !== 0 && opts.check !== false) reject(new KubectlError(args, result));
      else resolve(result);
    });
    child.stdin.end(opts.input ?? '');
  });
}

/** YAML text or a path to a YAML file: one-line strings that name an existing file are files. */
export function yamlSource(textOrFile: string): { file?: string; text?: string } {
  return !textOrFile.includes('\n') && existsSync(textOrFile) ? { file: textOrFile } : { text: textOrFile };
}
