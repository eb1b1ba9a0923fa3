// The webhook against a real kube-apiserver: the answers are the API server's answers.
// Issue 3, flows 1-7: why the CRD patch exists, the patched CRD with the webhook, dry run, the
// warning about a JobSet's running pods (including an identity that may not list Jobs), defaulting,
// an upgrade from Trainer v2.3.0's CRD (ratcheting); issue 8: negative counts and finished jobs
// against Trainer v2.3.0's CRD with the patch.
import assert from 'node:assert/strict';
import { chmod, readFile, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { BatchV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { parse, stringify } from 'yaml';
import {
  controlPlaneAvailability,
  pods,
  startControlPlane,
  upstreamCrds,
  upstreamDir,
  waitFor,
  type ControlPlane,
} from '../harness/index.ts';
import { crdPatchOps } from '../../src/rules/generate/crd-patch.ts';
import { rulesFor } from '../../src/rules/table.ts';
import { detectTrainerLine } from '../../src/api/trainer-line-detect.ts';
import { registerWebhook, startWebhook, type WebhookProcess } from './support/webhook.ts';
import { createValidator } from '../../src/rules/validator.ts';
import { loadPolicyFromFile } from '../../src/rules/crd-policy.ts';
import { denialStatus } from '../../src/webhook/status.ts';
import { connectCluster } from '../../src/cluster/connect.ts';
import { readCrd } from '../../src/webhook/crd-follower.ts';
import { describeError } from '../../src/cluster/errors.ts';
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
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}/hints`, hints }),
    ),
  );
}

describe(
  'admission against the real API server',
  { skip: availability.available ? false : availability.reason },
  () => {
    let cp: ControlPlane;
    let wh: WebhookProcess;
    let receiver: Awaited<ReturnType<typeof hintReceiver>>;
    let tj: ReturnType<typeof trainJobs>;
    const ns = 'admission';
    const upstream = upstreamTrainJobCrd();
    // The patch generated for the line this cell's CRD is (the default cell installs main's CRD).
    const line = detectTrainerLine(upstream).line;
    const patched = patchedCrd(upstream, crdPatchOps(upstream.spec.versions[0].schema.openAPIV3Schema, rulesFor(line)));

    const applyCrd = async (crd: Obj) => {
      const file = path.join(await cp.tempDir('crd'), 'crd.yaml');
      await writeFile(file, stringify(crd));
      await cp.installCRDs([file]);
    };
    const validateUpdates = () =>
      wh.counter('trainjob_webhook_requests_total', /webhook="validate",operation="UPDATE"/);

    before(async () => {
      cp = await startControlPlane({
        crds: [
          upstreamCrds.jobsets,
          upstreamCrds.trainjobs,
          upstreamCrds.trainingRuntimes,
          upstreamCrds.clusterTrainingRuntimes,
        ],
      });
      await cp.kubectl(['create', 'namespace', ns]);
      receiver = await hintReceiver();
      wh = await startWebhook(cp, { name: 'webhook', handoff: receiver.url });
      await registerWebhook(cp, wh);
      tj = trainJobs(cp.kubeConfig);
      // The webhook is called once it is registered: wait until a create goes through it.
      await waitFor(
        'webhook registered',
        async () =>
          (await tj.create(trainJobObject('probe', ns), 'All')).allowed &&
          (await wh.counter('trainjob_webhook_requests_total', /webhook="validate",operation="CREATE"/)) > 0,
      );
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
      assert.deepEqual(
        out.refusal.causes.map((c) => c.field),
        ['spec.trainer'],
      );
      assert.match(out.refusal.message, /spec\.trainer: Invalid value: field is immutable/);
      assert.equal(await validateUpdates(), before, 'the validating webhook never saw the update');
      assert.equal(
        await wh.counter('trainjob_webhook_crd_blanket_trainer_rule'),
        1,
        'the blanket rule is reported as a metric',
      );
    });

    describe('with the project CRD patch applied', () => {
      before(async () => {
        await applyCrd(patched);
        // The webhook follows the CRD: wait until it has adopted the patched one.
        await waitFor('webhook adopted the patched CRD', () =>
          wh.logLines().some((l) => l.msg === 'TrainJob CRD changed' && l.blanketTrainerRule === false),
        );
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
        assert.ok(
          out.refusal.causes.some((c) => c.field === 'spec.trainer.image'),
          JSON.stringify(out.refusal),
        );
        assert.match(out.refusal.message, /spec\.trainer\.image: Invalid value: .*field is immutable/);
      });

      it('2c. a numNodes change on a running TrainJob is refused and says to suspend first', async () => {
        const out = await tj.update(ns, 'running', (o) => (o.spec.trainer.numNodes = 3));
        assert.equal(out.allowed, false);
        if (out.allowed) return;
        assert.ok(
          out.refusal.causes.some((c) => c.field === 'spec.trainer.numNodes'),
          JSON.stringify(out.refusal),
        );
        assert.match(out.refusal.message, /suspend/);
      });

      it('3a. a server-side dry run (client-node, dryRun=All) is decided the same, hands nothing on, persists nothing', async () => {
        const hintsBefore = receiver.hints.length;
        const stored = await tj.get(ns, 'scale');
        const allowed = await tj.update(ns, 'scale', (o) => (o.spec.trainer.numNodes = 4), 'All');
        assert.equal(allowed.allowed, true, JSON.stringify(allowed));
        const dryRunLines = () =>
          wh
            .logLines()
            .filter(
              (l) => l.msg === 'admission' && l.webhook === 'validate' && l.dryRun === true && l.name === 'scale',
            );
        await waitFor(
          'the webhook logged the dry run with dryRun: true',
          () => dryRunLines().some((l) => l.decision === 'allowed'),
          { timeoutMs: 5000 },
        );
        // A refused dry run gets the same answer as the same request for real.
        const deniedDry = await tj.update(ns, 'scale', (o) => (o.spec.trainer.image = 'x:3'), 'All');
        const deniedReal = await tj.update(ns, 'scale', (o) => (o.spec.trainer.image = 'x:3'));
        assert.equal(deniedDry.allowed, false);
        assert.deepEqual(deniedDry, deniedReal);
        assert.equal((await tj.get(ns, 'scale')).metadata.resourceVersion, stored.metadata.resourceVersion);
        await new Promise((r) => setTimeout(r, 500));
        assert.equal(receiver.hints.length, hintsBefore, 'no hint for a dry run');
        // A real update afterwards does hand off: the receiver works, so the dry run's silence means something.
        // (A spec change: the webhook configurations' matchConditions skip updates that leave spec unchanged.)
        assert.equal((await tj.update(ns, 'scale', (o) => (o.spec.trainer.numNodes = 3))).allowed, true);
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
        const res = await cp.kubectl(
          ['apply', '--server-side', '--force-conflicts', '--dry-run=server', '-f', path.join(dir, 'tj.yaml')],
          { check: false },
        );
        assert.notEqual(res.code, 0);
        assert.match(res.stderr, /spec\.trainer\.image: Invalid value/);
        next.spec.trainer.image = stored.spec.trainer.image;
        next.spec.trainer.numNodes = 5;
        await writeFile(path.join(dir, 'tj.yaml'), JSON.stringify(next));
        await cp.kubectl([
          'apply',
          '--server-side',
          '--force-conflicts',
          '--dry-run=server',
          '-f',
          path.join(dir, 'tj.yaml'),
        ]);
        assert.equal((await tj.get(ns, 'scale')).metadata.resourceVersion, stored.metadata.resourceVersion);
        await new Promise((r) => setTimeout(r, 500));
        assert.equal(receiver.hints.length, hintsBefore);
      });

      describe('4. numNodes beside a JobSet whose pods run (issue 8): the webhook warns, it never refuses for pods', () => {
        // No Trainer or JobSet controller in this suite: a Job labelled like a JobSet's child stands
        // in for the JobSet's node Job, and the world's scheduler and KWOK nodes really run its pods.
        const jobBody = (name: string, parallelism: number) => ({
          apiVersion: 'batch/v1',
          kind: 'Job',
          metadata: { name: `${name}-node-0`, namespace: ns, labels: { 'jobset.sigs.k8s.io/jobset-name': name } },
          spec: {
            parallelism,
            completions: parallelism,
            template: {
              metadata: {
                labels: {
                  'jobset.sigs.k8s.io/jobset-name': name,
                  'trainer.kubeflow.org/trainjob-ancestor-step': 'trainer',
                },
              },
              spec: { restartPolicy: 'Never', containers: [{ name: 'node', image: 'ghcr.io/acme/train:1' }] },
            },
          },
        });
        /** kubectl's view: the API server's answer with the webhook's warnings (stderr "Warning: ..."). */
        const patchTrainJob = async (namespace: string, name: string, body: Obj, dryRun = false) => {
          const res = await cp.kubectl(
            [
              'patch',
              'trainjob',
              name,
              '-n',
              namespace,
              '--type',
              'merge',
              '-p',
              JSON.stringify(body),
              ...(dryRun ? ['--dry-run=server'] : []),
            ],
            { check: false },
          );
          const warnings = res.stderr
            .split('\n')
            .filter((l) => l.startsWith('Warning: '))
            .map((l) => l.slice('Warning: '.length));
          return {
            allowed: res.code === 0,
            warnings,
            error: res.stderr
              .split('\n')
              .filter((l) => l.startsWith('Error') || l.startsWith('The '))
              .join('\n'),
          };
        };

        before(async () => {
          // What the webhook judges a count change by: the runtime runtimeRef names, and a Lease that
          // says a reconciler leads (as `reconcile` writes it; no reconciler runs in this world, the
          // webhook only reads the Lease). Without them the change would be refused (403, 503).
          await cp.applyYaml(path.join(upstreamDir, 'runtimes/torch_distributed.yaml'));
          await cp.applyYaml(
            JSON.stringify({
              apiVersion: 'coordination.k8s.io/v1',
              kind: 'Lease',
              metadata: {
                name: 'trainjob-webhook-reconciler',
                namespace: 'default',
                annotations: { 'trainjob-webhook.kubeflow.org/reconciler-mode': 'companion' },
              },
              spec: {
                holderIdentity: 'admission-test',
                leaseDurationSeconds: 3600,
                renewTime: new Date().toISOString().replace(/\.(\d{3})Z$/, '.$1000Z'),
              },
            }),
          );
          const created = await tj.create(trainJobObject('guarded', ns, { suspend: false }));
          assert.ok(created.allowed);
          // The JobSet too, with the status its controller would report for one Job with 2 running
          // pods (replicatedJobsStatus counts Jobs: active 1): what the old guard judged, and refused.
          const objects = cp.kubeConfig.makeApiClient(CustomObjectsApi);
          const J = { group: 'jobset.x-k8s.io', version: 'v1alpha2', namespace: ns, plural: 'jobsets' };
          const js = (await objects.createNamespacedCustomObject({
            ...J,
            body: {
              apiVersion: 'jobset.x-k8s.io/v1alpha2',
              kind: 'JobSet',
              metadata: {
                name: 'guarded',
                namespace: ns,
                // Controlled by the TrainJob, as Trainer's would be: the webhook judges only its own JobSet.
                ownerReferences: [
                  {
                    apiVersion: 'trainer.kubeflow.org/v1alpha1',
                    kind: 'TrainJob',
                    name: 'guarded',
                    uid: created.object.metadata.uid,
                    controller: true,
                  },
                ],
              },
              spec: {
                suspend: false,
                replicatedJobs: [
                  {
                    name: 'node',
                    template: {
                      metadata: { labels: { 'trainer.kubeflow.org/trainjob-ancestor-step': 'trainer' } },
                      spec: {
                        parallelism: 2,
                        template: { spec: { restartPolicy: 'Never', containers: [{ name: 'node', image: 'x' }] } },
                      },
                    },
                  },
                ],
              },
            },
          })) as Obj;
          js.status = {
            replicatedJobsStatus: [{ name: 'node', active: 1, ready: 1, succeeded: 0, failed: 0, suspended: 0 }],
          };
          await objects.replaceNamespacedCustomObjectStatus({ ...J, name: 'guarded', body: js });
          await cp.kubeConfig
            .makeApiClient(BatchV1Api)
            .createNamespacedJob({ namespace: ns, body: jobBody('guarded', 2) });
          await pods(cp).waitRunning(ns, 'jobset.sigs.k8s.io/jobset-name=guarded', 2);
          await waitFor(
            'the Job counts 2 active pods',
            async () =>
              (
                await cp.kubeConfig
                  .makeApiClient(BatchV1Api)
                  .readNamespacedJobStatus({ namespace: ns, name: 'guarded-node-0' })
              ).status?.active === 2,
          );
        });

        it('running on both sides: refused, says to suspend first, carries no rebuild warning', async () => {
          const out = await patchTrainJob(ns, 'guarded', { spec: { trainer: { numNodes: 2 } } });
          assert.equal(out.allowed, false);
          assert.match(
            out.error,
            /spec\.trainer\.numNodes: Forbidden: numNodes may only change while the TrainJob is suspended/,
          );
          assert.deepEqual(out.warnings, []);
        });

        it('suspend and scale in one update while 2 pods run: admitted, warning about the rebuild and the running pods (their Job and count in the log: the API server is not known to be the caller)', async () => {
          const out = await patchTrainJob(ns, 'guarded', { spec: { suspend: true, trainer: { numNodes: 2 } } }, true);
          assert.equal(out.allowed, true, out.error);
          assert.ok(
            out.warnings.some((w) =>
              /^spec\.trainer\.numNodes changes from 1 to 2: the JobSet is rebuilt with 2 nodes as soon as it is suspended and none of its pods runs or is terminating/.test(
                w,
              ),
            ),
            out.warnings.join('\n'),
          );
          assert.ok(!out.warnings.some((w) => /on resume/.test(w)), out.warnings.join('\n'));
          assert.ok(
            out.warnings.includes(
              `TrainJob ${ns}/guarded: its JobSet's pods have not all stopped yet: the rebuild waits until none of its pods runs or is terminating, and its pods stop once the JobSet is suspended; \`kubectl -n ${ns} get pods -l jobset.sigs.k8s.io/jobset-name=guarded\` shows them`,
            ),
            out.warnings.join('\n'),
          );
          assert.ok(
            wh
              .logLines()
              .some(
                (l) =>
                  l.component === 'count-change' &&
                  l.name === 'guarded' &&
                  JSON.stringify(l.warnings).includes(
                    `JobSet ${ns}/guarded still has 2 pods (2 pending or running; Job guarded-node-0: 2 active)`,
                  ),
              ),
            'the webhook logs the pods it found',
          );
        });

        it('the Jobs read behind the warning comes from the watch cache as it is (resourceVersion 0): no consistent read, which waits ~100 ms for the cache after any write', async () => {
          // kube-apiserver counts every consistent LIST it serves from its watch cache, by resource.
          const consistentJobReads = async () =>
            (await cp.kubectl(['get', '--raw', '/metrics'])).stdout
              .split('\n')
              .filter(
                (l) =>
                  l.startsWith('apiserver_watch_cache_consistent_read_total{') &&
                  l.includes('group="batch"') &&
                  l.includes('resource="jobs"'),
              )
              .reduce((sum, l) => sum + Number(l.split(' ').pop()), 0);
          const before = await consistentJobReads();
          const changes = 4;
          for (let i = 0; i < changes; i++) {
            const out = await patchTrainJob(
              ns,
              'guarded',
              { spec: { suspend: true, trainer: { numNodes: 2 + i } } },
              true,
            );
            assert.ok(
              out.warnings.some((w) =>
                w.startsWith(`TrainJob ${ns}/guarded: its JobSet's pods have not all stopped yet`),
              ),
              out.warnings.join('\n'),
            );
          }
          // Fewer than one per admitted change (the world's own controllers list from their informers).
          assert.ok(
            (await consistentJobReads()) - before < changes,
            `consistent LISTs of Jobs: ${before} -> ${await consistentJobReads()}`,
          );
        });

        it('a webhook that may not read the JobSet refuses the count change for now (503, HTTP 403); one that may not list Jobs admits it, with a warning', async () => {
          // A second webhook whose identity may read the CRD and TrainJobs (the check that a review
          // is the stored TrainJob's) but not JobSets or Jobs, registered for one namespace.
          const user = await cp.makeUserKubeconfig('tjw-no-jobs');
          const role = (extra: string) => `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: { name: tjw-no-jobs }
rules:
  - { apiGroups: ["apiextensions.k8s.io"], resources: ["customresourcedefinitions"], verbs: ["get", "list", "watch"] }
  - { apiGroups: ["trainer.kubeflow.org"], resources: ["trainjobs"], verbs: ["get"] }
${extra}`;
          await cp.applyYaml(`${role('')}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: { name: tjw-no-jobs }
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: tjw-no-jobs }
subjects: [{ kind: User, name: tjw-no-jobs, apiGroup: rbac.authorization.k8s.io }]
`);
          const restricted = await startWebhook(cp, { name: 'webhook-no-jobs', kubeconfig: user.path });
          const rns = 'restricted';
          await cp.kubectl(['create', 'namespace', rns]);
          await cp.kubectl(['label', 'namespace', rns, 'tjw=restricted']);
          const { webhookConfigurationsYaml } = await import('./support/webhook.ts');
          const { parseAllDocuments } = await import('yaml');
          const docs = parseAllDocuments(webhookConfigurationsYaml(restricted, 'restricted-')).map(
            (d) => d.toJSON() as Obj,
          );
          for (const d of docs)
            for (const w of d.webhooks) w.namespaceSelector = { matchLabels: { tjw: 'restricted' } };
          await cp.applyYaml(docs.map((d) => stringify(d)).join('---\n'));
          assert.equal((await tj.create(trainJobObject('guarded', rns))).allowed, true);
          const forNow = await waitFor('the restricted webhook answers', async () => {
            const o = await patchTrainJob(rns, 'guarded', { spec: { trainer: { numNodes: 2 } } }, true);
            return /could not be read/.test(o.error) ? o : undefined;
          });
          assert.equal(forNow.allowed, false);
          assert.match(
            forNow.error,
            /cannot be changed now: .*its JobSet could not be read \(the webhook's log says why\)/,
          );
          assert.doesNotMatch(forNow.error, /403|forbidden|tjw-no-jobs/);
          const logged = () => JSON.stringify(restricted.logLines().filter((l) => l.component === 'count-change'));
          assert.match(logged(), /JobSet guarded could not be read \(reading the JobSet: HTTP 403/);
          assert.match(forNow.error, /refused for now and can be applied again in a few seconds/);
          await cp.applyYaml(
            role(`  - { apiGroups: ["jobset.x-k8s.io"], resources: ["jobsets"], verbs: ["get"] }
  - { apiGroups: ["trainer.kubeflow.org"], resources: ["clustertrainingruntimes"], verbs: ["get"] }
  - { apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["get"] }`),
          );
          const out = await waitFor('the restricted webhook answers', async () => {
            const o = await patchTrainJob(rns, 'guarded', { spec: { trainer: { numNodes: 2 } } }, true);
            return o.warnings.some((w) => /could not be counted/.test(w)) ? o : undefined;
          });
          assert.equal(out.allowed, true, out.error);
          assert.ok(
            out.warnings.some((w) =>
              w.startsWith(
                `TrainJob ${rns}/guarded: the pods of its JobSet could not be counted (the webhook's log says why); the change is admitted all the same`,
              ),
            ),
            out.warnings.join('\n'),
          );
          assert.match(
            logged(),
            new RegExp(
              `JobSet ${rns}/guarded: its pods could not be counted \\(reading its Jobs failed: HTTP 403: .*forbidden`,
            ),
          );
        });
      });

      it('5. the mutating webhook stamps runtimePatches[].time on create and keeps it across an update that leaves the patch unchanged', async () => {
        const created = await tj.create(
          trainJobObject('patched', ns, {
            runtimePatches: [
              { manager: 'acme.io/tuner', trainingRuntimeSpec: { template: { metadata: { labels: { a: 'b' } } } } },
            ],
          }),
        );
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

    it("6. objects created under Trainer v2.3.0's CRD with values the newer CRD forbids stay updatable (ratcheting), through the webhook as through the API server", async () => {
      const old = upstreamTrainJobCrd('v2.3.0');
      await applyCrd(old);
      await waitFor('webhook adopted the v2.3.0 CRD', () =>
        wh.logLines().some((l) => l.msg === 'TrainJob CRD changed' && l.blanketTrainerRule === true),
      );
      const legacy = trainJobObject('legacy', ns);
      legacy.spec.trainer.numProcPerNode = 0; // v2.3.0 has no numProcPerNode >= 1 rule
      assert.equal((await tj.create(legacy)).allowed, true);
      await applyCrd(patched);
      await waitFor(
        'webhook adopted the patched CRD again',
        () =>
          wh.logLines().filter((l) => l.msg === 'TrainJob CRD changed' && l.blanketTrainerRule === false).length >= 2,
      );
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

    it("8. for objects the CRD itself refuses, the offline answer is the API server's, word for word", async () => {
      const crdFile = path.join(await cp.tempDir('crd-now'), 'crd.yaml');
      await writeFile(crdFile, stringify(patched));
      const validator = createValidator({ policy: await loadPolicyFromFile(crdFile) });
      const bad: [string, (o: Obj) => void][] = [
        ['name-not-rfc1035', (o) => (o.metadata.name = 'bad.name')],
        ['num-proc-zero', (o) => (o.spec.trainer.numProcPerNode = 0)],
        ['num-nodes-negative', (o) => (o.spec.trainer.numNodes = -1)],
        ['managed-by-unknown', (o) => (o.spec.managedBy = 'example.com/other')],
        ['storage-uri', (o) => (o.spec.initializer = { model: { storageUri: 'no-scheme' } })],
        [
          'several',
          (o) => (
            (o.spec.trainer.numProcPerNode = 0),
            (o.spec.managedBy = 'x'),
            (o.spec.initializer = { dataset: { storageUri: 'nope' } })
          ),
        ],
        ['runtime-ref-name-missing', (o) => delete o.spec.runtimeRef.name],
      ];
      for (const [name, change] of bad) {
        const obj = trainJobObject(name, ns);
        change(obj);
        const server = await tj.create(obj);
        assert.equal(server.allowed, false, name);
        if (server.allowed) continue;
        const decision = await validator.validate({
          uid: 'x',
          operation: 'CREATE',
          namespace: ns,
          name: obj.metadata.name,
          object: obj,
          dryRun: true,
        });
        const ours = denialStatus(obj.metadata.name, decision.causes);
        // The API server collects CEL errors walking Go maps (random order): compare the causes as sets.
        const causes = (m: string) =>
          m
            .replace(/^[^:]*: \[?/, '')
            .replace(/\]$/, '')
            .split(/, (?=spec\.|metadata\.|<nil>)/)
            .sort();
        assert.deepEqual(causes(ours.message), causes(server.refusal.message), name);
        assert.equal(ours.message.split(':')[0], server.refusal.message.split(':')[0], name);
        assert.deepEqual(
          ours.details?.causes?.map((c) => c.field).sort(),
          server.refusal.causes.map((c) => c.field).sort(),
          name,
        );
      }
    });

    it("9. Trainer v2.3.0's CRD (no numNodes minimum) with the patch: a negative count is refused by the scale subresource's own check, a stored one is fixed by the update that suspends and sets a count; a finished job's count is refused, a job Failed otherwise may be scaled", async () => {
      const v230 = upstreamTrainJobCrd('v2.3.0');
      const v230Schema = v230.spec.versions[0].schema.openAPIV3Schema;
      // First without the scale subresource (the rules alone), as a cluster had it before: a
      // negative count can be stored, as v2.3.0 itself allows.
      const rulesOnly = patchedCrd(v230, crdPatchOps(v230Schema));
      rulesOnly.spec.versions[0].subresources = { status: {} };
      await applyCrd(rulesOnly);
      await waitFor('the v2.3.0 CRD without the scale subresource served', async () => {
        const legacy = trainJobObject('neg-probe', ns);
        legacy.spec.trainer.numNodes = -1;
        return (await tj.create(legacy, 'All')).allowed; // the newer CRD's minimum: 0 would refuse it
      });
      const neg = trainJobObject('negative', ns);
      neg.spec.trainer.numNodes = -1;
      assert.equal((await tj.create(neg)).allowed, true, 'v2.3.0 admits a negative count on create');

      // The patch as shipped, with the scale subresource (specReplicasPath .spec.trainer.numNodes):
      // the API server checks that path on every create and update, 0 to 2^31-1, not ratcheted
      // (apiextensions-apiserver pkg/registry/customresource/validator.go ValidateScaleSpec).
      await applyCrd(patchedCrd(v230, crdPatchOps(v230Schema, undefined, v230.spec.versions[0])));
      const scaleCheck = /spec\.trainer\.numNodes: Invalid value: -1: should be a non-negative integer/;
      await waitFor('the v2.3.0 CRD with the scale subresource served', async () => {
        const legacy = trainJobObject('neg-probe', ns);
        legacy.spec.trainer.numNodes = -1;
        const out = await tj.create(legacy, 'All');
        return !out.allowed && scaleCheck.test(out.refusal.message);
      });
      for (const [what, change] of [
        ['resume', (o: Obj) => (o.spec.suspend = false)],
        ['labels', (o: Obj) => (o.metadata.labels = { team: 'a' })],
      ] as const) {
        const out = await tj.update(ns, 'negative', change);
        assert.equal(out.allowed, false, `${what} with -1 stored: ${JSON.stringify(out)}`);
        if (!out.allowed) {
          assert.equal(out.refusal.code, 422, what);
          assert.match(out.refusal.message, scaleCheck, what);
        }
      }
      const toNegative = await tj.update(ns, 'negative', (o) => (o.spec.trainer.numNodes = -2));
      assert.equal(toNegative.allowed, false);
      if (!toNegative.allowed) {
        assert.equal(toNegative.refusal.code, 422);
        assert.match(toNegative.refusal.message, /numNodes may only change to 0 or more/);
      }
      // The way out docs/admission.md gives: one update that is suspended and sets a count.
      assert.equal(
        (await tj.update(ns, 'negative', (o) => (o.spec.trainer.numNodes = 2))).allowed,
        true,
        'from -1 to 2 while suspended',
      );
      assert.equal(
        (await tj.update(ns, 'negative', (o) => (o.metadata.labels = { team: 'a' }))).allowed,
        true,
        'other updates go through again',
      );

      // Finished: the conditions as Trainer v2.3.0 writes them (its status subresource).
      const objects = cp.kubeConfig.makeApiClient(CustomObjectsApi);
      const finish = async (name: string, type: string, reason: string) => {
        assert.equal((await tj.create(trainJobObject(name, ns))).allowed, true);
        const stored = await tj.get(ns, name);
        stored.status = {
          conditions: [{ type, status: 'True', reason, message: reason, lastTransitionTime: '2026-11-30T08:00:00Z' }],
        };
        await objects.replaceNamespacedCustomObjectStatus({
          group: 'trainer.kubeflow.org',
          version: 'v1alpha1',
          plural: 'trainjobs',
          namespace: ns,
          name,
          body: stored,
        });
      };
      await finish('done', 'Complete', 'JobSetCompleted');
      await finish('deadline', 'Failed', 'DeadlineExceeded');
      await finish('crashed', 'Failed', 'BackoffLimitExceeded');
      for (const name of ['done', 'deadline']) {
        const out = await tj.update(ns, name, (o) => (o.spec.trainer.numNodes = 2));
        assert.equal(out.allowed, false, name);
        if (out.allowed) continue;
        // The CRD's own rule refuses first (the webhook would say the same as 403): 422 with a Forbidden cause.
        assert.equal(out.refusal.code, 422, name);
        assert.deepEqual(
          out.refusal.causes.map((c) => `${c.field} ${c.reason}`),
          ['spec.trainer.numNodes FieldValueForbidden'],
          name,
        );
        assert.match(
          out.refusal.message,
          /numNodes may not change once the TrainJob has finished .*Trainer never reconciles it again/,
          name,
        );
        assert.equal(
          (await tj.update(ns, name, (o) => (o.metadata.labels = { kept: 'yes' }))).allowed,
          true,
          `${name}: other updates still go through`,
        );
      }
      // Failed otherwise: v2.3.0 reconciles it again (main keeps Failed, #3891: crd-patch-lines.test.ts).
      const v230Line = detectTrainerLine(v230).line;
      assert.equal(v230Line.id, 'v2.3.0');
      const crashed = await tj.update(ns, 'crashed', (o) => (o.spec.trainer.numNodes = 2));
      assert.equal(crashed.allowed, !v230Line.failedIsTerminal, `Failed otherwise, under ${v230Line.label}`);
      if (!crashed.allowed)
        assert.match(
          crashed.refusal.message,
          /numNodes may not change once the TrainJob has finished \(condition Complete or Failed\)/,
        );
      await applyCrd(patched);
    });

    // serve's --kubeconfig with a user that impersonates: the API server authorizes the impersonated
    // identity, user and groups (the admin's client certificate may read anything). In-process
    // connectCluster + readCrd, serve's own start-up read, on both paths (direct, and client-node
    // for an exec user).
    describe('10. serve --kubeconfig with as/as-groups reads the CRD as the impersonated identity', () => {
      const sa = `system:serviceaccount:${ns}:no-crd-rights`;
      let admin: Obj;
      const kubeconfigAs = async (name: string, user: Obj) => {
        const doc = structuredClone(admin) as { users: { user: Obj }[] };
        doc.users[0].user = user;
        const file = path.join(await cp.tempDir('impersonation'), `${name}.kubeconfig`);
        await writeFile(file, stringify(doc), { mode: 0o600 });
        return file;
      };
      const readAs = async (file: string) => {
        const connection = await connectCluster({ mode: 'kubeconfig', path: file });
        try {
          return { crd: (await readCrd(connection!.client)) as Obj, via: connection!.via };
        } catch (err) {
          return { error: describeError(err), via: connection!.via };
        }
      };
      before(async () => {
        admin = parse(await readFile(cp.kubeconfigPath, 'utf8')) as Obj;
        await cp.applyYaml(
          stringify({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'no-crd-rights', namespace: ns } }) +
            '---\n' +
            stringify({
              apiVersion: 'rbac.authorization.k8s.io/v1',
              kind: 'ClusterRole',
              metadata: { name: 'tjw-crd-reader' },
              rules: [
                { apiGroups: ['apiextensions.k8s.io'], resources: ['customresourcedefinitions'], verbs: ['get'] },
              ],
            }) +
            '---\n' +
            stringify({
              apiVersion: 'rbac.authorization.k8s.io/v1',
              kind: 'ClusterRoleBinding',
              metadata: { name: 'tjw-crd-readers' },
              roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'tjw-crd-reader' },
              subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'tjw-crd-readers' }],
            }),
        );
      });
      it('the admin certificate with as: a ServiceAccount without the right is refused, the 403 naming it; with as-groups of a group RBAC lets read, the read succeeds', async () => {
        const adminUser = (admin as { users: { user: Obj }[] }).users[0].user;
        const asSa = await readAs(await kubeconfigAs('as-sa', { ...adminUser, as: sa }));
        assert.equal(asSa.via, 'direct');
        assert.equal(
          asSa.error,
          `HTTP 403: customresourcedefinitions.apiextensions.k8s.io "trainjobs.trainer.kubeflow.org" is forbidden: User "${sa}" cannot get resource "customresourcedefinitions" in API group "apiextensions.k8s.io" at the cluster scope`,
        );
        const withGroup = await readAs(
          await kubeconfigAs('as-sa-group', { ...adminUser, as: sa, 'as-groups': ['tjw-crd-readers'] }),
        );
        assert.equal(withGroup.error, undefined);
        assert.equal((withGroup.crd?.metadata as Obj | undefined)?.name, 'trainjobs.trainer.kubeflow.org');
      });
      it('an exec user (client-node path) with as and as-groups: the same refusal and the same read', async () => {
        const adminUser = (admin as { users: { user: Obj }[] }).users[0].user;
        const dir = await cp.tempDir('exec-plugin');
        const credential = path.join(dir, 'credential.json');
        const pem = (field: string) => Buffer.from(adminUser[field] as string, 'base64').toString('utf8');
        await writeFile(
          credential,
          JSON.stringify({
            apiVersion: 'client.authentication.k8s.io/v1',
            kind: 'ExecCredential',
            status: { clientCertificateData: pem('client-certificate-data'), clientKeyData: pem('client-key-data') },
          }),
          { mode: 0o600 },
        );
        const plugin = path.join(dir, 'plugin.sh');
        await writeFile(plugin, `#!/bin/sh\nexec cat '${credential}'\n`);
        await chmod(plugin, 0o755);
        const exec = { apiVersion: 'client.authentication.k8s.io/v1', command: plugin, interactiveMode: 'Never' };
        const asSa = await readAs(await kubeconfigAs('exec-as-sa', { exec, as: sa }));
        assert.match(asSa.via, /^client-node \(user "e2e-admin" has exec\)$/);
        assert.match(
          asSa.error ?? '',
          new RegExp(`^HTTP 403: .* User "${sa}" cannot get resource "customresourcedefinitions"`),
        );
        const withGroup = await readAs(
          await kubeconfigAs('exec-as-sa-group', { exec, as: sa, 'as-groups': ['tjw-crd-readers'] }),
        );
        assert.equal(withGroup.error, undefined);
        assert.equal((withGroup.crd?.metadata as Obj | undefined)?.name, 'trainjobs.trainer.kubeflow.org');
      });
    });

    it("11. in the cluster the webhook checks the table alone: what the API server admits and this port's CEL would refuse is admitted, and no whole-object check ran in this suite", async () => {
      // A rule where cel-go and this port really differ: cel-go's lowerAscii lowers ASCII letters
      // only, this port's every letter. So the API server admits an image with an upper-case É, and a
      // webhook that checked the CRD's rules again would refuse it.
      const crd = structuredClone(patched);
      const image = crd.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.trainer.properties.image;
      image['x-kubernetes-validations'] = [{ rule: 'self.lowerAscii() == self', message: 'image must be lower case' }];
      await applyCrd(crd);
      const rv = Number(
        (
          await cp.kubectl([
            'get',
            'crd',
            'trainjobs.trainer.kubeflow.org',
            '-o',
            'jsonpath={.metadata.resourceVersion}',
          ])
        ).stdout,
      );
      await waitFor('webhook adopted the CRD with the image rule', () =>
        wh.logLines().some((l) => l.msg === 'TrainJob CRD changed' && Number(l.resourceVersion) >= rv),
      );
      const withImage = (name: string, image: string) => {
        const o = trainJobObject(name, ns);
        o.spec.trainer.image = image;
        return o;
      };
      const byCrd = await tj.create(withImage('upper-image', 'ghcr.io/acme/TRAIN:1'));
      assert.equal(byCrd.allowed, false, 'the API server runs the rule');
      if (!byCrd.allowed)
        assert.match(byCrd.refusal.message, /spec\.trainer\.image: Invalid value: .*image must be lower case/);

      const creates = () => wh.counter('trainjob_webhook_requests_total', /webhook="validate",operation="CREATE"/);
      const before = await creates();
      const accented = await tj.create(withImage('accented-image', 'ghcr.io/acme/trainÉ:1'));
      assert.equal(accented.allowed, true, JSON.stringify(accented));
      assert.equal(await creates(), before + 1, 'the webhook was called and admitted it');
      const scaled = await tj.update(ns, 'accented-image', (o) => (o.spec.trainer.numNodes = 2));
      assert.equal(scaled.allowed, true, JSON.stringify(scaled));

      const metrics = (await cp.kubectl(['get', '--raw', '/metrics'])).stdout; // the API server's: it called the webhook
      assert.match(metrics, /apiserver_admission_webhook_request_total\{.*name="vtrainjob/);
      assert.ok((await validateUpdates()) > 0);
      const exported = await fetch(`http://127.0.0.1:${wh.opsPort}/metrics`).then((r) => r.text());
      assert.match(
        exported,
        /^trainjob_webhook_whole_object_checks_total 0$/m,
        'every decision in this suite: the table alone',
      );
      await applyCrd(patched);
    });

    it("7. kubectl is within the API server's skew (built from the same module)", async () => {
      const v = JSON.parse((await cp.kubectl(['version', '-o', 'json'])).stdout);
      assert.equal(v.clientVersion.minor.replace('+', ''), v.serverVersion.minor.replace('+', ''));
    });
  },
);
