// @kubernetes/client-node costs ~0.6 s of start-up and ~80 MiB of RSS at import: `serve` without
// cluster access and `review` must not load it (bench/PROFILE.md, start-up), nor `serve` or
// `reconcile` with a kubeconfig whose user it implements; an exec user loads it. `yaml` and
// `@peculiar/x509` (~20 MiB and ~0.15 s together) load only for YAML input and to generate a
// certificate.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureSelfSignedCert } from '../../src/certs/selfsigned.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const hook = path.join(root, 'test/cli/support/report-client-node.mjs');
const bin = path.join(root, 'bin/trainjob-webhook.js');

/** Runs the CLI until it prints `until` on stdout (or exits); returns what it wrote to stderr, then to stdout. */
function run(args: string[], cwd: string, until?: RegExp, env: Record<string, string> = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', hook, bin, ...args], {
      cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, KUBERNETES_SERVICE_HOST: '', KUBERNETES_SERVICE_PORT: '', ...env },
    });
    let err = '';
    let out = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (until?.test(out) || /CLIENT-NODE-LOADED/.test(err)) child.kill('SIGTERM');
    });
    child.stderr.on('data', () => {
      if (/CLIENT-NODE-LOADED/.test(err)) child.kill('SIGTERM');
    });
    // Bounded, and killed after its test even when that fails: a serve that never printed `until`
    // would run on (and the test wait) until the 10-minute test timeout, and then outlive the file.
    after(() => child.kill('SIGKILL'));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`no ${until ?? 'exit'} within 2 minutes:\n${err}${out}`));
    }, 120_000);
    child.once('error', reject);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve(err + out);
    });
  });
}

describe('costly packages load only when needed', () => {
  it('serve offline, on its embedded CRD: x509 on its first start to generate the certificate, nothing on a restart that reuses it; never yaml or the cluster client', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'tjw-lazy-'));
    try {
      const first = await run(['serve', '--port', '0', '--ops-port', '0'], dir, /"msg":"serving"/);
      assert.match(first, /X509-LOADED/);
      assert.doesNotMatch(first, /YAML-LOADED|CLIENT-NODE-LOADED/);
      const restart = await run(['serve', '--port', '0', '--ops-port', '0'], dir, /"msg":"serving"/);
      assert.doesNotMatch(restart, /X509-LOADED|YAML-LOADED|CLIENT-NODE-LOADED/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
  it('review: yaml for YAML files, not for JSON ones; never the cluster client', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'tjw-lazy-'));
    try {
      const objects = path.join(root, 'examples/objects');
      const yamlRun = await run(
        [
          'review',
          '--old',
          path.join(objects, 'suspended-1-node.yaml'),
          '--new',
          path.join(objects, 'suspended-2-nodes.yaml'),
        ],
        root,
      );
      assert.match(yamlRun, /YAML-LOADED/);
      assert.doesNotMatch(yamlRun, /CLIENT-NODE-LOADED|X509-LOADED/);
      const { readFile } = await import('node:fs/promises');
      const { parse } = await import('yaml');
      for (const f of ['suspended-1-node', 'suspended-2-nodes'])
        await writeFile(
          path.join(dir, `${f}.json`),
          JSON.stringify(parse(await readFile(path.join(objects, `${f}.yaml`), 'utf8'))),
        );
      const jsonRun = await run(
        ['review', '--old', path.join(dir, 'suspended-1-node.json'), '--new', path.join(dir, 'suspended-2-nodes.json')],
        root,
      );
      assert.doesNotMatch(jsonRun, /YAML-LOADED|X509-LOADED|CLIENT-NODE-LOADED/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
  it('serve with cluster access: a kubeconfig with a token user and the in-cluster service account load neither the cluster client (src/cluster/kube-access.ts) nor x509 (no --cert-rotation); an exec user loads client-node (it runs the plugin)', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'tjw-lazy-'));
    try {
      const kubeconfig = (user: string) =>
        `apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\nusers: [{name: u, user: ${user}}]\n`;
      // The serving certificate exists already (as on a restart): generating one loads x509.
      await ensureSelfSignedCert(path.join(dir, 'certs'));
      await writeFile(path.join(dir, 'token'), kubeconfig('{token: t}'));
      await writeFile(
        path.join(dir, 'exec'),
        kubeconfig('{exec: {apiVersion: client.authentication.k8s.io/v1, command: "false", interactiveMode: Never}}'),
      );
      const token = await run(
        ['serve', '--port', '0', '--ops-port', '0', '--kubeconfig', path.join(dir, 'token')],
        dir,
        /"msg":"serving"/,
      );
      assert.match(token, /"msg":"serving"/);
      assert.match(token, /YAML-LOADED/, 'the kubeconfig was read');
      assert.doesNotMatch(
        token,
        /CLIENT-NODE-LOADED|X509-LOADED/,
        'no cluster client; no x509 without --cert-rotation',
      );
      const exec = await run(
        ['serve', '--port', '0', '--ops-port', '0', '--kubeconfig', path.join(dir, 'exec')],
        dir,
        /"msg":"serving"/,
      );
      assert.match(exec, /CLIENT-NODE-LOADED/);
      // In a pod (no service account mounted here: the CRD read fails and the rule table runs).
      const inCluster = await run(['serve', '--port', '0', '--ops-port', '0'], dir, /"msg":"serving"/, {
        KUBERNETES_SERVICE_HOST: '127.0.0.1',
        KUBERNETES_SERVICE_PORT: '1',
      });
      assert.match(inCluster, /"msg":"serving"/);
      assert.match(inCluster, /could not read the TrainJob CRD/, 'it tried the API server');
      assert.doesNotMatch(inCluster, /CLIENT-NODE-LOADED|YAML-LOADED|X509-LOADED/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
  it("reconcile: a kubeconfig with a token user starts without client-node (the project's own client); an exec user loads it for the credentials", async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'tjw-lazy-'));
    try {
      const kubeconfig = (user: string) =>
        `apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\nusers: [{name: u, user: ${user}}]\n`;
      await writeFile(path.join(dir, 'token'), kubeconfig('{token: t}'));
      await writeFile(
        path.join(dir, 'exec'),
        kubeconfig('{exec: {apiVersion: client.authentication.k8s.io/v1, command: "false", interactiveMode: Never}}'),
      );
      const args = (file: string) => [
        'reconcile',
        '--kubeconfig',
        path.join(dir, file),
        '--handoff-port',
        '0',
        '--ops-port',
        '0',
        '--no-leader-election',
      ];
      const token = await run(args('token'), dir, /"msg":"reconciler started"/);
      assert.match(token, /"msg":"reconciler started"/);
      assert.doesNotMatch(token, /CLIENT-NODE-LOADED/);
      const exec = await run(args('exec'), dir, /"msg":"reconciler started"/);
      assert.match(exec, /CLIENT-NODE-LOADED/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
