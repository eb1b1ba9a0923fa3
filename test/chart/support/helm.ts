// Running a built Helm against the chart: its own config, cache and data folders (a developer's
// Helm repositories and plugins are never read) and, for the commands that reach a cluster, the
// test cluster's kubeconfig only.
import { spawn } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { projectRoot } from '../../harness/binaries.ts';
import type { Obj } from '../../e2e/support/install.ts';

export const chartDir = path.join(projectRoot, 'charts/trainjob-webhook');

export interface HelmResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface Helm {
  /** e.g. `helm-v4.3.2`, for messages. */
  name: string;
  run(args: string[], opts?: { check?: boolean }): Promise<HelmResult>;
  /** `helm template` of the chart, parsed into its objects. */
  template(args: string[]): Promise<Obj[]>;
}

/**
 * A Helm binary with a home of its own; `kubeconfig` for the commands that reach a cluster.
 * `helm template` renders for `kubeVersion` (the chart's kubeVersion is checked against it):
 * without it, a Helm built without upstream's Makefile stamps (chartutil.k8sVersionMinor)
 * would assume Kubernetes v1.20.
 */
export async function helmAt(bin: string, kubeVersion: string, kubeconfig?: string): Promise<Helm> {
  const home = await mkdtemp(path.join(tmpdir(), 'tjw-helm-'));
  const env = {
    PATH: process.env.PATH ?? '',
    HOME: home,
    HELM_CONFIG_HOME: path.join(home, 'config'),
    HELM_CACHE_HOME: path.join(home, 'cache'),
    HELM_DATA_HOME: path.join(home, 'data'),
    KUBECONFIG: kubeconfig ?? path.join(home, 'no-kubeconfig'),
  };
  const name = path.basename(path.dirname(bin));
  const run = (args: string[], opts: { check?: boolean } = {}) =>
    new Promise<HelmResult>((resolve, reject) => {
      const child = spawn(bin, args, { env, stdio: ['ignore', 'pipe', 'pipe'], timeout: 120_000 });
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
      child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      child.once('error', reject);
      child.once('close', (code, signal) => {
        const result = { code: code ?? (signal ? 128 : -1), stdout, stderr };
        if (result.code !== 0 && opts.check !== false)
          reject(
            new Error(`${name} ${args.join(' ')} failed (exit ${result.code}): ${stderr.trim() || stdout.trim()}`),
          );
        else resolve(result);
      });
    });
  return {
    name,
    run,
    template: async (args) =>
      parseAllDocuments(
        (await run(['template', 'trainjob-webhook', chartDir, '--kube-version', kubeVersion, ...args])).stdout,
      )
        .map((d) => d.toJSON() as Obj | null)
        .filter((d): d is Obj => !!d?.kind),
  };
}
