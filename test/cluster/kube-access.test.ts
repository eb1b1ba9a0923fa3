// Reading a kubeconfig or the in-cluster service account without client-node
// (src/cluster/kube-access.ts): each field form to the connection material, client-go's rules
// (relative paths against the kubeconfig's directory, conflicting fields refused), users only
// client-node implements handed to it, and bad or hostile files each a one-line error.
//
// A clusters, users or contexts list that names one entry twice is refused, as client-go v0.35.8
// refuses it when it converts the lists to maps (tools/clientcmd/api/v1/conversion.go: `duplicate
// name "u" in list`), so kubectl and every Go client fail on it: taking the first entry of that
// name would run serve with credentials (or a server) no other client of the same file picks.
// In a pod the API server is reached over https whatever the port, as rest.InClusterConfig
// ("https://" + net.JoinHostPort(host, port), rest/config.go); client-node picks plain http on
// ports 80, 8080 and 8001, where no credentials are sent, so every call would be anonymous.
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  inClusterAccess,
  loadKubeconfigFile,
  MAX_KUBECONFIG_BYTES,
  type LoadedAccess,
} from '../../src/cluster/kube-access.ts';

const b64 = (s: string) => Buffer.from(s).toString('base64');

/** A kubeconfig (JSON is YAML) with one context `c` over `cluster` and `user`. */
const config = (cluster: Record<string, unknown>, user: Record<string, unknown> = {}) =>
  JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'k', cluster: { server: 'https://10.0.0.1:6443', ...cluster } }],
    users: [{ name: 'u', user }],
    contexts: [{ name: 'c', context: { cluster: 'k', user: 'u' } }],
    'current-context': 'c',
  });

describe('kubeconfig to connection material', () => {
  // Made now: the table's expected paths name it.
  const dir = mkdtempSync(path.join(tmpdir(), 'tjw-kube-access-'));
  let n = 0;
  before(async () => {
    await writeFile(path.join(dir, 'ca.crt'), 'CA');
    await writeFile(path.join(dir, 'client.crt'), 'CERT');
    await writeFile(path.join(dir, 'client.key'), 'KEY');
    await writeFile(path.join(dir, 'token'), 'tok');
  });
  after(() => rm(dir, { recursive: true, force: true }));
  const load = async (text: string): Promise<LoadedAccess> => {
    const file = path.join(dir, `kubeconfig-${n++}`);
    await writeFile(file, text);
    return loadKubeconfigFile(file);
  };
  const at = (f: string) => path.join(dir, f);

  const read: [string, string, unknown][] = [
    [
      'a token and inline CA',
      config({ 'certificate-authority-data': b64('CA') }, { token: 't' }),
      { server: 'https://10.0.0.1:6443', ca: { data: Buffer.from('CA') }, token: 't', insecureSkipTlsVerify: false },
    ],
    [
      'relative CA, certificate and key files against the kubeconfig directory',
      config(
        { 'certificate-authority': 'ca.crt' },
        { 'client-certificate': 'client.crt', 'client-key': './client.key' },
      ),
      {
        server: 'https://10.0.0.1:6443',
        ca: { file: at('ca.crt') },
        cert: { file: at('client.crt') },
        key: { file: at('client.key') },
        insecureSkipTlsVerify: false,
      },
    ],
    [
      'inline client certificate and key',
      config({}, { 'client-certificate-data': b64('CERT'), 'client-key-data': b64('KEY') }),
      {
        server: 'https://10.0.0.1:6443',
        cert: { data: Buffer.from('CERT') },
        key: { data: Buffer.from('KEY') },
        insecureSkipTlsVerify: false,
      },
    ],
    [
      'tokenFile (client-go), relative',
      config({}, { tokenFile: 'token' }),
      { server: 'https://10.0.0.1:6443', tokenFile: at('token'), insecureSkipTlsVerify: false },
    ],
    [
      "token-file (client-node's spelling)",
      config({}, { 'token-file': at('token') }),
      { server: 'https://10.0.0.1:6443', tokenFile: at('token'), insecureSkipTlsVerify: false },
    ],
    [
      'tokenFile wins over token (the transport reads the file)',
      config({}, { token: 'static', tokenFile: 'token' }),
      { server: 'https://10.0.0.1:6443', tokenFile: at('token'), insecureSkipTlsVerify: false },
    ],
    [
      'basic auth',
      config({}, { username: 'admin', password: 'pw' }),
      { server: 'https://10.0.0.1:6443', basic: { username: 'admin', password: 'pw' }, insecureSkipTlsVerify: false },
    ],
    [
      'insecure-skip-tls-verify and tls-server-name',
      config({ 'insecure-skip-tls-verify': true, 'tls-server-name': 'kubernetes.default' }),
      { server: 'https://10.0.0.1:6443', insecureSkipTlsVerify: true, tlsServerName: 'kubernetes.default' },
    ],
    [
      'proxy-url http and a server path prefix, trailing slash dropped',
      config({ server: 'https://rancher.example/k8s/clusters/c-1/', 'proxy-url': 'http://proxy:3128' }),
      {
        server: 'https://rancher.example/k8s/clusters/c-1',
        proxyUrl: 'http://proxy:3128',
        insecureSkipTlsVerify: false,
      },
    ],
    [
      'proxy-url socks5',
      config({ 'proxy-url': 'socks5://proxy:1080' }),
      { server: 'https://10.0.0.1:6443', proxyUrl: 'socks5://proxy:1080', insecureSkipTlsVerify: false },
    ],
    [
      'proxy-url socks5h (client-node speaks it, and so does socks-proxy-agent)',
      config({ 'proxy-url': 'socks5h://proxy:1080' }),
      { server: 'https://10.0.0.1:6443', proxyUrl: 'socks5h://proxy:1080', insecureSkipTlsVerify: false },
    ],
    [
      'proxy-url socks4a',
      config({ 'proxy-url': 'socks4a://proxy:1080' }),
      { server: 'https://10.0.0.1:6443', proxyUrl: 'socks4a://proxy:1080', insecureSkipTlsVerify: false },
    ],
    [
      'impersonation: as alone',
      config({}, { token: 't', as: 'bob' }),
      {
        server: 'https://10.0.0.1:6443',
        token: 't',
        impersonate: { user: 'bob', groups: [], extra: [] },
        insecureSkipTlsVerify: false,
      },
    ],
    [
      'impersonation: as, as-uid, as-groups, as-user-extra',
      config(
        {},
        {
          token: 't',
          as: 'bob',
          'as-uid': '42',
          'as-groups': ['a', 'b'],
          'as-user-extra': { scopes: ['x', 'y'], 'example.com/team': ['z'] },
        },
      ),
      {
        server: 'https://10.0.0.1:6443',
        token: 't',
        impersonate: {
          user: 'bob',
          uid: '42',
          groups: ['a', 'b'],
          extra: [
            ['scopes', ['x', 'y']],
            ['example.com/team', ['z']],
          ],
        },
        insecureSkipTlsVerify: false,
      },
    ],
    [
      'a context without a user: no credentials',
      JSON.stringify({
        clusters: [{ name: 'k', cluster: { server: 'http://127.0.0.1:8080' } }],
        contexts: [{ name: 'c', context: { cluster: 'k' } }],
        'current-context': 'c',
      }),
      { server: 'http://127.0.0.1:8080', insecureSkipTlsVerify: false },
    ],
    [
      'YAML with anchors and other contexts that are broken',
      'clusters:\n- name: k\n  cluster: &k {server: "https://a:1"}\n- name: other\n  cluster: {server: 42}\ncontexts:\n- {name: c, context: {cluster: k, user: u}}\n- {name: d, context: {cluster: nope}}\ncurrent-context: c\nusers:\n- {name: u, user: {token: x}}\n',
      { server: 'https://a:1', token: 'x', insecureSkipTlsVerify: false },
    ],
  ];
  for (const [name, text, access] of read) {
    it(`reads ${name}`, async () => assert.deepEqual(await load(text), { kind: 'direct', access }));
  }

  const delegated: [string, string, RegExp][] = [
    ['exec', config({}, { exec: { apiVersion: 'client.authentication.k8s.io/v1', command: 'aws' } }), /has exec/],
    ['auth-provider', config({}, { 'auth-provider': { name: 'oidc', config: {} } }), /has auth-provider/],
  ];
  for (const [name, text, why] of delegated) {
    it(`hands ${name} to client-node`, async () => {
      const loaded = await load(text);
      assert.equal(loaded.kind, 'client-node');
      if (loaded.kind === 'client-node') assert.match(loaded.why, why);
    });
  }

  const refused: [string, string, RegExp][] = [
    ['an empty file', '', /: no current context with a cluster$/],
    [
      'no current-context',
      JSON.stringify({ ...JSON.parse(config({})), 'current-context': undefined }),
      /: no current context with a cluster$/,
    ],
    [
      'a current-context that is not there',
      JSON.stringify({ ...JSON.parse(config({})), 'current-context': 'x' }),
      /: no current context with a cluster$/,
    ],
    [
      'a context whose cluster is not there',
      JSON.stringify({ ...JSON.parse(config({})), contexts: [{ name: 'c', context: { cluster: 'gone' } }] }),
      /: no current context with a cluster$/,
    ],
    [
      'a cluster without server',
      JSON.stringify({ ...JSON.parse(config({})), clusters: [{ name: 'k', cluster: {} }] }),
      /: no server found for cluster "k"$/,
    ],
    [
      'a user that is not there',
      JSON.stringify({ ...JSON.parse(config({})), users: [] }),
      /: user "u" of context "c" not found$/,
    ],
    [
      'a missing CA file',
      config({ 'certificate-authority': 'nope.crt' }),
      /: ENOENT: no such file or directory, open '.*nope\.crt'$/,
    ],
    ['a missing token file', config({}, { tokenFile: 'nope' }), /: ENOENT: .*nope'$/],
    ['malformed YAML', 'clusters: [unclosed\n  : :', /^--kubeconfig .*: .+$/],
    [
      'an alias bomb',
      `a: &a [x,x,x,x,x,x,x,x,x,x]\nb: &b [${'*a,'.repeat(9)}*a]\nc: &c [${'*b,'.repeat(9)}*b]\nd: &d [${'*c,'.repeat(9)}*c]\ne: [${'*d,'.repeat(99)}*d]\n`,
      /Excessive alias count/,
    ],
    ['a list where a mapping belongs', '- 1\n- 2\n', /: no current context with a cluster$/],
    ['a word', 'garbage\n', /: no current context with a cluster$/],
    [
      'clusters that are not a list',
      JSON.stringify({ ...JSON.parse(config({})), clusters: { k: {} } }),
      /: clusters must be a list$/,
    ],
    ['a server that is a number', config({ server: 42 }), /cluster "k"\.server must be a string$/],
    ['a server that is not an http(s) URL', config({ server: 'ftp://x' }), /server must be an http\(s\) URL/],
    [
      'insecure-skip-tls-verify as a string',
      config({ 'insecure-skip-tls-verify': 'true' }),
      /insecure-skip-tls-verify must be true or false$/,
    ],
    [
      'certificate-authority-data that is not base64',
      config({ 'certificate-authority-data': '!!not base64!!' }),
      /certificate-authority-data is not base64$/,
    ],
    [
      'a user that is a string',
      JSON.stringify({ ...JSON.parse(config({})), users: [{ name: 'u', user: 'token' }] }),
      /user must be a mapping$/,
    ],
    [
      'CA data and file together',
      config({ 'certificate-authority': 'ca.crt', 'certificate-authority-data': b64('CA') }),
      /certificate-authority-data and certificate-authority are both specified$/,
    ],
    [
      'a client certificate without key',
      config({}, { 'client-certificate-data': b64('CERT') }),
      /client-key-data or client-key must be specified/,
    ],
    [
      'a token and basic auth together',
      config({}, { token: 't', username: 'a', password: 'b' }),
      /more than one authentication method/,
    ],
    [
      'a CA with insecure-skip-tls-verify',
      config({ 'certificate-authority-data': b64('CA'), 'insecure-skip-tls-verify': true }),
      /insecure-skip-tls-verify together are not allowed$/,
    ],
    ['a proxy-url that is not a URL', config({ 'proxy-url': 'not a url' }), /proxy-url "not a url" is not a URL$/],
    [
      'a proxy-url scheme no client speaks',
      config({ 'proxy-url': 'ftp://proxy:21' }),
      /proxy-url scheme "ftp:" is not supported: http, https, socks5, socks5h, socks4, socks4a$/,
    ],
    [
      'as-groups without as (clientcmd validateAuthInfo)',
      config({}, { token: 't', 'as-groups': ['admins'] }),
      /requesting uid, groups or user-extra for user "u" without impersonating a user$/,
    ],
    ['as-uid without as', config({}, { token: 't', 'as-uid': '1' }), /without impersonating a user$/],
    [
      'as-groups that is not a list',
      config({}, { token: 't', as: 'bob', 'as-groups': 'admins' }),
      /as-groups must be a list of strings$/,
    ],
    [
      'an impersonated user with a newline (not a header value)',
      config({}, { token: 't', as: 'bob\nX-Evil: 1' }),
      /\.as holds a control character$/,
    ],
    [
      'a cluster named twice (client-go: duplicate name in list)',
      JSON.stringify({
        ...JSON.parse(config({})),
        clusters: [
          { name: 'k', cluster: { server: 'https://a:1' } },
          { name: 'k', cluster: { server: 'https://b:1' } },
        ],
      }),
      /duplicate name "k" in list clusters$/,
    ],
    [
      'a user named twice, even one not used',
      JSON.stringify({
        ...JSON.parse(config({})),
        users: [
          { name: 'u', user: {} },
          { name: 'v', user: {} },
          { name: 'v', user: {} },
        ],
      }),
      /duplicate name "v" in list users$/,
    ],
  ];
  for (const [name, text, message] of refused) {
    it(`refuses ${name} in one line`, async () => {
      await assert.rejects(load(text), (err: Error) => {
        assert.match(err.message, /^--kubeconfig \S+: /);
        assert.doesNotMatch(err.message, /\n/);
        assert.match(err.message, message);
        return true;
      });
    });
  }

  it('refuses a file larger than a kubeconfig may be, without parsing it', async () => {
    await assert.rejects(load(`# ${'x'.repeat(MAX_KUBECONFIG_BYTES)}\n`), {
      message: /^--kubeconfig \S+: the file is more than the \d+ bytes a kubeconfig may have$/,
    });
  });
  it('refuses a file that is not there', async () => {
    await assert.rejects(loadKubeconfigFile(path.join(dir, 'absent')), {
      message: /^--kubeconfig \S+absent: ENOENT: no such file or directory, open '\S+absent'$/,
    });
  });

  describe('a list naming an entry twice', () => {
    const entries = {
      clusters: [{ name: 'k', cluster: { server: 'https://10.0.0.1:6443' } }],
      users: [{ name: 'u', user: { token: 'first' } }],
      contexts: [{ name: 'c', context: { cluster: 'k', user: 'u' } }],
    };
    for (const [list, second] of [
      ['users', { name: 'u', user: { token: 'second' } }],
      ['clusters', { name: 'k', cluster: { server: 'https://10.0.0.2:6443' } }],
      ['contexts', { name: 'c', context: { cluster: 'k', user: 'nobody' } }],
    ] as const) {
      it(`is refused in one line when ${list} names one twice (client-go: duplicate name in list)`, async () => {
        await assert.rejects(
          load(JSON.stringify({ ...entries, [list]: [...entries[list], second], 'current-context': 'c' })),
          { message: /^--kubeconfig \S+: .*duplicate/ },
        );
      });
    }
  });
});

describe('in-cluster access', () => {
  it('the service host and port, the mounted CA and token file', () => {
    assert.deepEqual(inClusterAccess('10.96.0.1', '443', '/sa'), {
      server: 'https://10.96.0.1:443',
      ca: { file: '/sa/ca.crt' },
      tokenFile: '/sa/token',
      insecureSkipTlsVerify: false,
    });
  });
  it('an IPv6 host in brackets; HTTPS on every port, as rest.InClusterConfig (client-node uses plain HTTP on 80, 8080 and 8001)', () => {
    assert.equal(inClusterAccess('fd00::1', '443').server, 'https://[fd00::1]:443');
    for (const port of ['80', '8080', '8001'])
      assert.equal(inClusterAccess('10.96.0.1', port).server, `https://10.96.0.1:${port}`);
  });
  for (const port of ['80', '8080', '8001']) {
    it(`in a pod whose KUBERNETES_SERVICE_PORT is ${port}, the API server is reached over https, as rest.InClusterConfig does`, () => {
      assert.equal(inClusterAccess('10.96.0.1', port).server, `https://10.96.0.1:${port}`);
    });
  }
});
