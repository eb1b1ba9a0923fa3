// `serve`'s connection to the API server from its ClusterAccess: the in-cluster service account
// or a kubeconfig read by kube-access.ts (for `kubectl trainjob`, kubectl's files merged by
// merged-kubeconfig.ts), without @kubernetes/client-node; a kubeconfig user that
// needs client-node (exec, auth-provider) loads it, given the document already read (each file is
// read once), and its credentials come from the KubeConfig (kubeconfig-connection.ts).
// Impersonation is sent here on both paths.
import { createSecureContext } from 'node:tls';
import { apiClient, type ApiClient } from './api-request.ts';
import { directConnection, type ApiConnection } from './connection.ts';
import { impersonationHeaders } from './impersonation.ts';
import type { JsonObject } from '../json/object.ts';
import { inClusterAccess, readKubeconfigFile, type ClusterAccess, type LoadedAccess } from './kube-access.ts';
import { accessOfMerged, readMergedKubeconfig, type MergedKubeconfig } from './merged-kubeconfig.ts';

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
    case 'kubeconfig': {
      const { loaded, doc } = await readKubeconfigFile(access.path, access.context);
      return kubeconfigConnection(loaded, doc, access.context, `--kubeconfig ${access.path}`);
    }
    case 'merged-kubeconfig':
      return connectMerged(await readMergedKubeconfig(access.files), access.context);
  }
}

/** kubectl's files, already read and merged (the plugin takes its namespace from the same read). */
export async function connectMerged(merged: MergedKubeconfig, context?: string): Promise<ClusterConnection> {
  const { loaded, label } = await accessOfMerged(merged, context);
  return kubeconfigConnection(loaded, merged.doc, context, label);
}

/** `doc`: the kubeconfig `loaded` was read from, its relative paths already resolved (for client-node). */
async function kubeconfigConnection(
  loaded: LoadedAccess,
  doc: unknown,
  context: string | undefined,
  label: string,
): Promise<ClusterConnection> {
  if (loaded.kind === 'client-node') {
    const [{ clientNodeConfig }, { kubeConfigConnection }] = await Promise.all([
      import('./client-node.ts'),
      import('./kubeconfig-connection.ts'),
    ]);
    // accessFromKubeconfig has checked that `doc` is a mapping.
    const kc = clientNodeConfig(doc as JsonObject, context, label);
    return {
      client: apiClient(kubeConfigConnection(kc), { headers: impersonationHeaders(loaded.impersonate) }),
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
