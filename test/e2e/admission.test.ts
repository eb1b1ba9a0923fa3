// The webhook against a real kube-apiserver: the answers are the API server's answers.
// Issue 3, flows 1-7: why the CRD patch exists, the patched CRD with the webhook, dry run, the
// JobSet guard (including an identity that may not read JobSets), defaulting, and an upgrade
// from Trainer v2.3.0's CRD (ratcheting).
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { controlPlaneAvailability, startControlPlane, upstreamCrds, waitFor, type ControlPlane } from '../harness/index.ts';
import { crdPatchOps } from '../../src/rules/generate/crd-patch.ts';
import { registerWebhook, startWebhook, type WebhookProcess } from './support/webhook.ts';
import { createValidator } from '../../src/validator.ts';
import { loadPolicyFromFile } from '../../src/crd-policy.ts';
import { denialStatus } from '../../src/webhooks/status.ts';
import { patchedCrd, trainJobObject, trainJobs, upstreamTrainJobCrd, type Obj } from './support/trainjobs.ts';

const availability = controlPlaneAvailability();

/** A loopback receiver standing in for the reconciler's hand-off port: counts the hints. */
function hintReceiver(): Promise<{ server: Server; url: string; hints: unknown[] }> {
  const hints: unknown[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      hints.push(JSON.parse(body));
      res.writeHead(202).end();
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}/hints`, hints })));
}

describe('admission against the real API server', { skip: availability.available ? false : availability.reason }, () => {
  let cp: ControlPlane;
  let wh: WebhookProcess;
  let receiver: Awaited<ReturnType<typeof hintReceiver>>;
  let tj: ReturnType<typeof trainJobs>;
  const ns = 'admission';
  const upstream = upstreamTrainJobCrd();
  const patched = patchedCrd(upstream, crdPatchOps(upstream.spec.versions[0].schema.openAPIV3Schema));

  const applyCrd = async (crd: Obj) => {
    const file = path.join(await cp.tempDir('crd'), 'crd.yaml');
    await writeFile(file, stringify(crd));
    await cp.installCRDs([file]);
  };
  const validateUpdates = () => wh.counter('trainjob_webhook_requests_total', /webhook="validate",operation="UPDATE"/);

  before(async () => {
    cp = await startControlPlane({ crds: [upstreamCrds.jobsets, upstreamCrds.trainjobs, upstreamCrds.trainingRuntimes, upstreamCrds.clusterTrainingRuntimes] });
    await cp.kubectl(['create', 'namespace', ns]);
    receiver = await hintReceiver();
    wh = await startWebhook(cp, { name: 'webhook', handoff: receiver.url });
    await registerWebhook(cp, wh);
    tj = trainJobs(cp.kubeConfig);
    // The webhook is called once it is registered: wait until a create goes through it.
    await waitFor('webhook registered', async () => (await tj.create(trainJobObject('probe', ns), 'All')).allowed && (await wh.counter('trainjob_webhook_requests_total', /webhook="validate",operation="CREATE"/)) > 0);
  });
  after(async () => {
    receiver?.server.close();
    await cp?.stop();
  });

  it('1. with the upstream CRD unchanged, the API server refuses a numNodes change on a suspended job before any validating webhook runs', async () => {
    assert.equal((await tj.create(trainJobObject('blanket', ns))).allowed, true);
    const before = await validateUpdates();
    const out = await tj.update(ns, 'blanket', (o) => (o.spec.trainer.numNodes = 2));
    assert.equal(out.allowed, false);
    if (out.allowed) return;
    assert.equal(out.refusal.code, 422);
    assert.deepEqual(out.refusal.causes.map((c) => c.field), ['spec.trainer']);
    assert.match(out.refusal.message, /spec\.trainer: Invalid value: field is immutable/);
    assert.equal(await validateUpdates(), before, 'the validating webhook never saw the update');
    assert.equal(await wh.counter('trainjob_webhook_crd_blanket_trainer_rule'), 1, 'the blanket rule is reported as a metric');
  });

  describe('with the project CRD patch applied', () => {
    before(async () => {
      await applyCrd(patched);
      // The webhook follows the CRD: wait until it has adopted the patched one.
      await waitFor('webhook adopted the patched CRD', () => wh.logLines().some((l) => l.msg === 'TrainJob CRD changed' && l.blanketTrainerRule === false));
      assert.equal(await wh.counter('trainjob_webhook_crd_blanket_trainer_rule'), 0);
      assert.equal((await tj.create(trainJobObject('scale', ns))).allowed, true);
      assert.equal((await tj.create(trainJobObject('running', ns, { suspend: false }))).allowed, true);
    });

    it('2a. a numNodes change on a suspended TrainJob succeeds, with the rebuild warning', async () => {
      const out = await tj.update(ns, 'scale', (o) => (o.spec.trainer.numNodes = 2));
      assert.equal(out.allowed, true, JSON.stringify(out));
      assert.equal((await tj.get(ns, 'scale')).spec.trainer.numNodes, 2);
    });

    it('2b. an image change is refused; the error names the field and the reason', async () => {
      const out = await tj.update(ns, 'scale', (o) => (o.spec.trainer.image = 'ghcr.io/acme/train:2'));
      assert.equal(out.allowed, false);
      if (out.allowed) return;
      assert.equal(out.refusal.code, 422);
      assert.ok(out.refusal.causes.some((c) => c.field === 'spec.trainer.image'), JSON.stringify(out.refusal));
      assert.match(out.refusal.message, /spec\.trainer\.image: Invalid value: .*field is immutable/);
    });

    it('2c. a numNodes change on a running TrainJob is refused and says to suspend first', async () => {
      const out = await tj.update(ns, 'running', (o) => (o.spec.trainer.numNodes = 3));
      assert.equal(out.allowed, false);
      if (out.allowed) return;
      assert.ok(out.refusal.causes.some((c) => c.field === 'spec.trainer.numNodes'), JSON.stringify(out.refusal));
      assert.match(out.refusal.message, /suspend/);
    });

    it('3a. a server-side dry run (client-node, dryRun=All) is decided the same, hands nothing on, persists nothing', async () => {
      const hintsBefore = receiver.hints.length;
      const stored = await tj.get(ns, 'scale');
      const allowed = await tj.update(ns, 'scale', (o) => (o.spec.trainer.numNodes = 4), 'All');
      assert.equal(allowed.allowed, true, JSON.stringify(allowed));
      const dryRunLines = () => wh.logLines().filter((l) => l.msg === 'admission' && l.webhook === 'validate' && l.dryRun === true && l.name === 'scale');
      await waitFor('the webhook logged the dry run with dryRun: true', () => dryRunLines().some((l) => l.decision === 'allowed'), { timeoutMs: 5000 });
      // A refused dry run gets the same answer as the same request for real.
      const deniedDry = await tj.update(ns, 'scale', (o) => (o.spec.trainer.image = 'x:3'), 'All');
      const deniedReal = await tj.update(ns, 'scale', (o) => (o.spec.trainer.image = 'x:3'));
      assert.equal(deniedDry.allowed, false);
      assert.deepEqual(deniedDry, deniedReal);
      assert.equal((await tj.get(ns, 'scale')).metadata.resourceVersion, stored.metadata.resourceVersion);
      await new Promise((r) => setTimeout(r, 500));
      assert.equal(receiver.hints.length, hintsBefore, 'no hint for a dry run');
      // A real update afterwards does hand off: the receiver works, so the dry run's silence means something.
      await tj.update(ns, 'scale', (o) => (o.metadata.labels = { touched: 'yes' }));
      await waitFor('a hint for the real update', () => receiver.hints.length === hintsBefore + 1);
    });

    it('3b. kubectl apply --dry-run=server: decided the same, no hint, nothing persisted', async () => {
      const hintsBefore = receiver.hints.length;
      const stored = await tj.get(ns, 'scale');
      const next = structuredClone(stored);
      next.spec.trainer.image = 'x:9';
      delete next.metadata.managedFields;
      const dir = await cp.tempDir('kubectl');
      await writeFile(path.join(dir, 'tj.yaml'), JSON.stringify(next));
      const res = await cp.kubectl(['apply', '--server-side', '--force-conflicts', '--dry-run=server', '-f', path.join(dir, 'tj.yaml')], { check: false });
      assert.notEqual(res.code, 0);
      assert.match(res.stderr, /spec\.trainer\.image: Invalid value/);
      next.spec.trainer.image = stored.spec.trainer.image;
      next.spec.trainer.numNodes = 5;
      await writeFile(path.join(dir, 'tj.yaml'), JSON.stringify(next));
      await cp.kubectl(['apply', '--server-side', '--force-conflicts', '--dry-run=server', '-f', path.join(dir, 'tj.yaml')]);
      assert.equal((await tj.get(ns, 'scale')).metadata.resourceVersion, stored.metadata.resourceVersion);
      await new Promise((r) => setTimeout(r, 500));
      assert.equal(receiver.hints.length, hintsBefore);
    });

    describe('4. the JobSet guard', () => {
      const jobsets = () => cp.kubeConfig.makeApiClient(CustomObjectsApi);
      const J = { group: 'jobset.x-k8s.io', version: 'v1alpha2', namespace: ns, plural: 'jobsets' };
      const setActive = async (active: number) => {
        const js = (await jobsets().getNamespacedCustomObject({ ...J, name: 'guarded' })) as Obj;
        js.status = { replicatedJobsStatus: [{ name: 'node', active, ready: 0, succeeded: 0, failed: 0, suspended: 0 }] };
        await jobsets().replaceNamespacedCustomObjectStatus({ ...J, name: 'guarded', body: js });
      };

      before(async () => {
        assert.equal((await tj.create(trainJobObject('guarded', ns))).allowed, true);
        await jobsets().createNamespacedCustomObject({
          ...J,
          body: {
            apiVersion: 'jobset.x-k8s.io/v1alpha2',
            kind: 'JobSet',
            metadata: { name: 'guarded', namespace: ns },
            spec: { suspend: true, replicatedJobs: [{ name: 'node', template: { spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name: 'node', image: 'x' }] } } } } }] },
          },
        });
      });

      it('refuses the change while the JobSet has an active replicated job', async () => {
        await setActive(1);
        const out = await tj.update(ns, 'guarded', (o) => (o.spec.trainer.numNodes = 2));
        assert.equal(out.allowed, false);
        if (out.allowed) return;
        assert.equal(out.refusal.code, 403);
        assert.match(out.refusal.message, /active pods/);
      });

      it('allows it with active: 0', async () => {
        await setActive(0);
        const out = await tj.update(ns, 'guarded', (o) => (o.spec.trainer.numNodes = 2));
        assert.equal(out.allowed, true, JSON.stringify(out));
      });

      it('refuses it as an internal error when the webhook may not read JobSets', async () => {
        // A second webhook whose identity may read the CRD but not JobSets, registered for one namespace.
        const user = await cp.makeUserKubeconfig('tjw-no-jobsets');
        await cp.applyYaml(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: { name: tjw-no-jobsets }
rules:
  - { apiGroups: ["apiextensions.k8s.io"], resources: ["customresourcedefinitions"], verbs: ["get", "list", "watch"] }
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: { name: tjw-no-jobsets }
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: tjw-no-jobsets }
subjects: [{ kind: User, name: tjw-no-jobsets, apiGroup: rbac.authorization.k8s.io }]
`);
        const restricted = await startWebhook(cp, { name: 'webhook-no-jobsets', kubeconfig: user.path });
        const rns = 'restricted';
        await cp.kubectl(['create', 'namespace', rns]);
        await cp.kubectl(['label', 'namespace', rns, 'tjw=restricted']);
        const { webhookConfigurationsYaml } = await import('./support/webhook.ts');
        const { parseAllDocuments } = await import('yaml');
        const docs = parseAllDocuments(webhookConfigurationsYaml(restricted, 'restricted-')).map((d) => d.toJSON() as Obj);
        for (const d of docs) for (const w of d.webhooks) w.namespaceSelector = { matchLabels: { tjw: 'restricted' } };
        await cp.applyYaml(docs.map((d) => stringify(d)).join('---\n'));
        assert.equal((await tj.create(trainJobObject('guarded', rns))).allowed, true);
        const out = await waitFor('the restricted webhook answers', async () => {
          const o = await tj.update(rns, 'guarded', (x) => (x.spec.trainer.numNodes = 2), 'All');
          return !o.allowed && /could not read JobSet/.test(o.refusal.message) ? o : undefined;
        });
        assert.equal(out.allowed, false);
        if (!out.allowed) assert.equal(out.refusal.code, 500);
      });
    });

    it('5. the mutating webhook stamps runtimePatches[].time on create and keeps it across an update that leaves the patch unchanged', async () => {
      const created = await tj.create(trainJobObject('patched', ns, { runtimePatches: [{ manager: 'acme.io/tuner', trainingRuntimeSpec: { template: { metadata: { labels: { a: 'b' } } } } }] }));
      assert.equal(created.allowed, true, JSON.stringify(created));
      const stamped = (await tj.get(ns, 'patched')).spec.runtimePatches[0].time;
      assert.match(stamped, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
      await new Promise((r) => setTimeout(r, 1100)); // a new stamp would differ by at least a second
      const out = await tj.update(ns, 'patched', (o) => {
        o.metadata.labels = { x: 'y' };
        delete o.spec.runtimePatches[0].time;
      });
      assert.equal(out.allowed, true, JSON.stringify(out));
      assert.equal((await tj.get(ns, 'patched')).spec.runtimePatches[0].time, stamped);
    });
  });

  it('6. objects created under Trainer v2.3.0\'s CRD with values the newer CRD forbids stay updatable (ratcheting), through the webhook as through the API server', async () => {
    const old = upstreamTrainJobCrd('v2.3.0');
    await applyCrd(old);
    await waitFor('webhook adopted the v2.3.0 CRD', () => wh.logLines().some((l) => l.msg === 'TrainJob CRD changed' && l.blanketTrainerRule === true));
    const legacy = trainJobObject('legacy', ns);
    legacy.spec.trainer.numProcPerNode = 0; // v2.3.0 has no numProcPerNode >= 1 rule
    assert.equal((await tj.create(legacy)).allowed, true);
    await applyCrd(patched);
    await waitFor('webhook adopted the patched CRD again', () => wh.logLines().filter((l) => l.msg === 'TrainJob CRD changed' && l.blanketTrainerRule === false).length >= 2);
    for (const [what, change] of [
      ['suspend', (o: Obj) => (o.spec.suspend = false)],
      ['labels', (o: Obj) => (o.metadata.labels = { team: 'a' })],
      ['finalizers', (o: Obj) => (o.metadata.finalizers = ['example.com/keep'])],
    ] as const) {
      const out = await tj.update(ns, 'legacy', change);
      assert.equal(out.allowed, true, `${what}: ${JSON.stringify(out)}`);
    }
    // Changing the forbidden value itself is still refused.
    const out = await tj.update(ns, 'legacy', (o) => (o.spec.trainer.numProcPerNode = -1));
    assert.equal(out.allowed, false);
    await tj.update(ns, 'legacy', (o) => (o.metadata.finalizers = []));
  });

  it('8. for objects the CRD itself refuses, the offline answer is the API server\'s, word for word', async () => {
    const crdFile = path.join(await cp.tempDir('crd-now'), 'crd.yaml');
    await writeFile(crdFile, stringify(patched));
    const validator = createValidator({ policy: await loadPolicyFromFile(crdFile) });
    const bad: [string, (o: Obj) => void][] = [
      ['name-not-rfc1035', (o) => (o.metadata.name = 'bad.name')],
      ['num-proc-zero', (o) => (o.spec.trainer.numProcPerNode = 0)],
      ['num-nodes-negative', (o) => (o.spec.trainer.numNodes = -1)],
      ['managed-by-unknown', (o) => (o.spec.managedBy = 'example.com/other')],
      ['storage-uri', (o) => (o.spec.initializer = { model: { storageUri: 'no-scheme' } })],
      ['several', (o) => ((o.spec.trainer.numProcPerNode = 0), (o.spec.managedBy = 'x'), (o.spec.initializer = { dataset: { storageUri: 'nope' } }))],
      ['runtime-ref-name-missing', (o) => delete o.spec.runtimeRef.name],
    ];
    for (const [name, change] of bad) {
      const obj = trainJobObject(name, ns);
      change(obj);
      const server = await tj.create(obj);
      assert.equal(server.allowed, false, name);
      if (server.allowed) continue;
      const decision = await validator.validate({ uid: 'x', operation: 'CREATE', namespace: ns, name: obj.metadata.name, object: obj, dryRun: true });
      const ours = denialStatus(obj.metadata.name, decision.causes);
      // The API server collects CEL errors walking Go maps (random order): compare the causes as sets.
      const causes = (m: string) => m.replace(/^[^:]*: \[?/, '').replace(/\]$/, '').split(/, (?=spec\.|metadata\.|<nil>)/).sort();
      assert.deepEqual(causes(ours.message), causes(server.refusal.message), name);
      assert.equal(ours.message.split(':')[0], server.refusal.message.split(':')[0], name);
      assert.deepEqual(ours.details?.causes?.map((c) => c.field).sort(), server.refusal.causes.map((c) => c.field).sort(), name);
    }
  });

  it('7. kubectl is within the API server\'s skew (built from the same module)', async () => {
    const v = JSON.parse((await cp.kubectl(['version', '-o', 'json'])).stdout);
    assert.equal(v.clientVersion.minor.replace('+', ''), v.serverVersion.minor.replace('+', ''));
  });
});
