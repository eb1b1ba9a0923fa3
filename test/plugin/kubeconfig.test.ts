// Which kubeconfig the plugin reads: --kubeconfig, else KUBECONFIG's file, else ~/.kube/config;
// a KUBECONFIG of several existing files (which kubectl merges) is refused, saying what to do.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { UsageError } from '../../src/plugin/args.ts';
import { kubeconfigPath } from '../../src/plugin/kubeconfig.ts';

describe('kubeconfigPath', () => {
  let dir: string;
  let a: string;
  let b: string;
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'tjw-kubeconfig-'));
    [a, b] = [path.join(dir, 'a'), path.join(dir, 'b')];
    await Promise.all([writeFile(a, 'apiVersion: v1\n'), writeFile(b, 'apiVersion: v1\n')]);
  });
  after(() => rm(dir, { recursive: true, force: true }));
  const env = (KUBECONFIG: string) => ({ KUBECONFIG, HOME: dir });

  it('--kubeconfig first, whatever KUBECONFIG lists', () => {
    assert.equal(kubeconfigPath({ kubeconfig: 'x' }, env(`${a}${path.delimiter}${b}`)), 'x');
  });
  it("KUBECONFIG's one existing file; the files that do not exist are skipped", () => {
    assert.equal(kubeconfigPath({}, env([path.join(dir, 'missing'), a].join(path.delimiter))), a);
    assert.equal(kubeconfigPath({}, env([a, a].join(path.delimiter))), a);
  });
  it('several existing files are refused, with how to merge them, rather than read as the first', () => {
    assert.throws(
      () => kubeconfigPath({}, env([a, path.join(dir, 'missing'), b].join(path.delimiter))),
      (err: Error) =>
        err instanceof UsageError &&
        err.message.includes(`KUBECONFIG lists 2 files (${a}, ${b})`) &&
        err.message.includes('kubectl config view --flatten > ~/.kube/merged-config') &&
        !err.message.includes('\n'),
    );
  });
  it('no KUBECONFIG and no ~/.kube/config: what to do', () => {
    assert.throws(() => kubeconfigPath({}, env('')), /no kubeconfig: pass --kubeconfig FILE/);
  });
});
