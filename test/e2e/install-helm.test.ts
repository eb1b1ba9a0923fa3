// The Helm chart against the real API server, with Helm 3 and Helm 4 (one control plane, no
// controllers: what is checked is what the API server stores). `helm template | kubectl apply
// --dry-run=server -f -` for every layout × certificate mode (cert-manager's CRDs installed, as in
// install-manifests.test.ts); then a release installed, upgraded across layouts and uninstalled
// by each Helm. Helm 4 installs and upgrades with server-side apply under the field manager
// "helm" (helm.sh/helm/v4@v4.3.2 pkg/cmd/install.go:193: `--server-side` defaults to true;
// pkg/cmd/upgrade.go:288: "auto" keeps the release's method) and applies every object again on
// each upgrade (pkg/kube/client.go:888); Helm 3 creates, then patches what changed with a
// three-way merge (helm.sh/helm/v3@v3.22.0 pkg/kube/client.go:711). Both delete what a new
// revision no longer has (v4 pkg/kube/client.go:657). What the in-process rotation writes into
// objects of the chart (the Secret's data, the webhooks' caBundle: fields no template names) must
// survive every upgrade, and an uninstall must leave nothing. That the chart renders what
// kustomize renders is test/chart/chart-matches-kustomize.test.ts's.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { combinationName, combinations, helmSetFlags } from '../../hack/chart/combinations.ts';
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
const SECRET = 'secret/trainjob-webhook-cert';
const VALIDATING = 'validatingwebhookconfiguration.admissionregistration.k8s.io/trainjob-webhook-validating';
const MUTATING = 'mutatingwebhookconfiguration.admissionregistration.k8s.io/trainjob-webhook-mutating';

/** An object as kubectl names it: kind.group/name (a Certificate is cert-manager's). */
function ref(o: Obj): string {
  const group = String(o.apiVersion).includes('/') ? `.${String(o.apiVersion).split('/')[0]}` : '';
  return `${String(o.kind).toLowerCase()}${group}/${o.metadata.name}`;
}

describe(
  'install with Helm: the chart against the real API server, with Helm 3 and Helm 4',
  { skip: availability.available ? false : availability.reason },
  () => {
    let cp: ControlPlane;
    let helms: Helm[];

    before(async () => {
      cp = await startControlPlane({
        controllerManager: false,
        world: false,
        crds: ['cert-manager.io_issuers.yaml', 'cert-manager.io_certificates.yaml'].map((f) =>
          path.join(projectRoot, 'upstream/crds/cert-manager-v1.21.2', f),
        ),
      });
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

    it('helm template | kubectl apply --dry-run=server -f -: the API server takes every object of every layout × certificate mode', async () => {
      for (const helm of helms)
        for (const c of combinations()) {
          const flags = ['--namespace', NS, '--kube-version', KUBE_VERSION, ...helmSetFlags(c)];
          const rendered = (await helm.run(['template', 'trainjob-webhook', chartDir, ...flags])).stdout;
          const out = await cp.kubectl(['apply', '--dry-run=server', '-f', '-'], { input: rendered });
          const lines = out.stdout.trim().split('\n');
          const what = `${helm.name} ${combinationName(c)}`;
          assert.equal(
            lines.length,
            parseAllDocuments(rendered).filter((d) => d.contents).length,
            `${what}: ${out.stdout}`,
          );
          for (const l of lines) assert.match(l, /\(server dry run\)$/, what);
        }
    });

    it('install, upgrade to the separate reconciler with the mutating webhook, to another image, to VAP mode, uninstall: what the rotation wrote survives, nothing is left', async () => {
      for (const helm of helms) await releaseLifecycle(cp, helm);
    });
  },
);

async function releaseLifecycle(cp: ControlPlane, helm: Helm): Promise<void> {
  const json = async (r: string): Promise<Obj> =>
    JSON.parse((await cp.kubectl(['get', r, '-n', NS, '-o', 'json', '--show-managed-fields'])).stdout) as Obj;
  /** Which of the objects are there (one request each, one kubectl). */
  const present = async (refs: string[]): Promise<string[]> =>
    (await cp.kubectl(['get', ...refs, '-n', NS, '--ignore-not-found', '-o', 'name'])).stdout
      .trim()
      .split('\n')
      .filter(Boolean);
  const release = ['trainjob-webhook', chartDir, '--namespace', NS];
  const installed = new Set<string>();
  /** Runs helm install or upgrade; then every object the values render is there. */
  const helmDoes = async (verb: 'install' | 'upgrade', sets: string[]): Promise<Obj[]> => {
    await helm.run([verb, ...release, ...sets]);
    const docs = await helm.template(['--namespace', NS, ...sets]);
    const refs = docs.map(ref);
    for (const r of refs) installed.add(r);
    assert.deepEqual((await present(refs)).sort(), [...refs].sort(), `${helm.name} ${verb} ${sets.join(' ')}`);
    return docs;
  };

  await helmDoes('install', []);
  const managers = ((await json('deployment/trainjob-webhook')).metadata.managedFields as Obj[]).filter(
    (f) => f.manager === 'helm',
  );
  const v4 = helm.name.startsWith('helm-v4');
  assert.deepEqual(
    managers.map((f) => f.operation),
    [v4 ? 'Apply' : 'Update'],
    `${helm.name}: its field manager and how it wrote`,
  );
  const rotated = Buffer.from(cp.caPem).toString('base64');
  await writeAsTheRotation(cp, [SECRET, VALIDATING], rotated);

  const separate = ['--set', 'layout=separate-reconciler', '--set', 'mutatingWebhook=true'];
  await helmDoes('upgrade', separate);
  const pod = (await json('deployment/trainjob-webhook')).spec.template.spec;
  assert.deepEqual(
    pod.containers.map((c: Obj) => c.name),
    ['webhook'],
    `${helm.name}: the sidecar is gone`,
  );
  assert.ok(!pod.containers[0].args.includes('--handoff'), `${helm.name}: no --handoff`);
  assert.equal(
    (await json('clusterrolebinding/trainjob-webhook-reconciler')).subjects[0].name,
    'trainjob-webhook-reconciler',
  );
  await assertRotationKept(cp, [SECRET, VALIDATING], rotated, `${helm.name} upgrade to separate-reconciler`);
  await writeAsTheRotation(cp, [MUTATING], rotated);
  await helmDoes('upgrade', [...separate, '--set', 'image.tag=0.1.1']);
  assert.equal(
    (await json('deployment/trainjob-webhook')).spec.template.spec.containers[0].image,
    'trainjob-webhook:0.1.1',
  );
  await assertRotationKept(cp, [SECRET, VALIDATING, MUTATING], rotated, `${helm.name} upgrade of the image`);

  const vap = await helmDoes('upgrade', ['--set', 'layout=vap']);
  assert.ok(vap.some((d) => d.kind === 'ValidatingAdmissionPolicy'));
  const webhookOnly = ['deployment.apps/trainjob-webhook', 'service/trainjob-webhook', SECRET, VALIDATING, MUTATING];
  assert.deepEqual(await present(webhookOnly), [], `${helm.name} upgrade to vap: the webhook's objects are removed`);

  await helm.run(['uninstall', 'trainjob-webhook', '--namespace', NS, '--wait']);
  assert.deepEqual(await present([...installed]), [], `${helm.name} uninstall: nothing is left`);
}

/**
 * A CA in the Secret and as every webhook's caBundle, written as `serve --cert-rotation` writes
 * them: a PUT of the whole object.
 */
async function writeAsTheRotation(cp: ControlPlane, refs: string[], pem: string): Promise<void> {
  for (const r of refs) {
    const o = JSON.parse((await cp.kubectl(['get', r, '-n', NS, '-o', 'json'])).stdout) as Obj;
    if (o.kind === 'Secret') o.data = { 'ca.crt': pem, 'tls.crt': pem, 'tls.key': pem };
    else for (const w of o.webhooks) w.clientConfig.caBundle = pem;
    await cp.kubectl(['replace', '-f', '-'], { input: JSON.stringify(o) });
  }
}

async function assertRotationKept(cp: ControlPlane, refs: string[], pem: string, what: string): Promise<void> {
  for (const r of refs) {
    const o = JSON.parse((await cp.kubectl(['get', r, '-n', NS, '-o', 'json'])).stdout) as Obj;
    if (o.kind === 'Secret') assert.equal(o.data?.['ca.crt'], pem, `${what}: ${r} keeps its data`);
    else for (const w of o.webhooks) assert.equal(w.clientConfig.caBundle, pem, `${what}: ${r} keeps its caBundle`);
  }
}
