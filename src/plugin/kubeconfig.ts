// Which kubeconfig and namespace, as kubectl picks them: --kubeconfig, else the file KUBECONFIG
// names (files it lists that do not exist are skipped, as kubectl skips them), else ~/.kube/config;
// the namespace from -n, else the context's (--context, else current-context), else "default".
// kubectl merges several KUBECONFIG files (the first to set a key wins); the connection here
// (src/cluster/) reads one file, so several are refused, saying how to merge them into one, rather
// than read as one of them, which could pick another cluster than kubectl's.
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import path from 'node:path';
import { isObject } from '../json/object.ts';
import type { ConnectionFlags } from './args.ts';
import { UsageError } from './args.ts';

export function kubeconfigPath(flags: ConnectionFlags, env: NodeJS.ProcessEnv = process.env): string {
  if (flags.kubeconfig) return flags.kubeconfig;
  const listed = (env.KUBECONFIG ?? '').split(path.delimiter).filter(Boolean);
  const found = [...new Set(listed.filter((f) => existsSync(f)).map((f) => path.resolve(f)))];
  if (found.length > 1)
    throw new UsageError(
      `KUBECONFIG lists ${found.length} files (${found.join(', ')}); kubectl merges them, this plugin reads one kubeconfig. ` +
        'Pass --kubeconfig FILE, or merge them into one file first: kubectl config view --flatten > ~/.kube/merged-config, then --kubeconfig ~/.kube/merged-config',
    );
  if (found.length === 1) return found[0];
  const home = path.join(env.HOME || homedir(), '.kube', 'config');
  if (existsSync(home)) return home;
  throw new UsageError(
    'no kubeconfig: pass --kubeconfig FILE, set KUBECONFIG, or write ~/.kube/config (kubectl config view shows yours)',
  );
}

/** The context's namespace in a parsed kubeconfig (undefined: none set). Pure. */
export function contextNamespace(doc: unknown, context: string | undefined): string | undefined {
  if (!isObject(doc)) return undefined;
  const name = context ?? doc['current-context'];
  const contexts = Array.isArray(doc.contexts) ? doc.contexts : [];
  const entry: unknown = contexts.find((c) => isObject(c) && c.name === name);
  const ctx = isObject(entry) && isObject(entry.context) ? entry.context : undefined;
  return typeof ctx?.namespace === 'string' && ctx.namespace ? ctx.namespace : undefined;
}

export async function namespaceOf(flags: ConnectionFlags, file: string): Promise<string> {
  if (flags.namespace) return flags.namespace;
  const { parse } = await import('yaml');
  try {
    return contextNamespace(parse(await readFile(file, 'utf8'), { maxAliasCount: 100 }), flags.context) ?? 'default';
  } catch {
    return 'default';
  }
}
