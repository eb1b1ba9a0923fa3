// Which kubeconfig and namespace, as kubectl picks them: --kubeconfig, else the first file of
// KUBECONFIG that exists (kubectl merges them all; this reads one), else ~/.kube/config; the
// namespace from -n, else the context's (--context, else current-context), else "default".
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
  const found = listed.find((f) => existsSync(f));
  if (found) return found;
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
