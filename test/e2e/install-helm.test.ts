// The Helm chart against the real API server, with Helm 3 and Helm 4 (one control plane, no
// controllers: what is checked is what the API server stores). `helm template | kubectl apply
// --dry-run=server -f -` for every layout, with cert-manager's CRDs installed as in
// install-manifests.test.ts: of the 34 combinations of the values, as few as render between them
// every distinct object any of them renders (the test names them); then a release installed,
// upgraded across layouts and uninstalled by each Helm. Helm 4 installs and upgrades with
// server-side apply under the field manager "helm" (helm.sh/helm/v4@v4.3.2 pkg/cmd/install.go:193:
// `--server-side` defaults to true; pkg/cmd/upgrade.go:288: "auto" keeps the release's method)
// and applies every object again on each upgrade (pkg/kube/client.go:888); Helm 3 creates, then
// patches what changed with a three-way merge (helm.sh/helm/v3@v3.22.0 pkg/kube/client.go:711).
// Both delete what a new revision no longer has (v4 pkg/kube/client.go:657). What the in-process
// rotation writes into objects of the chart (the Secret's data, the webhooks' caBundle: fields no
// template names) must survive every upgrade, and an uninstall must leave nothing. That the chart
// renders what kustomize renders is test/chart/chart-matches-kustomize.test.ts's.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ApiException, KubernetesObjectApi, type KubernetesObject } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { combinationName, combinations, helmSetFlags, type Combination } from '../../hack/chart/combinations.ts';
import { CLUSTER_SCOPED } from '../../hack/chart/templates.ts';
import type { Obj } from './support/install.ts';
import {
  controlPlaneAvailability,
  projectRoot,
  readVersions,
  startControlPlane,
  type ControlPlane,
} from '../harness/index.ts';
import { ensureHelmBinaries } from '../harness/helm.ts';
import { chartDir, helmAt, type Helm } from '../chart/support/helm.ts';

const availability = controlPlaneAvailability();
const NS = 'kubeflow-system';
const KUBE_VERSION = readVersions().k8s;

/** An object's header: enough to read it. */
const header = (apiVersion: string, kind: string, name: string): KubernetesObject => ({
  apiVersion,
  kind,
  metadata: CLUSTER_SCOPED.has(kind) ? { name } : { name, namespace: NS },
});
const SECRET = header('v1', 'Secret', 'trainjob-webhook-cert');
const VALIDATING = header(
  'admissionregistration.k8s.io/v1',
  'ValidatingWebhookConfiguration',
  'trainjob-webhook-validating',
);
const MUTATING = header('admissionregistration.k8s.io/v1', 'MutatingWebhookConfiguration', 'trainjob-webhook-mutating');
const WEBHOOK = header('apps/v1', 'Deployment', 'trainjob-webhook');
const RESTORER_BINDING = header(
  'rbac.authorization.k8s.io/v1',
  'ClusterRoleBinding',
  'trainjob-webhook-crd-patch-restorer',
);
const id = (o: KubernetesObject) => `${o.kind}/${o.metadata?.name}`;

/** Combinations that together render every distinct object (greedy: the one adding most first). */
function covering(rendered: Map<Combination, Obj[]>): Combination[] {
  const distinct = (docs: Obj[]) => docs.map((d) => JSON.stringify(d));
  const left = new Set([...rendered.values()].flatMap(distinct));
  const chosen: Combination[] = [];
  while (left.size > 0) {
    const [best] = [...rendered].sort(
      ([, a], [, b]) => distinct(b).filter((t) => left.has(t)).length - distinct(a).filter((t) => left.has(t)).length,
    )[0];
    chosen.push(best);
    for (const t of distinct(rendered.get(best)!)) left.delete(t);
  }
  return chosen;
}

describe(
  'install with Helm: the chart against the real API server, with Helm 3 and Helm 4',
  { skip: availability.available ? false : availability.reason },
  () => {
    let cp: ControlPlane;
    let api: KubernetesObjectApi;
    let helms: Helm[];

    before(async () => {
      cp = await startControlPlane({
        controllerManager: false,
        world: false,
        crds: ['cert-manager.io_issuers.yaml', 'cert-manager.io_certificates.yaml'].map((f) =>
          path.join(projectRoot, 'upstream/crds/cert-manager-v1.21.2', f),
        ),
      });
      api = KubernetesObjectApi.makeApiClient(cp.kubeConfig);
      await cp.kubectl(['create', 'namespace', NS]);
      const { helm3, helm4 } = await ensureHelmBinaries();
      helms = [
        await helmAt(helm3, KUBE_VERSION, cp.kubeconfigPath),
        await helmAt(helm4, KUBE_VERSION, cp.kubeconfigPath),
      ];
    });
    after(async () => {
      await cp?.stop();
    });

    it('helm template | kubectl apply --dry-run=server -f -: the API server takes every object any layout × certificate mode renders', async () => {
      for (const helm of helms) {
        const flags = (c: Combination) => ['--namespace', NS, '--kube-version', KUBE_VERSION, ...helmSetFlags(c)];
        const rendered = new Map<Combination, Obj[]>();
        for (const c of combinations()) rendered.set(c, await helm.template(flags(c)));
        const chosen = covering(rendered);
        assert.deepEqual(
          [...new Set(chosen.map((c) => c.layout))].sort(),
          ['separate-reconciler', 'sidecar', 'vap'],
          `${helm.name}: every layout (${chosen.map(combinationName).join(', ')})`,
        );
        assert.ok(
          chosen.some((c) => c.crdPatchRestorer),
          `${helm.name}: the CRD patch restorer's rights among them`,
        );
        assert.ok(
          chosen.some((c) => c.networkPolicy),
          `${helm.name}: the network policies among them`,
        );
        for (const c of chosen) {
          const text = (await helm.run(['template', 'trainjob-webhook', chartDir, ...flags(c)])).stdout;
          const out = await cp.kubectl(['apply', '--dry-run=server', '-f', '-'], { input: text });
          const lines = out.stdout.trim().split('\n');
          const what = `${helm.name} ${combinationName(c)}`;
          assert.equal(
            lines.length,
            parseAllDocuments(text).filter((d) => d.contents).length,
            `${what}: ${out.stdout}`,
          );
          for (const l of lines) assert.match(l, /\(server dry run\)$/, what);
        }
      }
    });

    it('install with the sidecar (the layout that was the default), upgrade to the default (the reconciler as its own Deployment) with the mutating webhook, the CRD patch restorer and the network policies, to another image, to VAP mode, uninstall: what the rotation wrote survives, nothing is left', async () => {
      for (const helm of helms) await releaseLifecycle(cp, api, helm);
    });

    it("a kustomize install of the sidecar layout taken over by a release (--take-ownership), upgraded to the default layout and uninstalled; Helm 4 server-side conflicts with kubectl's apply, so it takes over client-side", async () => {
      for (const helm of helms) {
        const sidecarOverlay = path.join(projectRoot, 'manifests/overlays/sidecar');
        await cp.kubectl(['apply', '--server-side', '-k', sidecarOverlay]);
        const release = ['trainjob-webhook', chartDir, '--namespace', NS, '--set', 'layout=sidecar'];
        const refused = await helm.run(['install', ...release], { check: false });
        assert.match(refused.stderr, /exists and cannot be imported into the current release/, helm.name);
        const v4 = helm.name.startsWith('helm-v4');
        if (v4) {
          // kubectl's apply owns atomic structs whose stored value has defaults filled in (an env
          // var's fieldRef gets apiVersion: v1), so the same manifest applied by another field
          // manager conflicts there (and a field a later upgrade drops would stay while kubectl owns it).
          const ssa = await helm.run(['install', ...release, '--take-ownership'], { check: false });
          assert.match(ssa.stderr, /conflict with "kubectl"/, `${helm.name}: ${ssa.stderr}`);
          await helm.run(['uninstall', 'trainjob-webhook', '--namespace', NS], { check: false });
        }
        await helm.run(['install', ...release, '--take-ownership', ...(v4 ? ['--server-side=false'] : [])]);
        // The layout named: an upgrade given no values at all reuses the last release's (Helm's rule).
        await helm.run([
          'upgrade',
          'trainjob-webhook',
          chartDir,
          '--namespace',
          NS,
          '--set',
          'layout=separate-reconciler',
        ]);
        const webhook = (await read(api, WEBHOOK))!;
        assert.deepEqual(
          webhook.spec.template.spec.containers.map((c: Obj) => c.name),
          ['webhook'],
          `${helm.name}: the sidecar kubectl applied is gone`,
        );
        assert.equal(webhook.metadata.annotations['meta.helm.sh/release-name'], 'trainjob-webhook');
        await helm.run(['uninstall', 'trainjob-webhook', '--namespace', NS, '--wait']);
        const headers: KubernetesObject[] = [];
        for (const dir of [sidecarOverlay, path.join(projectRoot, 'manifests')])
          headers.push(
            ...parseAllDocuments((await cp.kubectl(['kustomize', dir])).stdout)
              .map((d) => d.toJSON() as Obj)
              .map((d) => header(d.apiVersion, d.kind, d.metadata.name)),
          );
        assert.deepEqual(await present(api, headers), [], `${helm.name}: nothing of the kustomize install is left`);
      }
    });
  },
);

async function read(api: KubernetesObjectApi, o: KubernetesObject): Promise<Obj | undefined> {
  try {
    return (await api.read(o as never)) as Obj;
  } catch (err) {
    if (err instanceof ApiException && err.code === 404) return undefined;
    throw err;
  }
}

/** Which of the objects are there. */
async function present(api: KubernetesObjectApi, objects: KubernetesObject[]): Promise<string[]> {
  const found = await Promise.all(objects.map(async (o) => ((await read(api, o)) ? id(o) : undefined)));
  return found.filter((f): f is string => f !== undefined).sort();
}

async function releaseLifecycle(cp: ControlPlane, api: KubernetesObjectApi, helm: Helm): Promise<void> {
  const get = async (o: KubernetesObject): Promise<Obj> => {
    const found = await read(api, o);
    assert.ok(found, `${helm.name}: ${id(o)} is there`);
    return found;
  };
  const release = ['trainjob-webhook', chartDir, '--namespace', NS];
  const installed = new Map<string, KubernetesObject>();
  /** Runs helm install or upgrade; then every object the values render is there. */
  const helmDoes = async (verb: 'install' | 'upgrade', sets: string[]): Promise<Obj[]> => {
    await helm.run([verb, ...release, ...sets]);
    const docs = await helm.template(['--namespace', NS, ...sets]);
    const headers = docs.map((d) => header(d.apiVersion, d.kind, d.metadata.name));
    for (const h of headers) installed.set(id(h), h);
    assert.deepEqual(await present(api, headers), headers.map(id).sort(), `${helm.name} ${verb} ${sets.join(' ')}`);
    return docs;
  };

  // The sidecar: an install made while it was the default.
  await helmDoes('install', ['--set', 'layout=sidecar']);
  const managers = ((await get(WEBHOOK)).metadata.managedFields as Obj[]).filter((f) => f.manager === 'helm');
  assert.deepEqual(
    managers.map((f) => f.operation),
    [helm.name.startsWith('helm-v4') ? 'Apply' : 'Update'],
    `${helm.name}: its field manager and how it wrote`,
  );
  const rotated = Buffer.from(cp.caPem).toString('base64');
  await writeAsTheRotation(api, [SECRET, VALIDATING], rotated);

  const separate = [
    '--set',
    'layout=separate-reconciler',
    '--set',
    'mutatingWebhook=true',
    '--set',
    'crdPatchRestorer.enabled=true',
    '--set',
    'networkPolicy.enabled=true',
  ];
  await helmDoes('upgrade', separate);
  const pod = (await get(WEBHOOK)).spec.template.spec;
  assert.deepEqual(
    pod.containers.map((c: Obj) => c.name),
    ['webhook'],
    `${helm.name}: the sidecar is gone`,
  );
  assert.ok(!pod.containers[0].args.includes('--handoff'), `${helm.name}: no --handoff`);
  const binding = await get(
    header('rbac.authorization.k8s.io/v1', 'ClusterRoleBinding', 'trainjob-webhook-reconciler'),
  );
  assert.equal(binding.subjects[0].name, 'trainjob-webhook-reconciler');
  const reconciler = await get(header('apps/v1', 'Deployment', 'trainjob-webhook-reconciler'));
  assert.ok(reconciler.spec.template.spec.containers[0].args.includes('--restore-crd-patch'), helm.name);
  assert.equal((await get(RESTORER_BINDING)).subjects[0].name, 'trainjob-webhook-reconciler', helm.name);
  await assertRotationKept(api, [SECRET, VALIDATING], rotated, `${helm.name} upgrade to separate-reconciler`);
  await writeAsTheRotation(api, [MUTATING], rotated);
  await helmDoes('upgrade', [...separate, '--set', 'image.tag=0.1.1']);
  assert.equal((await get(WEBHOOK)).spec.template.spec.containers[0].image, 'trainjob-webhook:0.1.1');
  await assertRotationKept(api, [SECRET, VALIDATING, MUTATING], rotated, `${helm.name} upgrade of the image`);

  const vap = await helmDoes('upgrade', ['--set', 'layout=vap']);
  assert.ok(vap.some((d) => d.kind === 'ValidatingAdmissionPolicy'));
  const webhookOnly = [WEBHOOK, header('v1', 'Service', 'trainjob-webhook'), SECRET, VALIDATING, MUTATING];
  assert.deepEqual(
    await present(api, webhookOnly),
    [],
    `${helm.name} upgrade to vap: the webhook's objects are removed`,
  );
  assert.deepEqual(await present(api, [RESTORER_BINDING]), [], `${helm.name} upgrade to vap: no restorer`);
  assert.deepEqual(
    await present(api, [header('networking.k8s.io/v1', 'NetworkPolicy', 'trainjob-webhook')]),
    [],
    `${helm.name} upgrade to vap without networkPolicy.enabled: no network policy`,
  );

  await helm.run(['uninstall', 'trainjob-webhook', '--namespace', NS, '--wait']);
  assert.deepEqual(await present(api, [...installed.values()]), [], `${helm.name} uninstall: nothing is left`);
}

/**
 * A CA in the Secret and as every webhook's caBundle, written as `serve --cert-rotation` writes
 * them: a PUT of the whole object.
 */
async function writeAsTheRotation(api: KubernetesObjectApi, objects: KubernetesObject[], pem: string): Promise<void> {
  for (const h of objects) {
    const o = (await read(api, h))!;
    if (o.kind === 'Secret') o.data = { 'ca.crt': pem, 'tls.crt': pem, 'tls.key': pem };
    else for (const w of o.webhooks) w.clientConfig.caBundle = pem;
    await api.replace(o as KubernetesObject);
  }
}

async function assertRotationKept(
  api: KubernetesObjectApi,
  objects: KubernetesObject[],
  pem: string,
  what: string,
): Promise<void> {
  for (const h of objects) {
    const o = (await read(api, h))!;
    if (o.kind === 'Secret') assert.equal(o.data?.['ca.crt'], pem, `${what}: ${id(h)} keeps its data`);
    else for (const w of o.webhooks) assert.equal(w.clientConfig.caBundle, pem, `${what}: ${id(h)} keeps its caBundle`);
  }
}
