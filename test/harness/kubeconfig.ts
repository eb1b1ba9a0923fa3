// Client-certificate kubeconfigs for the admin, the controller manager and restricted users.
import { writeFile } from 'node:fs/promises';
import { stringify } from 'yaml';
import type { KeyPairPem } from './pki.ts';

const b64 = (s: string) => Buffer.from(s).toString('base64');

export function kubeconfigYaml(server: string, caPem: string, user: string, client: KeyPairPem): string {
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'e2e', cluster: { server, 'certificate-authority-data': b64(caPem) } }],
    users: [
      { name: user, user: { 'client-certificate-data': b64(client.certPem), 'client-key-data': b64(client.keyPem) } },
    ],
    contexts: [{ name: 'e2e', context: { cluster: 'e2e', user } }],
    'current-context': 'e2e',
  });
}

export async function writeKubeconfig(
  file: string,
  server: string,
  caPem: string,
  user: string,
  client: KeyPairPem,
): Promise<string> {
  await writeFile(file, kubeconfigYaml(server, caPem, user, client), { mode: 0o600 });
  return file;
}
