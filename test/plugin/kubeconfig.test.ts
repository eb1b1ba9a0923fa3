// Which kubeconfig the plugin reads, as kubectl (client-go's clientcmd loader.go): --kubeconfig
// alone (it must exist), else every file KUBECONFIG lists (merged; those that do not exist
// skipped), else ~/.kube/config; and the namespace from the merged view, read once with it: the
// context of the first file that defines it, current-context from the first file that sets it.
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { UsageError } from '../../src/plugin/args.ts';
import { kubeconfigAccess, pluginKubeconfig } from '../../src/plugin/kubeconfig.ts';

describe('the kubeconfig and namespace the plugin reads', () => {
  let dir: string;
  let a: string;
  let b: string;
  let home: string;
  const missing = () => path.join(dir, 'missing');
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'tjw-kubeconfig-'));
    [a, b] = [path.join(dir, 'a'), path.join(dir, 'b')];
    home = path.join(dir, 'home');
    await mkdir(path.join(home, '.kube'), { recursive: true });
    await Promise.all([
      // a: no current-context; its context "work" is the one the merged view keeps.
      writeFile(a, 'contexts:\n- name: work\n  context: {cluster: k, user: u, namespace: from-a}\n'),
      writeFile(
        b,
        [
          'current-context: work',
          'contexts:',
          '- name: work',
          '  context: {cluster: k, user: u, namespace: from-b}',
          '- name: b-only',
          '  context: {cluster: k, user: u, namespace: only-in-b}',
        ].join('\n'),
      ),
      writeFile(
        path.join(home, '.kube', 'config'),
        'current-context: h\ncontexts: [{name: h, context: {namespace: home-ns}}]\n',
      ),
    ]);
  });
  after(() => rm(dir, { recursive: true, force: true }));
  const env = (KUBECONFIG?: string) => ({ ...(KUBECONFIG === undefined ? {} : { KUBECONFIG }), HOME: home });
  const list = (...files: string[]) => files.join(path.delimiter);

  describe('kubeconfigAccess', () => {
    it('--kubeconfig alone, whatever KUBECONFIG lists, with --context: one file, read as the merged ones', () => {
      assert.deepEqual(kubeconfigAccess({ kubeconfig: b, context: 'c' }, env(list(a))), {
        mode: 'merged-kubeconfig',
        files: [b],
        context: 'c',
      });
    });
    it('--kubeconfig naming a file that does not exist is an error (client-go: an explicit path must exist)', () => {
      assert.throws(
        () => kubeconfigAccess({ kubeconfig: missing() }, env(list(a, b))),
        (err: Error) =>
          err instanceof UsageError && err.message === `the --kubeconfig file ${missing()} does not exist`,
      );
    });
    it("KUBECONFIG's files, in order, to be merged (each name once; those missing are skipped when read)", () => {
      assert.deepEqual(kubeconfigAccess({}, env(list(missing(), a, '', b, a))), {
        mode: 'merged-kubeconfig',
        files: [missing(), a, b],
      });
    });
    it('no KUBECONFIG: ~/.kube/config', () => {
      assert.deepEqual(kubeconfigAccess({ context: 'h' }, env()), {
        mode: 'merged-kubeconfig',
        files: [path.join(home, '.kube', 'config')],
        context: 'h',
      });
    });
    it('a KUBECONFIG none of whose files exists is an error, not ~/.kube/config (kubectl does not read it then)', () => {
      assert.throws(
        () => kubeconfigAccess({}, env(missing())),
        (err: Error) =>
          err instanceof UsageError &&
          err.message.includes(`none of the files KUBECONFIG lists exists (${missing()})`) &&
          !err.message.includes('\n'),
      );
    });
    it('no KUBECONFIG and no ~/.kube/config: what to do', () => {
      assert.throws(() => kubeconfigAccess({}, { HOME: dir }), /no kubeconfig: pass --kubeconfig FILE/);
    });
  });

  describe('pluginKubeconfig: the namespace', () => {
    const ns = async (flags: { namespace?: string; context?: string; kubeconfig?: string }, KUBECONFIG?: string) =>
      (await pluginKubeconfig(flags, env(KUBECONFIG))).namespace;
    it('the current-context of the first file that sets one, that context taken from the first file that defines it', async () => {
      assert.equal(await ns({}, list(a, b)), 'from-a');
      assert.equal(await ns({}, list(b, a)), 'from-b');
    });
    it('--context names a context of any file; -n wins', async () => {
      assert.equal(await ns({ context: 'b-only' }, list(missing(), a, b)), 'only-in-b');
      assert.equal(await ns({ namespace: 'given', context: 'b-only' }, list(a, b)), 'given');
    });
    it('~/.kube/config without KUBECONFIG; "default" when the context sets none', async () => {
      assert.equal(await ns({}), 'home-ns');
      assert.equal(await ns({}, a), 'default');
    });
    it('a file kubectl would not load is the error, once (not a "default" namespace, then the connection\'s error)', async () => {
      const bad = path.join(dir, 'bad');
      await writeFile(bad, '- not a mapping\n');
      await assert.rejects(ns({}, list(bad, b)), {
        message: `kubeconfig file ${bad}: not a kubeconfig: a mapping is expected, not a list`,
      });
    });
    it('--kubeconfig: that file only', async () => {
      assert.equal(await ns({ kubeconfig: b }, a), 'from-b');
      assert.equal(await ns({ kubeconfig: a }, b), 'default');
    });
  });
});
