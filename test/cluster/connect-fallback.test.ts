// A kubeconfig user that only client-node implements (an exec plugin) still works: connect.ts
// loads client-node's KubeConfig for it and every request carries the plugin's token
// (kubeconfig-connection.ts), against a loopback HTTPS server with the kubeconfig's CA.
import assert from 'node:assert/strict';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { connectCluster } from '../../src/cluster/connect.ts';
import { createCA, issueServingCert } from '../harness/pki.ts';

describe('a kubeconfig user for client-node (exec plugin)', () => {
  let dir = '';
  let server: Server;
  let kubeconfig = '';
  const authorizations: string[] = [];

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'tjw-connect-'));
    const ca = await createCA();
    const serving = await issueServingCert(ca, 'apiserver');
    server = createServer({ cert: serving.certPem, key: serving.keyPem }, (req, res) => {
      authorizations.push(req.headers.authorization ?? '');
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const plugin = path.join(dir, 'plugin.sh');
    await writeFile(plugin, `#!/bin/sh\necho '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"from-exec"}}'\n`);
    await chmod(plugin, 0o755);
    kubeconfig = path.join(dir, 'kubeconfig');
    const server_ = `https://127.0.0.1:${(server.address() as { port: number }).port}`;
    await writeFile(
      kubeconfig,
      `clusters: [{name: k, cluster: {server: "${server_}", certificate-authority-data: ${Buffer.from(ca.certPem).toString('base64')}}}]\ncontexts: [{name: c, context: {cluster: k, user: u}}]\ncurrent-context: c\nusers: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: ${plugin}, interactiveMode: Never}}}]\n`,
    );
  });
  after(async () => {
    server.closeAllConnections();
    server.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("connects through client-node's KubeConfig and sends the plugin's token, the CA checked", async () => {
    const connection = await connectCluster({ mode: 'kubeconfig', path: kubeconfig });
    assert.equal(connection?.via, 'client-node (user "u" has exec)');
    const res = await connection!.client.request('/version', { signal: AbortSignal.timeout(10_000), maxBytes: 1024 });
    assert.equal(res.status, 200);
    assert.equal(authorizations.at(-1), 'Bearer from-exec');
  });
});
