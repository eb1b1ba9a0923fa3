// Review (s14) of src/cluster/kube-access.ts beside client-go v0.35.8's loader: a kubeconfig whose
// clusters, users or contexts list names one entry twice is refused by client-go when it converts
// the lists to maps (tools/clientcmd/api/v1/conversion.go: `duplicate name "u" in list`), so kubectl
// and every Go client fail on it. kube-access takes the first entry of that name (items.find) and
// serve runs with credentials (or a server) that no other client of the same file would pick: a
// copy-paste left two users `u`, and which one the webhook authenticates as is an accident of order.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadKubeconfigFile } from '../../src/cluster/kube-access.ts';

const entries = {
  clusters: [{ name: 'k', cluster: { server: 'https://10.0.0.1:6443' } }],
  users: [{ name: 'u', user: { token: 'first' } }],
  contexts: [{ name: 'c', context: { cluster: 'k', user: 'u' } }],
};

describe('review: a kubeconfig list naming an entry twice', () => {
  let dir = '';
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'tjw-kube-access-review-'));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  for (const [list, second] of [
    ['users', { name: 'u', user: { token: 'second' } }],
    ['clusters', { name: 'k', cluster: { server: 'https://10.0.0.2:6443' } }],
    ['contexts', { name: 'c', context: { cluster: 'k', user: 'nobody' } }],
  ] as const) {
    it(`is refused in one line when ${list} names one twice (client-go: duplicate name in list)`, async () => {
      const file = path.join(dir, list);
      await writeFile(file, JSON.stringify({ ...entries, [list]: [...entries[list], second], 'current-context': 'c' }));
      await assert.rejects(loadKubeconfigFile(file), { message: /^--kubeconfig \S+: .*duplicate/ });
    });
  }
});
