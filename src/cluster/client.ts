// The cluster connection: from an explicit kubeconfig file or the in-cluster service account,
// never picked up implicitly (no ~/.kube/config, no KUBECONFIG).
import { KubeConfig } from '@kubernetes/client-node';
import type { ClusterAccess } from '../config/serve.ts';

export function loadKubeConfig(access: ClusterAccess): KubeConfig | undefined {
  if (access.mode === 'none') return undefined;
  const kc = new KubeConfig();
  if (access.mode === 'kubeconfig') {
    try {
      kc.loadFromFile(access.path);
    } catch (err) {
      throw new Error(`--kubeconfig ${access.path}: ${(err as Error).message.split('\n')[0]}`);
    }
    // A file that parses but names no cluster (empty, or no current-context) would only retry forever.
    if (!kc.getCurrentCluster()) throw new Error(`--kubeconfig ${access.path}: no current context with a cluster`);
  } else kc.loadFromCluster();
  return kc;
}

/** The HTTP status of a client-node ApiException, if the error is one. */
export function statusCode(err: unknown): number | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'number' ? code : undefined;
}

/** A short, single-line reason for a failed API call, without response bodies that may be large. */
export function describeError(err: unknown): string {
  const code = statusCode(err);
  const body = (err as { body?: unknown } | null)?.body;
  let reason = '';
  if (typeof body === 'string') {
    try {
      reason = String((JSON.parse(body) as { message?: unknown }).message ?? '');
    } catch {
      reason = '';
    }
  }
  const message = reason || (err instanceof Error ? err.message : String(err));
  return (code ? `HTTP ${code}: ` : '') + message.split('\n')[0].slice(0, 300);
}
