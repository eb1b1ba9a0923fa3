// Which kubeconfig and namespace, as kubectl picks them (client-go's clientcmd loader.go,
// NewDefaultClientConfigLoadingRules and Load): --kubeconfig alone (it must exist: Load's
// ExplicitPath), else every file KUBECONFIG lists, else ~/.kube/config. The files are merged as
// kubectl merges them (src/cluster/kubeconfig-merge.ts): files that do not exist are skipped, and
// the first file to set a cluster, user or context of a name, or the current-context, wins. The
// namespace is -n's, else the context's in that merged view (--context, else current-context),
// else "default". The files are read once, for the namespace and the connection both: a file read
// twice could change in between, and a pipe (KUBECONFIG=<(...)) is empty the second time.
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import type { ClusterAccess } from '../cluster/kube-access.ts';
import { readMergedKubeconfig, type MergedKubeconfig } from '../cluster/merged-kubeconfig.ts';
import { isObject } from '../json/object.ts';
import type { ConnectionFlags } from './args.ts';
import { UsageError } from './args.ts';

type MergedAccess = Extract<ClusterAccess, { mode: 'merged-kubeconfig' }>;

/**
 * The kubeconfig files kubectl would read for these flags and this environment; --kubeconfig is
 * one file read as the others are (merged-kubeconfig.ts), so its paths resolve the same way.
 */
export function kubeconfigAccess(flags: ConnectionFlags, env: NodeJS.ProcessEnv = process.env): MergedAccess {
  const context = flags.context ? { context: flags.context } : {};
  if (flags.kubeconfig) {
    // client-go's Load: os.Stat of the explicit path, IsNotExist an error (not a file skipped).
    if (!existsSync(flags.kubeconfig)) throw new UsageError(`the --kubeconfig file ${flags.kubeconfig} does not exist`);
    return { mode: 'merged-kubeconfig', files: [flags.kubeconfig], ...context };
  }
  // client-go: a KUBECONFIG that is set, whatever it lists, replaces ~/.kube/config.
  if (env.KUBECONFIG) {
    const files = [...new Set(env.KUBECONFIG.split(path.delimiter).filter(Boolean))];
    if (!files.some((f) => existsSync(f)))
      throw new UsageError(
        `no kubeconfig: none of the files KUBECONFIG lists exists (${files.join(', ')}); ` +
          'pass --kubeconfig FILE, or list an existing file in KUBECONFIG',
      );
    return { mode: 'merged-kubeconfig', files, ...context };
  }
  const home = path.join(env.HOME || homedir(), '.kube', 'config');
  if (existsSync(home)) return { mode: 'merged-kubeconfig', files: [home], ...context };
  throw new UsageError(
    'no kubeconfig: pass --kubeconfig FILE, set KUBECONFIG, or write ~/.kube/config (kubectl config view shows yours)',
  );
}

/** The context's namespace in a parsed (or merged) kubeconfig (undefined: none set). Pure. */
export function contextNamespace(doc: unknown, context: string | undefined): string | undefined {
  if (!isObject(doc)) return undefined;
  const name = context ?? doc['current-context'];
  const contexts = Array.isArray(doc.contexts) ? doc.contexts : [];
  const entry: unknown = contexts.find((c) => isObject(c) && c.name === name);
  const ctx = isObject(entry) && isObject(entry.context) ? entry.context : undefined;
  return typeof ctx?.namespace === 'string' && ctx.namespace ? ctx.namespace : undefined;
}

/**
 * The kubeconfig kubectl would use, read and merged once (for the connection too), and the
 * namespace: -n's, else the context's, else "default".
 */
export async function pluginKubeconfig(
  flags: ConnectionFlags,
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ merged: MergedKubeconfig; namespace: string }> {
  const merged = await readMergedKubeconfig(kubeconfigAccess(flags, env).files);
  return { merged, namespace: flags.namespace || contextNamespace(merged.doc, flags.context) || 'default' };
}
