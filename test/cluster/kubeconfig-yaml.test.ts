// Both kubeconfig readers parse YAML as client-go decodes it (src/cluster/kubeconfig-yaml.ts):
// YAML 1.1 through go.yaml.in/yaml/v2 (sigs.k8s.io/yaml YAMLToJSON), so `<<: *anchor` merge keys
// are applied and yes/no are booleans. The same file, read as one explicit file (kube-access.ts)
// and as kubectl's merged files (merged-kubeconfig.ts), gives the namespace and the impersonation
// kubectl would use.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadKubeconfigFile } from '../../src/cluster/kube-access.ts';
import { loadMergedKubeconfig } from '../../src/cluster/merged-kubeconfig.ts';
import { contextNamespace } from '../../src/plugin/kubeconfig.ts';
import { parseKubeconfigYaml } from '../../src/cluster/kubeconfig-yaml.ts';

const ANCHORS = `
clusters:
- name: base
  cluster: &cluster {server: "https://api.example:6443", insecure-skip-tls-verify: yes}
- name: k
  cluster: *cluster
users:
- name: base
  user: &defaults {token: t, as: someone-else}
- name: u
  user:
    <<: *defaults
contexts:
- name: base
  context: &context {cluster: k, namespace: anchored}
- name: c
  context:
    <<: *context
    user: u
current-context: c
`;

const EXPECTED = {
  kind: 'direct',
  access: {
    server: 'https://api.example:6443',
    insecureSkipTlsVerify: true,
    token: 't',
    impersonate: { user: 'someone-else', groups: [], extra: [] },
  },
};

describe('kubeconfig YAML as client-go decodes it (1.1: merge keys, yes/no)', () => {
  let dir = '';
  let file = '';
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'tjw-kubeconfig-yaml-'));
    file = path.join(dir, 'config');
    await writeFile(file, ANCHORS);
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('one explicit file (serve, reconcile, settle): the user merged from an anchor impersonates', async () => {
    assert.deepEqual(await loadKubeconfigFile(file), EXPECTED);
  });

  it("kubectl's files merged (the plugin): the same user, and the context's namespace from an anchor", async () => {
    const { loaded, merged } = await loadMergedKubeconfig([file]);
    assert.deepEqual(loaded, EXPECTED);
    assert.equal(contextNamespace(merged.doc, undefined), 'anchored');
  });
});

describe('parseKubeconfigYaml: scalars as go-yaml v2 decodes them (client-go), where the 1.1 schema differs', () => {
  // Each right-hand side is what sigs.k8s.io/yaml YAMLToJSON (go.yaml.in/yaml/v2) gives.
  const rows: [string, unknown][] = [
    ['2024-01-01', '2024-01-01'], // a timestamp keeps its text (1.1 schema: a Date)
    ['2001-12-14t21:59:43.10-05:00', '2001-12-14t21:59:43.10-05:00'],
    ['!!timestamp 2024-01-01', '2024-01-01'],
    ['12:34:56', '12:34:56'], // no base-60 numbers (1.1 schema: 45296)
    ['1:20', '1:20'],
    ['[--since, 2024-1-1, 12:34:56]', ['--since', '2024-1-1', '12:34:56']], // an exec plugin's args
    ['yes', true],
    ['off', false],
    ['0755', 493],
    ['1_000', 1000],
    ['~', null],
    ['{b: 1, b: 2}', { b: 2 }], // a key twice: the last, not an error
    ['.', '.'], // no digit, no float (1.1 schema: NaN, null in JSON)
    ['[--dir, ., -.]', ['--dir', '.', '-.']],
    ['.e5', '.e5'],
    ['.5', 0.5],
    ['1.', 1],
    ['1.5e3', 1500],
    ['.inf', Infinity],
  ];
  for (const [text, value] of rows)
    it(`a: ${text}`, async () => assert.deepEqual(await parseKubeconfigYaml(`a: ${text}`), { a: value }));

  it('reads the first document only, as go-yaml v2 does (a trailing --- is no error)', async () => {
    assert.deepEqual(await parseKubeconfigYaml('a: 1\n---\n'), { a: 1 });
    assert.deepEqual(await parseKubeconfigYaml('a: 1\n---\nb: 2\n'), { a: 1 });
    assert.equal(await parseKubeconfigYaml(''), null);
    await assert.rejects(parseKubeconfigYaml('a: [1\n---\nb: 2\n'));
  });

  it('prints no warning (a local tag on a token would quote it on stderr)', async () => {
    const written: string[] = [];
    const emit = process.emitWarning;
    process.emitWarning = ((w: string | Error) => void written.push(String(w))) as typeof process.emitWarning;
    try {
      assert.deepEqual(await parseKubeconfigYaml('token: !foo sk-SECRET'), { token: 'sk-SECRET' });
    } finally {
      process.emitWarning = emit;
    }
    assert.deepEqual(written, []);
  });
});
