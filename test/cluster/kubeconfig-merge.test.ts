// Several kubeconfig documents merged as kubectl merges KUBECONFIG's files
// (src/cluster/kubeconfig-merge.ts, after client-go v0.37.2 tools/clientcmd loader.go Load and
// merge.go): the first file to set a name or current-context wins, the entry taken whole; relative
// paths resolved against the directory of the file the entry came from (ResolveLocalPaths); a file
// client-go would not load (a name twice in one list, not a mapping) refused, naming the file.
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import { KubeconfigFileError, mergeKubeconfigs, type KubeconfigDocument } from '../../src/cluster/kubeconfig-merge.ts';

const A = path.resolve('/opt/a/config');
const B = path.resolve('/home/b/.kube/config');
const cluster = (name: string, body: Record<string, unknown>) => ({ name, cluster: body });
const user = (name: string, body: Record<string, unknown>) => ({ name, user: body });
const context = (name: string, body: Record<string, unknown>) => ({ name, context: body });

describe('mergeKubeconfigs', () => {
  const merged: [string, KubeconfigDocument[], Record<string, unknown>][] = [
    [
      'no file: an empty Config',
      [],
      { apiVersion: 'v1', kind: 'Config', preferences: {}, clusters: [], users: [], contexts: [] },
    ],
    [
      'an empty file (null) is an empty Config, as client-go loads one',
      [{ file: A, doc: null }],
      { apiVersion: 'v1', kind: 'Config', preferences: {}, clusters: [], users: [], contexts: [] },
    ],
    [
      'the first file to name a cluster, user or context wins, the entry whole (no field of the later one)',
      [
        {
          file: A,
          doc: {
            clusters: [cluster('k', { server: 'https://a' })],
            users: [user('u', { token: 'from-a' })],
            contexts: [context('c', { cluster: 'k', user: 'u' })],
          },
        },
        {
          file: B,
          doc: {
            clusters: [
              cluster('k', { server: 'https://b', 'tls-server-name': 'b' }),
              cluster('k2', { server: 'https://b2' }),
            ],
            users: [user('u', { token: 'from-b', username: 'b' })],
            contexts: [context('c', { cluster: 'k2', user: 'u', namespace: 'ns-b' })],
          },
        },
      ],
      {
        apiVersion: 'v1',
        kind: 'Config',
        preferences: {},
        clusters: [cluster('k', { server: 'https://a' }), cluster('k2', { server: 'https://b2' })],
        users: [user('u', { token: 'from-a' })],
        contexts: [context('c', { cluster: 'k', user: 'u' })],
      },
    ],
    [
      'current-context: the first file that sets a non-empty one wins; an empty one does not set it',
      [
        { file: A, doc: { 'current-context': '' } },
        { file: B, doc: { 'current-context': 'from-b' } },
        { file: A + '2', doc: { 'current-context': 'from-third' } },
      ],
      {
        apiVersion: 'v1',
        kind: 'Config',
        preferences: {},
        clusters: [],
        users: [],
        contexts: [],
        'current-context': 'from-b',
      },
    ],
    [
      'a context in the second file over a cluster and user of the first: the merged view has all three',
      [
        { file: A, doc: { clusters: [cluster('k', { server: 'https://a' })], users: [user('u', { token: 't' })] } },
        { file: B, doc: { contexts: [context('c', { cluster: 'k', user: 'u' })], 'current-context': 'c' } },
      ],
      {
        apiVersion: 'v1',
        kind: 'Config',
        preferences: {},
        clusters: [cluster('k', { server: 'https://a' })],
        users: [user('u', { token: 't' })],
        contexts: [context('c', { cluster: 'k', user: 'u' })],
        'current-context': 'c',
      },
    ],
    [
      "relative paths against the directory of each entry's own file; absolute and inline ones kept",
      [
        {
          file: A,
          doc: {
            clusters: [cluster('ka', { server: 'https://a', 'certificate-authority': 'ca.crt' })],
            users: [
              user('ua', {
                'client-certificate': 'certs/client.crt',
                'client-key': '../keys/client.key',
                tokenFile: '/abs/token',
              }),
            ],
          },
        },
        {
          file: B,
          doc: {
            clusters: [cluster('kb', { server: 'https://b', 'certificate-authority': './ca.crt' })],
            users: [
              user('ub', { 'token-file': 'token', 'client-certificate-data': 'Q0VSVA==' }),
              user('exec-path', { exec: { command: 'bin/get-token', args: ['x'] } }),
              user('exec-on-path', { exec: { command: 'gke-gcloud-auth-plugin' } }),
            ],
          },
        },
      ],
      {
        apiVersion: 'v1',
        kind: 'Config',
        preferences: {},
        clusters: [
          cluster('ka', { server: 'https://a', 'certificate-authority': path.resolve('/opt/a/ca.crt') }),
          cluster('kb', { server: 'https://b', 'certificate-authority': path.resolve('/home/b/.kube/ca.crt') }),
        ],
        users: [
          user('ua', {
            'client-certificate': path.resolve('/opt/a/certs/client.crt'),
            'client-key': path.resolve('/opt/keys/client.key'),
            tokenFile: '/abs/token',
          }),
          user('ub', { 'token-file': path.resolve('/home/b/.kube/token'), 'client-certificate-data': 'Q0VSVA==' }),
          // client-go resolves an exec command only when it holds a path separator (GetAuthInfoFileReferences).
          user('exec-path', { exec: { command: path.resolve('/home/b/.kube/bin/get-token'), args: ['x'] } }),
          user('exec-on-path', { exec: { command: 'gke-gcloud-auth-plugin' } }),
        ],
        contexts: [],
      },
    ],
    [
      'a relative file name resolves against the process directory, as filepath.Abs(filepath.Dir(file))',
      [{ file: 'rel/config', doc: { clusters: [cluster('k', { 'certificate-authority': 'ca.crt' })] } }],
      {
        apiVersion: 'v1',
        kind: 'Config',
        preferences: {},
        clusters: [cluster('k', { 'certificate-authority': path.resolve('rel/ca.crt') })],
        users: [],
        contexts: [],
      },
    ],
    [
      'preferences.colors true if a file sets it; extensions by name, the first file winning',
      [
        {
          file: A,
          doc: { preferences: { colors: false }, extensions: [{ name: 'x', extension: { from: 'a' } }] },
        },
        {
          file: B,
          doc: { preferences: { colors: true }, extensions: [{ name: 'x', extension: { from: 'b' } }] },
        },
      ],
      {
        apiVersion: 'v1',
        kind: 'Config',
        preferences: { colors: true },
        clusters: [],
        users: [],
        contexts: [],
        extensions: [{ name: 'x', extension: { from: 'a' } }],
      },
    ],
  ];
  for (const [name, documents, want] of merged)
    it(name, () => {
      assert.deepEqual(mergeKubeconfigs(documents), want);
    });

  it('does not change its input', () => {
    const doc = { clusters: [cluster('k', { 'certificate-authority': 'ca.crt' })] };
    const before = structuredClone(doc);
    mergeKubeconfigs([{ file: A, doc }]);
    assert.deepEqual(doc, before);
  });

  const refused: [string, KubeconfigDocument[], RegExp][] = [
    [
      'a name twice in one list of one file (client-go: duplicate name in list), even where a later file has it once',
      [
        { file: A, doc: { users: [user('u', {})] } },
        { file: B, doc: { users: [user('v', { token: '1' }), user('v', { token: '2' })] } },
      ],
      new RegExp(`^kubeconfig file ${B}: duplicate name "v" in list users$`),
    ],
    [
      'a list as the document',
      [{ file: A, doc: [1, 2] }],
      new RegExp(`^kubeconfig file ${A}: not a kubeconfig: a mapping is expected, not a list$`),
    ],
    [
      'a scalar as the document',
      [{ file: A, doc: 'hello' }],
      /: not a kubeconfig: a mapping is expected, not a scalar$/,
    ],
    ['clusters not a list', [{ file: A, doc: { clusters: { k: {} } } }], /: clusters must be a list$/],
    ['an entry not a mapping', [{ file: A, doc: { contexts: ['c'] } }], /: contexts\[0\] must be a mapping$/],
    [
      'a name not a string',
      [{ file: A, doc: { users: [{ name: 7, user: {} }] } }],
      /: users\[0\]\.name must be a string$/,
    ],
    [
      "an entry's body not a mapping",
      [{ file: A, doc: { clusters: [{ name: 'k', cluster: 'https://x' }] } }],
      /: clusters entry "k": cluster must be a mapping$/,
    ],
    [
      'current-context not a string',
      [{ file: A, doc: { 'current-context': ['c'] } }],
      /: current-context must be a string$/,
    ],
    ['preferences not a mapping', [{ file: A, doc: { preferences: 'x' } }], /: preferences must be a mapping$/],
  ];
  for (const [name, documents, message] of refused)
    it(`refuses ${name}, naming the file`, () => {
      assert.throws(
        () => mergeKubeconfigs(documents),
        (err: Error) => err instanceof KubeconfigFileError && message.test(err.message),
      );
    });
});
