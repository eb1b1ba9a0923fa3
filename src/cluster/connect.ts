// `serve`'s connection to the API server from its ClusterAccess: the in-cluster service account
// or a kubeconfig read by kube-access.ts (for `kubectl trainjob`, kubectl's files merged by
// merged-kubeconfig.ts), without @kubernetes/client-node; a kubeconfig user that
// needs client-node (exec, auth-provider) loads it, and its credentials come from the KubeConfig
// as before (kubeconfig-connection.ts). Impersonation is sent here on both paths.
import { createSecureContext } from 'node:tls';
import { apiClient, type ApiClient } from './api-request.ts';
import { directConnection, type ApiConnection } from './connection.ts';
import { impersonationHeaders } from './impersonation.ts';
import { inClusterAccess, loadKubeconfigFile, type ClusterAccess } from './kube-access.ts';
import { loadMergedKubeconfig } from './merged-kubeconfig.ts';

export interface ClusterConnection {
  client: ApiClient;
  /** 'direct', or why client-node was loaded. */
  via: string;
}

export async function connectCluster(access: ClusterAccess): Promise<ClusterConnection | undefined> {
  switch (access.mode) {
    case 'none':
      return undefined;
    case 'in-cluster':
      if (!access.host || !access.port)
        throw new Error('in-cluster access without KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT');
      return { client: apiClient(directConnection(inClusterAccess(access.host, access.port))), via: 'direct' };
    case 'kubeconfig':
    case 'merged-kubeconfig': {
      const { loaded, merged, label } =
        access.mode === 'kubeconfig'
          ? {
              loaded: await loadKubeconfigFile(access.path, access.context),
              merged: undefined,
              label: `--kubeconfig ${access.path}`,
            }
          : await loadMergedKubeconfig(access.files, access.context);
      if (loaded.kind === 'client-node') {
        const [{ loadKubeConfig }, { kubeConfigConnection }] = await Promise.all([
          import('./client-node.ts'),
          import('./kubeconfig-connection.ts'),
        ]);
        return {
          client: apiClient(kubeConfigConnection(loadKubeConfig(access, merged)!), {
            headers: impersonationHeaders(loaded.impersonate),
          }),
          via: `client-node (${loaded.why})`,
        };
      }
      const connection = directConnection(loaded.access);
      await usableTls(connection, label);
      return {
        client: apiClient(connection, { headers: impersonationHeaders(loaded.access.impersonate) }),
        via: 'direct',
      };
    }
  }
}

/** A CA, certificate or key that TLS cannot use is a start-up error, not a failure of every call. */
async function usableTls(connection: ApiConnection, label: string): Promise<void> {
  try {
    const { tls } = await connection.material();
    if (connection.server.protocol !== 'https:') return;
    createSecureContext({ ca: tls.ca, cert: tls.cert, key: tls.key });
  } catch (err) {
    throw new Error(`${label}: the TLS material is not usable: ${(err as Error).message.split('\n')[0]}`, {
      cause: err,
    });
  }
}
