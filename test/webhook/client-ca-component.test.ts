// components/client-ca (opt-in, docs/security.md "Only the API server drives admission"): in the
// default and the sidecar layout it gives the webhook container `--client-ca` with a path inside
// the ConfigMap trainjob-webhook-client-ca's mount, and flags `serve` knows.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { SERVE_FLAGS } from '../../src/webhook/config.ts';
import { locateControlPlaneBinaries, projectRoot } from '../harness/binaries.ts';

type Obj = Record<string, any>;

function render(kubectl: string, base: string): Obj[] {
  const dir = mkdtempSync(path.join(tmpdir(), 'tjw-client-ca-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  // kustomize takes only relative paths to other folders.
  writeFileSync(
    path.join(dir, 'kustomization.yaml'),
    [
      'apiVersion: kustomize.config.k8s.io/v1beta1',
      'kind: Kustomization',
      `resources: [${JSON.stringify(path.relative(dir, path.join(projectRoot, base)))}]`,
      `components: [${JSON.stringify(path.relative(dir, path.join(projectRoot, 'manifests/components/client-ca')))}]`,
    ].join('\n'),
  );
  const out = execFileSync(kubectl, ['kustomize', dir], { encoding: 'utf8' });
  return parseAllDocuments(out).map((d) => d.toJS() as Obj);
}

describe('components/client-ca', () => {
  for (const base of ['manifests', 'manifests/overlays/sidecar']) {
    it(`${base}: the webhook container gets --client-ca from the ConfigMap's mount`, (t) => {
      const bins = locateControlPlaneBinaries();
      if (!bins.found) return t.skip(`no kubectl (${bins.missing.join(', ')}): hack/build-binaries.sh`);
      const deployment = render(bins.paths.kubectl, base).find(
        (o) => o.kind === 'Deployment' && o.metadata.name === 'trainjob-webhook',
      );
      assert.ok(deployment, 'the webhook Deployment');
      const pod = deployment.spec.template.spec;
      const webhook = pod.containers.find((c: Obj) => c.name === 'webhook');
      const args = webhook.args as string[];
      const file = args[args.indexOf('--client-ca') + 1];
      assert.ok(args.includes('--client-ca') && file, JSON.stringify(args));
      const mount = (webhook.volumeMounts as Obj[]).find((m) => file.startsWith(`${m.mountPath}/`));
      assert.ok(mount, `${file} is inside a mount`);
      const volume = (pod.volumes as Obj[]).find((v) => v.name === mount.name);
      assert.deepEqual(volume?.configMap, { name: 'trainjob-webhook-client-ca' });
      assert.equal(path.basename(file), 'ca.crt', 'the key docs/security.md creates the ConfigMap with');
      for (const flag of args.filter((a) => a.startsWith('--')))
        assert.ok(flag.slice(2) in SERVE_FLAGS, `serve knows ${flag}`);
    });
  }
});
