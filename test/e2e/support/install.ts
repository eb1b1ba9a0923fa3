// Installing the project's kustomize overlays into the test control plane: rendered with the
// harness's kubectl (its built-in kustomize), applied server-side, and a ServiceAccount's own
// token (TokenRequest) for processes that run as the installed account.
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { projectRoot, type ControlPlane } from '../../harness/index.ts';

export type Obj = Record<string, any>;

export const manifestsDir = path.join(projectRoot, 'manifests');

/** `kubectl kustomize DIR`, parsed. */
export async function renderOverlay(cp: ControlPlane, dir: string): Promise<Obj[]> {
  const out = await cp.kubectl(['kustomize', dir]);
  return parseAllDocuments(out.stdout)
    .map((d) => d.toJSON() as Obj | null)
    .filter((d): d is Obj => !!d?.kind);
}

/**
 * An overlay of the user's own in a temp folder: `body` is a kustomization whose `MANIFESTS`
 * stands for the relative path to manifests/ (kustomize takes directories outside the root,
 * but only by relative path).
 */
export async function userOverlay(cp: ControlPlane, name: string, body: string): Promise<string> {
  const dir = await cp.tempDir(name);
  await writeFile(path.join(dir, 'kustomization.yaml'), body.replaceAll('MANIFESTS', path.relative(dir, manifestsDir)));
  return dir;
}

export const toYaml = (docs: Obj[]): string => docs.map((d) => stringify(d)).join('---\n');

export const byKind = (docs: Obj[], kind: string, name?: string): Obj[] => docs.filter((d) => d.kind === kind && (name === undefined || d.metadata?.name === name));

/** A kubeconfig that authenticates with a fresh token of the ServiceAccount (TokenRequest). */
export async function serviceAccountKubeconfig(cp: ControlPlane, namespace: string, name: string): Promise<string> {
  const token = (await cp.kubectl(['create', 'token', name, '-n', namespace, '--duration', '2h'])).stdout.trim();
  const file = path.join(await cp.tempDir(`sa-${namespace}-${name}`), 'kubeconfig');
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'test', cluster: { server: cp.server, 'certificate-authority-data': Buffer.from(cp.caPem).toString('base64') } }],
    users: [{ name, user: { token } }],
    contexts: [{ name: 'test', context: { cluster: 'test', user: name, namespace } }],
    'current-context': 'test',
  };
  await writeFile(file, stringify(config), { mode: 0o600 });
  return file;
}

/** Every webhook of the configurations pointed at 127.0.0.1:port by URL, with no caBundle (the rotation injects it). */
export function pointAtLoopback(configs: Obj[], port: number): Obj[] {
  return configs.map((c) => ({
    ...c,
    webhooks: c.webhooks.map((w: Obj) => ({ ...w, clientConfig: { url: `https://127.0.0.1:${port}${w.clientConfig.service.path}` } })),
  }));
}
