// Issue 9: kustomize overlays rendered with `kubectl kustomize` and applied server-side to the
// real API server: the mutating one, cert-manager's (with cert-manager's CRDs, vendored in
// upstream/ from the root module of github.com/cert-manager/cert-manager on the Go module proxy:
// its controller does not build from it, so no CA is injected here; what is checked is that the
// API server takes every object and the injection annotations it would act on), and a user's
// overlay in another namespace. Also against the real API server: the matchConditions' CEL
// (writes to an object being deleted and UPDATEs that leave spec unchanged never reach the
// webhook, other writes do). The network policies (components/network-policy) accepted as
// rendered, their named ports those of the pods they select. The default overlay, the sidecar and vap, with their
// processes running under the installed accounts, their rights, replicas per node and budgets,
// are install-layouts.test.ts's.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CustomObjectsApi } from '@kubernetes/client-node';
import {
  controlPlaneAvailability,
  projectRoot,
  startControlPlane,
  upstreamCrds,
  waitFor,
  type ControlPlane,
} from '../harness/index.ts';
import { TRAINJOB, trainJobObject, trainJobs } from './support/trainjobs.ts';
import { byKind, manifestsDir, renderOverlay, toYaml, userOverlay, type Obj } from './support/install.ts';

// cert-manager's CRDs (v1.21.2, from its root Go module's deploy/crds/), vendored in upstream/.
function certManagerCrds(): string[] {
  return ['cert-manager.io_issuers.yaml', 'cert-manager.io_certificates.yaml'].map((f) =>
    path.join(projectRoot, 'upstream/crds/cert-manager-v1.21.2', f),
  );
}

const availability = controlPlaneAvailability();
const NS = 'kubeflow-system';

describe(
  'install: the kustomize overlays against the real API server',
  { skip: availability.available ? false : availability.reason },
  () => {
    let cp: ControlPlane;
    let cmCrds: string[];

    const kinds = (docs: Obj[]) => docs.map((d) => `${d.kind}/${d.metadata.name}`).sort();
    /** Server-side applies the rendered overlay and returns it; every object must then be there. */
    async function install(docs: Obj[]): Promise<Obj[]> {
      await cp.applyYaml(toYaml(docs));
      const found = (await cp.kubectl(['get', '-f', '-', '-o', 'name'], { input: toYaml(docs) })).stdout
        .trim()
        .split('\n');
      assert.equal(found.length, docs.length);
      return docs;
    }
    async function uninstall(docs: Obj[]): Promise<void> {
      await cp.kubectl(['delete', '-f', '-', '--ignore-not-found', '--wait=false'], { input: toYaml(docs) });
    }

    before(async () => {
      cmCrds = certManagerCrds();
      cp = await startControlPlane({
        crds: [
          upstreamCrds.jobsets,
          upstreamCrds.trainjobs,
          upstreamCrds.trainingRuntimes,
          upstreamCrds.clusterTrainingRuntimes,
          ...cmCrds,
        ],
      });
      await cp.kubectl(['create', 'namespace', NS]);
    });
    after(async () => {
      await cp?.stop();
    });

    it('matchConditions (CEL checked by the real API server): a webhook that cannot answer blocks CREATE and spec changes, never label, annotation or finalizer changes, nor writes to an object being deleted', async () => {
      const ns = 'match';
      await cp.kubectl(['create', 'namespace', ns]);
      const api = cp.kubeConfig.makeApiClient(CustomObjectsApi);
      const tj = trainJobs(cp.kubeConfig);
      const held = trainJobObject('held', ns);
      held.metadata.finalizers = ['example.com/hold'];
      assert.equal((await tj.create(held)).allowed, true);
      assert.equal((await tj.create(trainJobObject('plain', ns))).allowed, true);
      // The rendered configurations, at a URL where nothing listens: every call fails, closed.
      const rendered = await renderOverlay(cp, path.join(manifestsDir, 'overlays/mutating'));
      const configs = rendered
        .filter((d) => /WebhookConfiguration$/.test(d.kind))
        .map((c) => ({
          ...c,
          webhooks: c.webhooks.map((w: Obj) => ({
            ...w,
            timeoutSeconds: 2,
            clientConfig: { url: `https://127.0.0.1:9${w.clientConfig.service.path}` },
          })),
        }));
      assert.equal(configs.length, 2);
      await cp.applyYaml(toYaml(configs));
      // Registration takes effect asynchronously: wait until a CREATE is refused.
      const refusedCreate = await waitFor('webhooks in force', async () => {
        const out = await tj.create(trainJobObject('new', ns), 'All');
        return out.allowed ? undefined : out;
      });
      assert.match(refusedCreate.refusal.message, /failed calling webhook/);

      const spec = await tj.update(ns, 'plain', (o) => (o.spec.trainer.image = 'ghcr.io/acme/train:2'));
      assert.equal(spec.allowed, false, 'a spec change goes to the webhook');
      const labels = await tj.update(ns, 'plain', (o) => {
        o.metadata.labels = { 'kueue.x-k8s.io/queue-name': 'q' };
        o.metadata.annotations = { 'trainjob-webhook.kubeflow.org/note': 'x' };
      });
      assert.equal(labels.allowed, true, labels.allowed ? '' : labels.refusal.message);
      const finalizer = await tj.update(
        ns,
        'plain',
        (o) => (o.metadata.finalizers = ['kueue.x-k8s.io/resource-in-use']),
      );
      assert.equal(finalizer.allowed, true, finalizer.allowed ? '' : finalizer.refusal.message);

      await api.deleteNamespacedCustomObject({ ...TRAINJOB, namespace: ns, name: 'held' });
      const deleting = await tj.get(ns, 'held');
      assert.ok(deleting.metadata.deletionTimestamp, 'held by its finalizer');
      const released = await tj.update(ns, 'held', (o) => (o.metadata.finalizers = []));
      assert.equal(released.allowed, true, released.allowed ? '' : released.refusal.message);
      await waitFor(
        'the released object is gone',
        async () =>
          (await cp.kubectl(['get', 'trainjobs.trainer.kubeflow.org', 'held', '-n', ns], { check: false })).code !== 0,
      );
      await cp.kubectl([
        'delete',
        'validatingwebhookconfiguration/trainjob-webhook-validating',
        'mutatingwebhookconfiguration/trainjob-webhook-mutating',
      ]);
    });

    it("the mutating overlay adds the mutating configuration (for clusters without Trainer's defaulter) and nothing else", async () => {
      const plain = kinds(await renderOverlay(cp, manifestsDir));
      const docs = await install(await renderOverlay(cp, path.join(manifestsDir, 'overlays/mutating')));
      assert.deepEqual(kinds(docs), [...plain, 'MutatingWebhookConfiguration/trainjob-webhook-mutating'].sort());
      await uninstall(docs);
    });

    it("the cert-manager overlay: Issuer and Certificate for the Service's names, the Secret mounted read-only, CA injection annotations on both configurations, no rotation rights", async () => {
      const ns = 'ml-ops';
      await cp.kubectl(['create', 'namespace', ns]);
      // A user's overlay in another namespace, with the mutating webhook too (listed first).
      const overlay = await userOverlay(
        cp,
        'cert-manager-overlay',
        readOverlay('overlays/cert-manager')
          .replace(`namespace: ${NS}`, `namespace: ${ns}`)
          .replaceAll('../../', 'MANIFESTS/')
          .replace('components:\n', 'components:\n  - MANIFESTS/components/mutating\n'),
      );
      const docs = await install(await renderOverlay(cp, overlay));
      assert.deepEqual(byKind(docs, 'Secret'), [], 'cert-manager makes the Secret');
      assert.deepEqual(byKind(docs, 'Role', 'trainjob-webhook-cert'), [], 'no rights on Secrets');
      const cert = JSON.parse(
        (await cp.kubectl(['get', 'certificates.cert-manager.io', 'trainjob-webhook-cert', '-n', ns, '-o', 'json']))
          .stdout,
      ) as Obj;
      assert.deepEqual(cert.spec.dnsNames, [`trainjob-webhook.${ns}.svc`, `trainjob-webhook.${ns}.svc.cluster.local`]);
      assert.equal(cert.spec.secretName, 'trainjob-webhook-cert');
      // Signed by a CA of its own, not self-signed: a self-signed certificate is its own ca.crt, so
      // each renewal would change the injected caBundle before the pods serve the new certificate.
      assert.deepEqual(cert.spec.issuerRef, { kind: 'Issuer', name: 'trainjob-webhook-ca' });
      const caIssuer = JSON.parse(
        (await cp.kubectl(['get', 'issuers.cert-manager.io', 'trainjob-webhook-ca', '-n', ns, '-o', 'json'])).stdout,
      ) as Obj;
      assert.deepEqual(caIssuer.spec, { ca: { secretName: 'trainjob-webhook-ca' } });
      const ca = JSON.parse(
        (await cp.kubectl(['get', 'certificates.cert-manager.io', 'trainjob-webhook-ca', '-n', ns, '-o', 'json']))
          .stdout,
      ) as Obj;
      assert.equal(ca.spec.isCA, true);
      assert.equal(ca.spec.secretName, 'trainjob-webhook-ca');
      assert.deepEqual(ca.spec.issuerRef, { kind: 'Issuer', name: 'trainjob-webhook-selfsigned' });
      await cp.kubectl(['get', 'issuers.cert-manager.io', 'trainjob-webhook-selfsigned', '-n', ns]);
      for (const kind of ['validatingwebhookconfiguration', 'mutatingwebhookconfiguration']) {
        const name = kind.startsWith('validating') ? 'trainjob-webhook-validating' : 'trainjob-webhook-mutating';
        const c = JSON.parse((await cp.kubectl(['get', kind, name, '-o', 'json'])).stdout) as Obj;
        assert.equal(c.metadata.annotations['cert-manager.io/inject-ca-from'], `${ns}/trainjob-webhook-cert`);
        assert.equal(c.webhooks[0].clientConfig.service.namespace, ns);
      }
      const dep = byKind(docs, 'Deployment', 'trainjob-webhook')[0].spec.template.spec;
      assert.deepEqual(dep.volumes, [{ name: 'certs', secret: { secretName: 'trainjob-webhook-cert' } }]);
      assert.deepEqual(dep.containers[0].volumeMounts, [{ name: 'certs', mountPath: '/certs', readOnly: true }]);
      assert.ok(!dep.containers[0].args.includes('--cert-rotation'));
      await uninstall(docs);
    });

    it("a user's overlay in another namespace: every namespaced object, the Service reference and the bindings follow", async () => {
      const overlay = await userOverlay(
        cp,
        'namespaced',
        'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: team-a\nresources:\n  - MANIFESTS\n',
      );
      await cp.kubectl(['create', 'namespace', 'team-a']);
      const docs = await install(await renderOverlay(cp, overlay));
      for (const d of docs)
        if (d.metadata.namespace) assert.equal(d.metadata.namespace, 'team-a', `${d.kind}/${d.metadata.name}`);
      for (const b of [...byKind(docs, 'RoleBinding'), ...byKind(docs, 'ClusterRoleBinding')])
        assert.equal(b.subjects[0].namespace, 'team-a');
      assert.equal(
        byKind(docs, 'ValidatingWebhookConfiguration')[0].webhooks[0].clientConfig.service.namespace,
        'team-a',
      );
      const as = ['--as', 'system:serviceaccount:team-a:trainjob-webhook'];
      assert.equal(
        (
          await cp.kubectl(['auth', 'can-i', 'update', 'secret/trainjob-webhook-cert', '-n', 'team-a', ...as], {
            check: false,
          })
        ).stdout.trim(),
        'yes',
      );
      await uninstall(docs);
    });

    it('the network policies (components/network-policy) in the default, sidecar and vap layouts: accepted by the API server as rendered, every named port one of the pods it selects', async () => {
      // Stored is all that can be checked here: the harness runs no network plugin, so nothing
      // enforces a NetworkPolicy (docs/install.md, "Network policy").
      await cp.kubectl(['create', 'namespace', 'team-np']);
      for (const [name, at] of [
        ['default', 'MANIFESTS'],
        ['sidecar', 'MANIFESTS/overlays/sidecar'],
        ['vap', 'MANIFESTS/overlays/vap'],
      ]) {
        const overlay = await userOverlay(
          cp,
          `network-policy-${name}`,
          `apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: team-np\nresources:\n  - ${at}\ncomponents:\n  - MANIFESTS/components/network-policy\n`,
        );
        const docs = await install(await renderOverlay(cp, overlay));
        const policies = byKind(docs, 'NetworkPolicy');
        assert.deepEqual(policies.map((p) => p.metadata.name).sort(), [
          'trainjob-webhook',
          'trainjob-webhook-reconciler',
        ]);
        for (const p of policies) {
          const live = JSON.parse(
            (await cp.kubectl(['get', 'networkpolicy', p.metadata.name, '-n', 'team-np', '-o', 'json'])).stdout,
          ) as Obj;
          assert.deepEqual(live.spec, p.spec, `${name}: NetworkPolicy/${p.metadata.name} stored as rendered`);
        }
        // Each policy's named ports, against the pods it selects in this layout: a port named in a
        // rule that no selected container declares admits nothing (a typo would close it silently).
        for (const d of byKind(docs, 'Deployment')) {
          const labels = d.spec.template.metadata.labels as Record<string, string>;
          const declared = new Set<string>(
            d.spec.template.spec.containers.flatMap((c: Obj) => (c.ports ?? []).map((x: Obj) => x.name)),
          );
          const selecting = policies.filter((p) =>
            Object.entries(p.spec.podSelector.matchLabels as Record<string, string>).every(([k, v]) => labels[k] === v),
          );
          assert.equal(selecting.length, 1, `${name}: Deployment/${d.metadata.name}'s pods under one policy`);
          const admitted = new Set<string>(
            selecting[0].spec.ingress.flatMap((r: Obj) => r.ports.map((x: Obj) => x.port as string)),
          );
          assert.deepEqual(
            [...declared].filter((port) => !admitted.has(port)),
            [],
            `${name}: every port of Deployment/${d.metadata.name} admitted from somewhere`,
          );
          const webhookRule = selecting[0].spec.ingress.find((r: Obj) =>
            r.ports.some((x: Obj) => x.port === 'webhook'),
          );
          if (declared.has('webhook'))
            assert.equal(webhookRule?.from, undefined, `${name}: the webhook's port from any source (the API server)`);
        }
        await uninstall(docs);
      }
    });

    it("the default (the reconciler's own Deployment) and vap overlays in another namespace: each account's bindings and its Lease Role follow; the policy objects stay cluster-scoped", async () => {
      await cp.kubectl(['create', 'namespace', 'team-b']);
      for (const [name, at] of [
        ['default', 'MANIFESTS'],
        ['vap', 'MANIFESTS/overlays/vap'],
      ]) {
        const overlay = await userOverlay(
          cp,
          `${name}-namespaced`,
          `apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: team-b\nresources:\n  - ${at}\n`,
        );
        const docs = await install(await renderOverlay(cp, overlay));
        for (const b of [...byKind(docs, 'RoleBinding'), ...byKind(docs, 'ClusterRoleBinding')])
          assert.equal(b.subjects[0].namespace, 'team-b', `${b.kind}/${b.metadata.name}`);
        const reconciler = ['--as', 'system:serviceaccount:team-b:trainjob-webhook-reconciler'];
        const can = async (...a: string[]) =>
          (await cp.kubectl(['auth', 'can-i', ...a, ...reconciler], { check: false })).stdout.trim();
        assert.equal(
          await can('update', 'lease/trainjob-webhook-reconciler', '-n', 'team-b'),
          'yes',
          `${name}: the reconciler renews its Lease`,
        );
        assert.equal(
          await can('delete', 'jobsets.jobset.x-k8s.io', '-n', 'ml'),
          'yes',
          `${name}: the reconciler deletes stale JobSets`,
        );
        // No Deployment is read: the Role on Trainer's controller-manager Deployment went with the
        // image-tag hint.
        assert.deepEqual(
          [
            await can('watch', 'deployments.apps/kubeflow-trainer-controller-manager', '-n', 'team-b'),
            await can('watch', 'deployments.apps/kubeflow-trainer-controller-manager', '-n', 'kubeflow-system'),
            await can('watch', 'deployments.apps/trainjob-webhook', '-n', 'team-b'),
          ],
          ['no', 'no', 'no'],
          `${name}: the reconciler reads no Deployment`,
        );
        if (name === 'default') {
          const webhook = ['--as', 'system:serviceaccount:team-b:trainjob-webhook'];
          assert.equal(
            (
              await cp.kubectl(['auth', 'can-i', 'delete', 'jobsets.jobset.x-k8s.io', '-n', 'ml', ...webhook], {
                check: false,
              })
            ).stdout.trim(),
            'no',
            "the webhook's account has no rebuild rights",
          );
        } else {
          // kustomize gives the cluster-scoped policy objects the namespace; the API server drops it.
          await cp.kubectl(['get', 'validatingadmissionpolicy', 'trainjob-webhook.trainer.kubeflow.org']);
        }
        await uninstall(docs);
      }
    });
  },
);

function readOverlay(rel: string): string {
  return readFileSync(path.join(manifestsDir, rel, 'kustomization.yaml'), 'utf8');
}
