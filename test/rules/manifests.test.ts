// Generated files are committed (the CRD patch and VAP under manifests/, the embedded default CRD
// under src/embedded/); they must match the table and the vendored CRD they are generated for.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { generatedFiles, projectRoot } from '../../hack/generate.ts';
import { SERVE_DEFAULTS } from '../../src/webhook/config.ts';
import { RECONCILE_DEFAULTS } from '../../src/reconciler/config.ts';

describe('generated files are up to date (regenerate with `npm run generate`)', async () => {
  const files = await generatedFiles();
  it("covers the patch, its restore, the VAP, the embedded CRD, the lines' fingerprints, and main's own patch and VAP", () => {
    // v2.2.1's patch, restore and VAP are v2.3.0's (no files of their own); main's finished-job
    // rule differs (Failed is terminal there), so it has its own.
    assert.deepEqual([...files.keys()].sort(), [
      'manifests/crd-patch/trainer-main-8c0f5059/trainjob-crd-patch.yaml',
      'manifests/crd-patch/trainer-main-8c0f5059/trainjob-crd-restore.yaml',
      'manifests/crd-patch/trainjob-crd-patch.yaml',
      'manifests/crd-patch/trainjob-crd-restore.yaml',
      'manifests/vap/trainer-main-8c0f5059/trainjob-vap.yaml',
      'manifests/vap/trainjob-crd-lift-restore.yaml',
      'manifests/vap/trainjob-crd-lift.yaml',
      'manifests/vap/trainjob-vap.yaml',
      'src/api/trainer-line-fingerprints.ts',
      'src/embedded/trainjob-crd.json',
    ]);
  });
  for (const [file, content] of files) {
    it(file, () => {
      assert.equal(
        readFileSync(path.join(projectRoot, file), 'utf8'),
        content,
        `${file} is stale: run npm run generate`,
      );
    });
  }
});

// The VAP mode's CRD patch lifts upstream's blanket rule and adds none of the table's rules (the
// policy carries them), but the same scale subresource, status field and columns: it is the
// generated patch's first two ops and its last ones, and its undo the restore's first and last.
describe("the VAP mode's lift stays the generated patch without its rules", () => {
  const ops = (file: string) =>
    parse(readFileSync(path.join(projectRoot, file), 'utf8')) as { op: string; path: string }[];
  const scaleParts = (list: { path: string }[]) =>
    list.filter((o) => /status\/properties\/trainjobWebhook|additionalPrinterColumns|subresources/.test(o.path));
  it('trainjob-crd-lift.yaml is the test and remove of the blanket rule in crd-patch, then its scale parts', () => {
    const patch = ops('manifests/crd-patch/trainjob-crd-patch.yaml');
    const parts = scaleParts(patch);
    assert.equal(parts.length, 6, 'the status field, the Age test, three columns, the scale subresource');
    assert.deepEqual(patch.slice(-parts.length), parts, 'the scale parts come last');
    assert.deepEqual(ops('manifests/vap/trainjob-crd-lift.yaml'), [...patch.slice(0, 2), ...parts]);
    assert.deepEqual(
      patch.slice(0, 2).map((o) => o.op),
      ['test', 'remove'],
    );
  });
  it('trainjob-crd-lift-restore.yaml is the undoing of the scale parts and the add of the blanket rule in crd-restore', () => {
    const restore = ops('manifests/crd-patch/trainjob-crd-restore.yaml');
    const parts = scaleParts(restore);
    assert.deepEqual(restore.slice(0, parts.length), parts, 'the scale parts are undone first');
    assert.deepEqual(ops('manifests/vap/trainjob-crd-lift-restore.yaml'), [...parts, ...restore.slice(-1)]);
    assert.match(JSON.stringify(restore.at(-1)), /self == oldSelf/);
  });
});

// The kubelet's grace period starts with the preStop hook, so a container's preStop sleep and its
// process's shutdown timeout must both fit in it; otherwise the kubelet's SIGKILL lands before
// (or as) the process gives up on its own drain.
describe("each pod's termination grace period covers its containers' preStop sleep and shutdown timeout", () => {
  const shutdownMs: Record<string, number> = {
    serve: SERVE_DEFAULTS.shutdownTimeoutMs,
    reconcile: RECONCILE_DEFAULTS.shutdownTimeoutMs,
  };
  type Container = { name: string; args: string[]; lifecycle?: { preStop?: { sleep?: { seconds: number } } } };
  type Doc = {
    kind?: string;
    metadata?: { name?: string };
    spec?: { template?: { spec?: { terminationGracePeriodSeconds?: number; containers: Container[] } } };
  };
  for (const file of ['manifests/deploy/deployment.yaml', 'manifests/components/separate-reconciler/reconciler.yaml']) {
    const docs = readFileSync(path.join(projectRoot, file), 'utf8')
      .split(/^---$/m)
      .map((d) => parse(d) as Doc)
      .filter((d) => d?.kind === 'Deployment');
    for (const d of docs) {
      it(`${file}: ${d.metadata?.name}`, () => {
        const pod = d.spec!.template!.spec!;
        const graceMs = (pod.terminationGracePeriodSeconds ?? 30) * 1000; // 30 s: the API server's default
        for (const c of pod.containers) {
          const preStopMs = (c.lifecycle?.preStop?.sleep?.seconds ?? 0) * 1000;
          const command = c.args[0]!;
          assert.ok(command in shutdownMs, `${c.name}: unknown command ${command}`);
          assert.ok(
            preStopMs + shutdownMs[command]! < graceMs,
            `${c.name}: preStop ${preStopMs} ms + shutdown timeout ${shutdownMs[command]} ms must end before the grace period's ${graceMs} ms`,
          );
        }
      });
    }
  }
});
