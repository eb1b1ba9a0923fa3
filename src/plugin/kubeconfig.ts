// Which kubeconfig and namespace, as kubectl picks them (client-go's clientcmd loader.go,
// NewDefaultClientConfigLoadingRules and Load): --kubeconfig alone (it must exist), else every file
// KUBECONFIG lists, else ~/.kube/config. The files are merged as kubectl merges them
// (src/cluster/kubeconfig-merge.ts): files that do not exist are skipped, and the first file to
// set a cluster, user or context of a name, or the current-context, wins. The namespace is -n's,
// else the context's in that merged view (--context, else current-context), else "default".
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import type { ClusterAccess } from '../cluster/kube-access.ts';
import { readMergedKubeconfig } from '../cluster/merged-kubeconfig.ts';
import { isObject } from '../json/object.ts';
import type { ConnectionFlags } from './args.ts';
import { UsageError } from './args.ts';

/** The kubeconfig access kubectl would use for these flags and this environment. */
export function kubeconfigAccess(flags: ConnectionFlags, env: NodeJS.ProcessEnv = process.env): ClusterAccess {
  const context = flags.context ? { context: flags.context } : {};
  if (flags.kubeconfig) return { mode: 'kubeconfig', path: flags.kubeconfig, ...context };
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
 * -n's namespace, else the context's in the kubeconfig `access` reads (merged when several files);
 * a kubeconfig that cannot be read gives "default" here, and its error when the plugin connects.
 */
export async function namespaceOf(flags: ConnectionFlags, access: ClusterAccess): Promise<string> {
  if (flags.namespace) return flags.namespace;
  const files = access.mode === 'kubeconfig' ? [access.path] : access.mode === 'merged-kubeconfig' ? access.files : [];
  try {
    return contextNamespace((await readMergedKubeconfig(files)).doc, flags.context) ?? 'default';
  } catch {
    return 'default';
  }
}
