// An ApiConnection over a client-node KubeConfig, for what kube-access.ts does not implement (an
// exec plugin, an auth-provider): credentials come from kc.applyToHTTPSOptions on every request,
// as client-node's own calls get them, so a rotated token or certificate and an exec plugin's
// token are picked up. Only a type is imported: the caller has loaded client-node.
import type https from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';
import type { ApiConnection, TlsMaterial } from './connection.ts';

const asBuffer = (v: unknown): Buffer | undefined =>
  v === undefined || v === null ? undefined : Buffer.isBuffer(v) ? v : Buffer.from(String(v));

export function kubeConfigConnection(kc: KubeConfig): ApiConnection {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('no current context with a cluster');
  const server = new URL(cluster.server);
  return {
    server,
    ...(cluster.proxyUrl ? { proxyUrl: new URL(cluster.proxyUrl) } : {}),
    async material() {
      // No credentials over plain HTTP, as the direct path and client-go (clientcmd reads the
      // user's auth only for a TLS transport); client-node would send them in clear.
      if (server.protocol !== 'https:') return { tls: {}, headers: {} };
      const opts: https.RequestOptions = {};
      await kc.applyToHTTPSOptions(opts);
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(opts.headers ?? {})) headers[k.toLowerCase()] = String(v);
      if (opts.auth) headers.authorization = `Basic ${Buffer.from(opts.auth).toString('base64')}`;
      const tls: TlsMaterial = {
        ca: asBuffer(opts.ca),
        cert: asBuffer(opts.cert),
        key: asBuffer(opts.key),
        rejectUnauthorized: opts.rejectUnauthorized,
        servername: opts.servername,
      };
      for (const k of Object.keys(tls) as (keyof TlsMaterial)[]) if (tls[k] === undefined) delete tls[k];
      return { tls, headers };
    },
  };
}
