// kubectl's kubeconfig files read and merged (src/cluster/merged-kubeconfig.ts), as client-go's
// ClientConfigLoadingRules.Load reads a precedence list (tools/clientcmd/loader.go, v0.37.2): a
// file that does not exist is skipped, any other file that cannot be read or parsed is an error
// naming it, and the merged view's current context becomes the connection. Through connectCluster
// ('merged-kubeconfig'), a user only client-node implements (exec) gets the same merged view:
// client-node's own KUBECONFIG merge would throw on a cluster two files name, and would run a
// relative exec command from the process's directory rather than the file's.
import assert from 'node:assert/strict';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { connectCluster } from '../../src/cluster/connect.ts';
import { MAX_KUBECONFIG_BYTES } from '../../src/cluster/kube-access.ts';
import { loadMergedKubeconfig, readMergedKubeconfig } from '../../src/cluster/merged-kubeconfig.ts';
import { createCA, issueServingCert } from '../harness/pki.ts';
import { listen } from './support/loopback.ts';

describe('merged kubeconfig files', () => {
  let dir = '';
  let a = '';
  let b = '';
  const missing = () => path.join(dir, 'missing', 'config');
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'tjw-merged-kubeconfig-'));
    [a, b] = [path.join(dir, 'a', 'config'), path.join(dir, 'b', 'config')];
    await Promise.all([mkdir(path.dirname(a)), mkdir(path.dirname(b))]);
    await writeFile(path.join(dir, 'b', 'ca.crt'), 'CA of b');
    // JSON is YAML too.
    await writeFile(
      a,
      JSON.stringify({
        clusters: [{ name: 'shared', cluster: { server: 'https://a.example:6443' } }],
        users: [{ name: 'me', user: { token: 'token-of-a' } }],
      }),
    );
    await writeFile(
      b,
      JSON.stringify({
        clusters: [
          { name: 'shared', cluster: { server: 'https://b.example:6443' } },
          { name: 'b-only', cluster: { server: 'https://b-only.example', 'certificate-authority': 'ca.crt' } },
        ],
        users: [{ name: 'me', user: { token: 'token-of-b' } }],
        contexts: [
          { name: 'work', context: { cluster: 'shared', user: 'me', namespace: 'ml-team' } },
          { name: 'other', context: { cluster: 'b-only', user: 'me' } },
        ],
        'current-context': 'work',
      }),
    );
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('skips a file that does not exist and merges the others in order, the first winning', async () => {
    const merged = await readMergedKubeconfig([missing(), a, '', b, a]);
    assert.deepEqual(merged.files, [a, b]);
    const { loaded, label } = await loadMergedKubeconfig([missing(), a, b]);
    assert.equal(label, `the kubeconfig merged from ${a}, ${b}`);
    assert.deepEqual(loaded, {
      kind: 'direct',
      access: { server: 'https://a.example:6443', token: 'token-of-a', insecureSkipTlsVerify: false },
    });
  });

  it("--context picks a context of the merged view; a relative CA resolves against its own file's directory", async () => {
    const { loaded } = await loadMergedKubeconfig([a, b], 'other');
    assert.deepEqual(loaded, {
      kind: 'direct',
      access: {
        server: 'https://b-only.example',
        ca: { file: path.join(dir, 'b', 'ca.crt') },
        token: 'token-of-a',
        insecureSkipTlsVerify: false,
      },
    });
  });

  it("an error of the merged view names the files merged; one file's error names that file", async () => {
    await assert.rejects(loadMergedKubeconfig([a, b], 'nope'), {
      message: `the kubeconfig merged from ${a}, ${b}: context "nope" does not exist`,
    });
    await assert.rejects(loadMergedKubeconfig([a]), { message: `kubeconfig ${a}: no current context with a cluster` });
    await assert.rejects(loadMergedKubeconfig([missing()]), {
      message: /^no kubeconfig: none of the files \(.*\) exists$/,
    });
  });

  const hostile: [string, (file: string) => Promise<void>, RegExp][] = [
    [
      'a file over the size cap',
      (f) => writeFile(f, `# ${'x'.repeat(MAX_KUBECONFIG_BYTES)}\n`),
      /: the file is more than the \d+ bytes a kubeconfig may have$/,
    ],
    ['a directory (read error other than not found: not skipped)', (f) => mkdir(f), /: EISDIR: /],
    ['YAML that does not parse', (f) => writeFile(f, 'clusters: [\n'), /: .+/],
    [
      'a list, not a mapping',
      (f) => writeFile(f, '- a\n- b\n'),
      /: not a kubeconfig: a mapping is expected, not a list$/,
    ],
    [
      'a name twice in one list',
      (f) => writeFile(f, 'contexts: [{name: c, context: {}}, {name: c, context: {}}]\n'),
      /: duplicate name "c" in list contexts$/,
    ],
    [
      'an alias bomb',
      (f) => writeFile(f, `a: &a [x]\n${Array.from({ length: 200 }, (_, i) => `k${i}: *a`).join('\n')}\n`),
      /: Excessive alias count/,
    ],
  ];
  for (const [name, write, reason] of hostile)
    it(`refuses ${name} in one line naming the file, whatever comes before it`, async () => {
      const file = path.join(dir, `hostile-${name.replace(/\W+/g, '-')}`);
      await write(file);
      await assert.rejects(loadMergedKubeconfig([a, file, b]), (err: Error) => {
        assert.ok(err.message.startsWith(`kubeconfig file ${file}: `), err.message);
        assert.match(err.message, reason);
        assert.doesNotMatch(err.message, /\n/);
        return true;
      });
    });
});

describe('connectCluster: merged kubeconfig files, a user with exec (client-node)', () => {
  let dir = '';
  let api: Server;
  let apiUrl = '';
  const seen: (string | undefined)[] = [];
  let caData = '';
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'tjw-merged-connect-'));
    const ca = await createCA();
    const serving = await issueServingCert(ca, 'apiserver');
    caData = Buffer.from(ca.certPem).toString('base64');
    api = createServer({ cert: serving.certPem, key: serving.keyPem }, (req, res) => {
      seen.push(req.headers.authorization);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
    apiUrl = `https://127.0.0.1:${await listen(api)}`;
  });
  after(async () => {
    api.closeAllConnections();
    api.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("client-node is given the merged view: the first file's cluster, the exec command against its own file", async () => {
    const [first, second] = [path.join(dir, 'first', 'config'), path.join(dir, 'second', 'config')];
    await Promise.all([mkdir(path.dirname(first)), mkdir(path.join(dir, 'second', 'bin'), { recursive: true })]);
    const plugin = path.join(dir, 'second', 'bin', 'token.sh');
    await writeFile(
      plugin,
      `#!/bin/sh\necho '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"from-exec"}}'\n`,
    );
    await chmod(plugin, 0o755);
    await writeFile(
      first,
      JSON.stringify({
        clusters: [{ name: 'k', cluster: { server: apiUrl, 'certificate-authority-data': caData } }],
        'current-context': 'c',
      }),
    );
    await writeFile(
      second,
      JSON.stringify({
        // The same name as the first file's: client-node's own merge throws "Duplicate cluster".
        clusters: [{ name: 'k', cluster: { server: 'https://127.0.0.1:1' } }],
        users: [
          {
            name: 'u',
            user: {
              exec: {
                apiVersion: 'client.authentication.k8s.io/v1',
                command: './bin/token.sh',
                interactiveMode: 'Never',
              },
            },
          },
        ],
        contexts: [{ name: 'c', context: { cluster: 'k', user: 'u' } }],
        'current-context': 'not-this-one',
      }),
    );
    const connection = await connectCluster({ mode: 'merged-kubeconfig', files: [first, second] });
    assert.equal(connection?.via, 'client-node (user "u" has exec)');
    const res = await connection!.client.request('/version', { signal: AbortSignal.timeout(10_000), maxBytes: 1024 });
    assert.equal(res.status, 200);
    assert.equal(seen.at(-1), 'Bearer from-exec');
  });
});
