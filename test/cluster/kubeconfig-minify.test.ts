// What client-node is given (src/cluster/kubeconfig-minify.ts), as `kubectl config view --minify`
// (client-go's tools/clientcmd/api/helpers.go MinifyConfig): the context in use, its cluster and
// its user, whole; nothing else, so an invalid unrelated entry cannot fail the connection.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { minifiedKubeconfig } from '../../src/cluster/kubeconfig-minify.ts';

const DOC = {
  apiVersion: 'v1',
  kind: 'Config',
  clusters: [
    { name: 'broken', cluster: {} },
    { name: 'k', cluster: { server: 'https://k.example' }, extra: 1 },
  ],
  users: [
    { name: 'other', user: 'not a mapping' },
    { name: 'u', user: { exec: { command: '/opt/tools/bin/token' } } },
  ],
  contexts: [
    { name: 'c', context: { cluster: 'k', user: 'u', namespace: 'ns' } },
    { name: 'd', context: { cluster: 'broken' } },
  ],
  'current-context': 'c',
  preferences: { colors: true },
};

describe('minifiedKubeconfig', () => {
  it('the current context, its cluster and its user, whole', () => {
    assert.deepEqual(minifiedKubeconfig(DOC), {
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [DOC.clusters[1]],
      users: [DOC.users[1]],
      contexts: [DOC.contexts[0]],
      'current-context': 'c',
    });
  });
  it('--context: that context, current-context set to it; a context without a user has none', () => {
    assert.deepEqual(minifiedKubeconfig(DOC, 'd'), {
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [DOC.clusters[0]],
      users: [],
      contexts: [DOC.contexts[1]],
      'current-context': 'd',
    });
  });
});
