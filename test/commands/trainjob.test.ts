// `kubectl trainjob status`'s connection as the command makes it (src/commands/trainjob.ts),
// against a loopback HTTPS API server: the kubeconfig read as kubectl reads it.
//
// - --kubeconfig FILE with an exec user whose command is relative: run from the file's directory,
//   as client-go resolves it (tools/clientcmd/loader.go ResolveLocalPaths,
//   GetAuthInfoFileReferences), never from the current directory (client-node's loadFromFile would).
// - The files are read once, for the namespace and the connection both: KUBECONFIG=<(cat FILE)
//   works (bin/kubectl-trainjob run from bash: a second read of the pipe finds it empty).
// - YAML 1.1 as client-go decodes it: a context's namespace and a user's impersonation given
//   through `<<: *anchor` merge keys are used.
// - An exec user's connection is not failed by an unrelated broken cluster in another file
//   (client-go checks only the context in use; client-node, given everything, refused it).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { IncomingHttpHeaders } from 'node:http';
import { createServer, type Server } from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, afterEach, before, describe, it } from 'node:test';
import { statusCommand } from '../../src/commands/trainjob.ts';
import { createCA, issueServingCert } from '../harness/pki.ts';
import { listen } from '../cluster/support/loopback.ts';

const PLUGIN_BIN = path.resolve(import.meta.dirname, '../../bin/kubectl-trainjob');
const EXEC_CREDENTIAL = `#!/bin/sh\necho '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"from-exec"}}'\n`;

describe('kubectl trainjob: the kubeconfig as kubectl reads it', () => {
  let dir = '';
  let api: Server;
  let apiUrl = '';
  let caData = '';
  const seen: { url: string; headers: IncomingHttpHeaders }[] = [];
  const kubeconfigBefore = process.env.KUBECONFIG;

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'tjw-trainjob-command-'));
    const ca = await createCA();
    const serving = await issueServingCert(ca, 'apiserver');
    caData = Buffer.from(ca.certPem).toString('base64');
    api = createServer({ cert: serving.certPem, key: serving.keyPem }, (req, res) => {
      seen.push({ url: req.url ?? '', headers: req.headers });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"apiVersion":"v1","items":[]}');
    });
    apiUrl = `https://127.0.0.1:${await listen(api)}`;
  });
  afterEach(() => {
    if (kubeconfigBefore === undefined) delete process.env.KUBECONFIG;
    else process.env.KUBECONFIG = kubeconfigBefore;
  });
  after(async () => {
    api.closeAllConnections();
    api.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** `status` with these arguments: its exit code, stderr, and the last request the server saw. */
  async function status(args: string[]) {
    const err: string[] = [];
    const code = await statusCommand(args, { out: () => {}, err: (t) => err.push(t) });
    return { code, err: err.join('\n'), last: seen.at(-1) };
  }

  /** A directory `name` with bin/token.sh, the exec plugin, in it. */
  async function withExecPlugin(name: string): Promise<string> {
    const home = path.join(dir, name);
    await mkdir(path.join(home, 'bin'), { recursive: true });
    await writeFile(path.join(home, 'bin', 'token.sh'), EXEC_CREDENTIAL);
    await chmod(path.join(home, 'bin', 'token.sh'), 0o755);
    return home;
  }

  const execUser = {
    apiVersion: 'client.authentication.k8s.io/v1',
    command: './bin/token.sh',
    interactiveMode: 'Never',
  };

  it("--kubeconfig: a relative exec command runs from the kubeconfig's directory, not the current one", async () => {
    const home = await withExecPlugin('explicit');
    const file = path.join(home, 'config');
    await writeFile(
      file,
      JSON.stringify({
        clusters: [{ name: 'k', cluster: { server: apiUrl, 'certificate-authority-data': caData } }],
        users: [{ name: 'u', user: { exec: execUser } }],
        contexts: [{ name: 'c', context: { cluster: 'k', user: 'u', namespace: 'explicit-ns' } }],
        'current-context': 'c',
      }),
    );
    const { code, err, last } = await status(['--kubeconfig', file]);
    assert.equal(code, 0, err);
    assert.match(last!.url, /\/namespaces\/explicit-ns\/trainjobs/);
    assert.equal(last!.headers.authorization, 'Bearer from-exec');
  });

  it('KUBECONFIG=<(cat FILE): the pipe is read once, for the namespace and the connection', async () => {
    const source = path.join(dir, 'piped-source');
    await writeFile(
      source,
      JSON.stringify({
        clusters: [{ name: 'k', cluster: { server: apiUrl, 'certificate-authority-data': caData } }],
        users: [{ name: 'u', user: { token: 'piped-token' } }],
        contexts: [{ name: 'c', context: { cluster: 'k', user: 'u', namespace: 'from-pipe' } }],
        'current-context': 'c',
      }),
    );
    // The plugin as a user runs it from bash: a second read of /dev/fd/N finds the pipe empty.
    const child = spawn(
      'bash',
      ['-c', 'KUBECONFIG=<(cat "$1") exec "$2" "$3" status', 'bash', source, process.execPath, PLUGIN_BIN],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stderr = '';
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    const [code] = (await once(child, 'exit')) as [number];
    assert.equal(code, 0, stderr);
    assert.match(stderr, /No resources found in from-pipe namespace/);
    assert.equal(seen.at(-1)!.headers.authorization, 'Bearer piped-token');
  });

  it('YAML merge keys: the namespace and the impersonation given through `<<: *anchor` are used', async () => {
    const file = path.join(dir, 'anchors');
    await writeFile(
      file,
      [
        'clusters:',
        `- {name: k, cluster: {server: "${apiUrl}", certificate-authority-data: ${caData}}}`,
        'users:',
        '- name: base',
        '  user: &impersonation {token: anchored-token, as: someone-else}',
        '- name: u',
        '  user:',
        '    <<: *impersonation',
        'contexts:',
        '- name: base',
        '  context: &defaults {cluster: k, namespace: anchored}',
        '- name: c',
        '  context:',
        '    <<: *defaults',
        '    user: u',
        'current-context: c',
      ].join('\n'),
    );
    process.env.KUBECONFIG = file;
    const { code, err, last } = await status([]);
    assert.equal(code, 0, err);
    assert.match(last!.url, /\/namespaces\/anchored\/trainjobs/);
    assert.equal(last!.headers['impersonate-user'], 'someone-else');
  });

  it('an exec user is not failed by an unrelated broken cluster in another KUBECONFIG file', async () => {
    const home = await withExecPlugin('merged');
    const [good, other] = [path.join(home, 'config'), path.join(dir, 'other-config')];
    await writeFile(
      good,
      JSON.stringify({
        clusters: [{ name: 'k', cluster: { server: apiUrl, 'certificate-authority-data': caData } }],
        users: [{ name: 'u', user: { exec: execUser } }],
        contexts: [{ name: 'c', context: { cluster: 'k', user: 'u', namespace: 'merged-ns' } }],
        'current-context': 'c',
      }),
    );
    // No server: kubectl would refuse only a context that uses it.
    await writeFile(
      other,
      JSON.stringify({ clusters: [{ name: 'unrelated', cluster: { 'insecure-skip-tls-verify': true } }] }),
    );
    process.env.KUBECONFIG = [good, other].join(path.delimiter);
    const { code, err, last } = await status([]);
    assert.equal(code, 0, err);
    assert.match(last!.url, /\/namespaces\/merged-ns\/trainjobs/);
    assert.equal(last!.headers.authorization, 'Bearer from-exec');
  });
});
