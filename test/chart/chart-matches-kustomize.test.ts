// The Helm chart installs what the kustomize tree installs: its templates are generated from
// manifests/ (hack/generate-chart.ts), and `helm template` with Helm 3 and Helm 4 renders, for
// every layout × certificate mode (× the mutating webhook × the CRD patch restorer × the network
// policy), object for
// object what `kubectl kustomize` renders: the shipped overlay where manifests/ has one, otherwise
// the overlay docs/install.md has a user write (the restorer: its component last); in another
// namespace with another image, a user's overlay with `namespace:` and `images:`. Normalised:
// nothing on Helm's side; on kustomize's, the namespace it gives cluster-scoped objects in a user's
// overlay of VAP mode (the API server drops it). Also the values schema's refusals and `helm lint`.
// No API server: install-helm.test.ts applies the output.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { before, describe, it } from 'node:test';
import {
  combinationName,
  combinations,
  helmSetFlags,
  shippedOverlay,
  type Combination,
} from '../../hack/chart/combinations.ts';
import {
  certManagerReplacements,
  defaultCellEnv,
  kustomize,
  kustomizeCombination,
  manifestsDir,
  pinnedKubectl,
} from '../../hack/chart/kustomize.ts';
import { CLUSTER_SCOPED } from '../../hack/chart/templates.ts';
import type { Obj } from '../e2e/support/install.ts';
import { generatedFilesPresent, generatedTemplates, templatesDir } from '../../hack/generate-chart.ts';
import { controlPlaneAvailability, currentCell, ensureControlPlaneBinaries, readVersions } from '../harness/index.ts';
import { ensureHelmBinaries } from '../harness/helm.ts';
import { chartDir, helmAt, type Helm } from './support/helm.ts';

const availability = controlPlaneAvailability(defaultCellEnv());
const NS = 'kubeflow-system';
/** The Kubernetes the chart is rendered for (the default cell's, as kubectl's kustomize is). */
const KUBE_VERSION = readVersions(undefined, currentCell(defaultCellEnv())).k8s;

const byId = (docs: Obj[]) => new Map(docs.map((d) => [`${d.kind}/${d.metadata.name}`, d]));
const clusterScopedWithoutNamespace = (docs: Obj[]) =>
  docs.map((d) => {
    if (!CLUSTER_SCOPED.has(d.kind)) return d;
    const { namespace: _ns, ...metadata } = d.metadata;
    return { ...d, metadata };
  });

/** Where the committed text first differs from the generated one. */
function firstDifference(current: string | undefined, generated: string): string {
  if (current === undefined) return 'missing';
  const [a, b] = [current.split('\n'), generated.split('\n')];
  const i = a.findIndex((line, n) => line !== b[n]);
  const at = i === -1 ? a.length : i;
  return `line ${at + 1}: ${JSON.stringify(a[at] ?? '(end)')}, generated ${JSON.stringify(b[at] ?? '(end)')}`;
}

/** The restorer's flag and rights are in what kustomize rendered: the comparison is not of two installs without it. */
function assertRestorerRendered(kustomized: Obj[], c: Combination): void {
  const what = combinationName(c);
  const reconciler = c.layout === 'sidecar' ? 'trainjob-webhook' : 'trainjob-webhook-reconciler';
  const deployment = kustomized.find((d) => d.kind === 'Deployment' && d.metadata.name === reconciler);
  const container = deployment?.spec.template.spec.containers.find((x: Obj) => x.name === 'reconciler');
  assert.ok(container?.args.includes('--restore-crd-patch'), `${what}: the reconciler of ${reconciler} restores`);
  const binding = kustomized.find(
    (d) => d.kind === 'ClusterRoleBinding' && d.metadata.name === 'trainjob-webhook-crd-patch-restorer',
  );
  assert.equal(binding?.subjects[0].name, reconciler, `${what}: its rights, bound to the reconciler's account`);
}

/** The network policies are in what kustomize rendered: one for the webhook's pods, one for the reconciler's. */
function assertNetworkPolicyRendered(kustomized: Obj[], c: Combination): void {
  const policies = kustomized.filter((d) => d.kind === 'NetworkPolicy').map((d) => d.metadata.name);
  assert.deepEqual(
    policies.sort(),
    ['trainjob-webhook', 'trainjob-webhook-reconciler'],
    `${combinationName(c)}: its network policies`,
  );
}

function assertSameObjects(helm: Obj[], kustomized: Obj[], what: string): void {
  const h = byId(helm);
  // kustomize gives the cluster-scoped policy kinds (rbac/confine's, in every layout) a namespace
  // too; the chart leaves it out and the API server drops it.
  const k = byId(clusterScopedWithoutNamespace(kustomized));
  assert.deepEqual([...h.keys()].sort(), [...k.keys()].sort(), `${what}: the same objects`);
  for (const [id, o] of k) assert.deepEqual(h.get(id), o, `${what}: ${id}`);
}

describe(
  'the Helm chart renders what kustomize renders from manifests/',
  { skip: availability.available ? false : availability.reason },
  () => {
    let kubectl: string;
    let helms: Helm[];
    let replacements: unknown[];
    /** What kustomize renders for a combination in kubeflow-system with the manifests' image. */
    const shipped = (c: Combination) => {
      const overlay = shippedOverlay(c);
      return overlay
        ? kustomize(kubectl, path.join(manifestsDir, overlay))
        : kustomizeCombination(kubectl, c, { certManagerReplacements: replacements });
    };

    before(async () => {
      await ensureControlPlaneBinaries(defaultCellEnv());
      kubectl = pinnedKubectl();
      const { helm3, helm4 } = await ensureHelmBinaries();
      helms = [await helmAt(helm3, KUBE_VERSION), await helmAt(helm4, KUBE_VERSION)];
      replacements = await certManagerReplacements();
    });

    it('its templates are what `npm run generate` writes from manifests/ (none stale, none missing, none left over)', async () => {
      const files = await generatedTemplates(kubectl);
      assert.ok(files.size > 20, `${files.size} templates`);
      for (const [file, content] of files) {
        const current = await readFile(path.join(templatesDir, file), 'utf8').catch(() => undefined);
        assert.ok(
          current === content,
          `templates/${file} is stale: run npm run generate (${firstDifference(current, content)})`,
        );
      }
      assert.deepEqual(await generatedFilesPresent(), [...files.keys()].sort());
    });

    it('helm template (Helm 3 and 4) equals kubectl kustomize for every layout × certificate mode: the defaults are manifests/ itself', async () => {
      assert.equal(combinations().filter((c) => shippedOverlay(c)).length, 5, 'every shipped overlay is a combination');
      for (const c of combinations()) {
        const kustomized = await shipped(c);
        if (c.crdPatchRestorer) assertRestorerRendered(kustomized, c);
        if (c.networkPolicy) assertNetworkPolicyRendered(kustomized, c);
        for (const helm of helms)
          assertSameObjects(
            await helm.template(['--namespace', NS, ...helmSetFlags(c)]),
            kustomized,
            `${helm.name} ${combinationName(c)}`,
          );
      }
      // No flags at all: the default install.
      for (const helm of helms)
        assertSameObjects(await helm.template(['--namespace', NS]), await kustomize(kubectl, manifestsDir), helm.name);
    });

    it("in another namespace with another image: equals a user's overlay with namespace: and images:", async () => {
      const image = [
        '--set',
        'image.repository=registry.example.com:5000/ml/trainjob-webhook',
        '--set',
        'image.tag=0.2.0-rc.1',
      ];
      // The network policies do not vary with the other values: with them, one combination per layout.
      const plainWithPolicy = (c: Combination) =>
        c.certificates === 'rotation' && !c.mutatingWebhook && !c.crdPatchRestorer;
      for (const c of combinations().filter((x) => !x.networkPolicy || plainWithPolicy(x))) {
        const kustomized = clusterScopedWithoutNamespace(
          await kustomizeCombination(kubectl, c, {
            namespace: 'team-a',
            image: { newName: 'registry.example.com:5000/ml/trainjob-webhook', newTag: '0.2.0-rc.1' },
            certManagerReplacements: replacements,
          }),
        );
        assert.ok(
          kustomized.some((d) => d.metadata.namespace === 'team-a'),
          'the overlay moved the namespaced objects',
        );
        if (c.crdPatchRestorer) assertRestorerRendered(kustomized, c);
        for (const helm of helms)
          assertSameObjects(
            await helm.template(['--namespace', 'team-a', ...helmSetFlags(c), ...image]),
            kustomized,
            `${helm.name} ${combinationName(c)} in team-a`,
          );
      }
    });

    it('values.schema.json refuses a bad layout, wrong types, unknown keys and VAP mode with webhook settings or the restorer, naming each value', async () => {
      // One run per group: the schema reports every violation at once.
      const groups: [string[], RegExp[]][] = [
        [
          [
            'layout=sidecars',
            'certificates=certmanager',
            'mutatingWebhook=yes',
            'image.tag=2',
            'image.repository=Reg/x',
            'layot=vap',
            'crdPatchRestorer.enabled=on',
            'crdPatchRestorer.enable=true',
            'networkPolicy.enabled=on',
          ],
          [
            /at '\/layout': value must be one of 'sidecar', 'separate-reconciler', 'vap'/,
            /at '\/certificates': value must be one of 'rotation', 'cert-manager'/,
            /at '\/mutatingWebhook': got string, want boolean/,
            /at '\/image\/tag': got number, want string/,
            /at '\/image\/repository': 'Reg\/x' does not match pattern/,
            /at '': additional properties 'layot' not allowed/,
            /at '\/crdPatchRestorer\/enabled': got string, want boolean/,
            /at '\/crdPatchRestorer': additional properties 'enable' not allowed/,
            /at '\/networkPolicy\/enabled': got string, want boolean/,
          ],
        ],
        [
          ['layout=vap', 'certificates=cert-manager', 'mutatingWebhook=true', 'crdPatchRestorer.enabled=true'],
          [
            /at '\/certificates': value must be 'rotation'/,
            /at '\/mutatingWebhook': value must be false/,
            /at '\/crdPatchRestorer\/enabled': value must be false/,
          ],
        ],
      ];
      for (const helm of helms)
        for (const [sets, messages] of groups) {
          const args = [
            'template',
            'x',
            chartDir,
            '--kube-version',
            KUBE_VERSION,
            ...sets.flatMap((v) => ['--set', v]),
          ];
          const out = await helm.run(args, { check: false });
          const what = `${helm.name} ${sets.join(' ')}`;
          assert.notEqual(out.code, 0, `${what}: refused`);
          assert.match(out.stderr, /values don't meet the specifications of the schema/, what);
          for (const m of messages) assert.match(out.stderr, m, what);
        }
      // Each value alone is accepted: the refusals above are the bad values', not the flags'.
      const fine = [
        'layout=vap',
        'certificates=cert-manager',
        'mutatingWebhook=true',
        'crdPatchRestorer.enabled=true',
        'networkPolicy.enabled=true',
        'layout=sidecar',
        'image.repository=reg.example/x',
      ];
      for (const helm of helms) for (const v of fine) await helm.template(['--set', v]);
    });

    it('without the schema (--skip-schema-validation) the chart still refuses what it has no objects for, with a message', async () => {
      const refusals: [string[], RegExp][] = [
        [['layout=sidecars'], /layout "sidecars" is none of sidecar, separate-reconciler, vap/],
        [['certificates=none'], /certificates "none" is none of rotation, cert-manager/],
        [['layout=vap', 'mutatingWebhook=true'], /layout vap has no webhook/],
        [['layout=vap', 'crdPatchRestorer.enabled=true'], /layout vap has no CRD patch to restore/],
      ];
      for (const helm of helms)
        for (const [sets, message] of refusals) {
          const flags = [
            '--kube-version',
            KUBE_VERSION,
            '--skip-schema-validation',
            ...sets.flatMap((v) => ['--set', v]),
          ];
          const out = await helm.run(['template', 'x', chartDir, ...flags], { check: false });
          assert.notEqual(out.code, 0, `${helm.name} ${sets.join(' ')}: refused`);
          assert.match(out.stderr, message, `${helm.name} ${sets.join(' ')}`);
        }
    });

    it('helm lint --strict passes with both Helms (the defaults and VAP mode: the two sets of kinds)', async () => {
      for (const helm of helms)
        for (const sets of [[], ['--set', 'layout=vap']]) {
          const out = await helm.run(['lint', '--strict', chartDir, '--kube-version', KUBE_VERSION, ...sets], {
            check: false,
          });
          assert.equal(out.code, 0, `${helm.name} ${sets.join(' ')}: ${out.stdout}${out.stderr}`);
        }
    });
  },
);
