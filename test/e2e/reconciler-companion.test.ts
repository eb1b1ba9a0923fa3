// Issue 4, flows 1-3 and 6-8 in companion mode: the reconciler sidecar beside the real Kubeflow
// Trainer v2.3.0 and JobSet v0.12.0 managers (webhooks registered), the real kube-controller-manager
// (Job controller, garbage collector) in the world where pods run (scheduler, KWOK nodes), the
// project's CRD patch and webhook (serve --handoff to the sidecar), and the sidecar running as the
// project's ServiceAccount with exactly the project's RBAC.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parse } from 'yaml';
import { readFileSync } from 'node:fs';
import {
  controlPlaneAvailability,
  isRunningReady,
  upstreamControllersAvailability,
  upstreamDir,
  waitFor,
  skipUnless,
} from '../harness/index.ts';
import { buildJobSet } from '../../src/rebuild/trainer-jobset/jobset.ts';
import type { TrainJob } from '../../src/api/objects.ts';
import { subsetDiff } from '../rebuild/fixtures.ts';
import type { Sidecar } from '../reconciler/support/sidecar.ts';
import {
  api,
  envValue,
  parallelism,
  rJob,
  inNamespace,
  startWorld,
  startWorldReconciler,
  torchTrainJob,
  type World,
  untilAdmitted,
  withoutWebhook,
} from '../reconciler/support/world.ts';

const skip = skipUnless(controlPlaneAvailability(), upstreamControllersAvailability());

describe('reconciler, companion mode, beside the real Trainer and JobSet controllers', { skip }, () => {
  let w: World;
  let a: ReturnType<typeof api>;
  let sidecar: Sidecar;
  const ns = 'companion';
  const { key, getTj, create, patch } = inNamespace(ns, () => w);
  const generation = async (name: string) => (await getTj(name)).metadata.generation;

  before(async () => {
    w = await startWorld({ trainer: true, webhook: true });
    a = api(w.cp);
    await w.cp.kubectl(['create', 'namespace', ns]);
  });
  after(async () => {
    if (process.exitCode && w) process.stderr.write(w.cp.logTails(20));
    await w?.stop();
  });

  it("control: without the sidecar, the webhook refuses a scale for now (503: no reconciler leads); stored anyway (no webhook), scale 1 -> 2 while suspended and resume leave the JobSet suspended at 1 node, Trainer's applies refused", async () => {
    await create(torchTrainJob('control', ns));
    const before = await a.waitJobSet(ns, 'control', 'built with 1 node', (js) => parallelism(js) === 1);
    const forNow = await w.tj.update(ns, 'control', (o) => (o.spec.trainer.numNodes = 2));
    assert.equal(forNow.allowed, false);
    if (!forNow.allowed) {
      assert.equal(forNow.refusal.code, 503);
      assert.match(forNow.refusal.message, /no reconciler leads to carry the rebuild out/);
    }
    await withoutWebhook(w, () =>
      untilAdmitted('numNodes 2 stored', () => patch('control', { spec: { trainer: { numNodes: 2 } } })),
    );
    const refused = await waitFor("Trainer's refused apply", async () =>
      (await a.events(ns, 'control')).find(
        (e) =>
          e.reason === 'TrainJobResourcesCreationFailed' && /vjobset\.kb\.io.*field is immutable/.test(e.message ?? ''),
      ),
    );
    assert.match(refused.message ?? '', /spec\.replicatedJobs: Invalid value/);
    const still = await a.getJobSet(ns, 'control');
    assert.equal(still?.metadata.uid, before.metadata.uid);
    assert.equal(parallelism(still), 1);
    assert.equal(envValue(still, 'PET_NNODES'), '1');
    // Resume: Trainer's apply (unsuspended, 2 nodes) is refused as well (its log says so; its
    // Events are rate-limited by now); nothing runs.
    const trainerLog = () =>
      readFileSync(w.upstream.trainer!.process.logFile, 'utf8')
        .split('\n')
        .filter((l) => l.includes('"name":"control"') && /denied the request.*field is immutable/.test(l)).length;
    const refusals = trainerLog();
    await patch('control', { spec: { suspend: false } });
    await waitFor('another refused apply', () => trainerLog() > refusals);
    await new Promise((r) => setTimeout(r, 2_000));
    const after = await a.getJobSet(ns, 'control');
    assert.deepEqual([after?.metadata.uid, after?.spec?.suspend, parallelism(after)], [before.metadata.uid, true, 1]);
    assert.deepEqual(await a.pods(ns, 'control'), []);
  });

  describe('with the sidecar', () => {
    before(async () => {
      sidecar = await startWorldReconciler(w);
    });

    it('started later, it finds the stuck control TrainJob through its watches: one unsuspended JobSet with 2 nodes', async () => {
      await a.waitJobSet(
        ns,
        'control',
        're-created, running with 2 nodes',
        (j) => parallelism(j) === 2 && envValue(j, 'PET_NNODES') === '2' && j.spec?.suspend === false,
      );
      await waitFor('2 pods', async () => (await a.pods(ns, 'control')).length === 2);
    });

    it('1. scale 1 -> 2 while suspended: the sidecar deletes the stale JobSet, Trainer re-creates it with parallelism 2 and PET_NNODES=2, still suspended; resume runs 2 nodes', async () => {
      await create(torchTrainJob('c1', ns));
      const old = await a.waitJobSet(ns, 'c1', 'built with 1 node', (js) => parallelism(js) === 1);
      // What Trainer built is what this project's standalone build makes (plus JobSet's defaults).
      const runtime = parse(readFileSync(path.join(upstreamDir, 'runtimes/torch_distributed.yaml'), 'utf8'));
      const built = buildJobSet(await getTj('c1'), {
        kind: runtime.kind,
        name: runtime.metadata.name,
        spec: runtime.spec,
      });
      assert.ok(built.ok);
      assert.deepEqual(subsetDiff(built.jobSet.spec, old.spec), []);

      const hintsBefore = await sidecar.metric('trainjob_reconciler_handoff_hints_total', /result="persisted"/);
      await patch('c1', { spec: { trainer: { numNodes: 2 } } });
      const js = await a.waitJobSet(
        ns,
        'c1',
        're-created with 2 nodes',
        (j) => j.metadata.uid !== old.metadata.uid && parallelism(j) === 2,
      );
      assert.equal(rJob(js)?.template?.spec?.completions, 2);
      assert.equal(envValue(js, 'PET_NNODES'), '2');
      assert.equal(js.spec?.suspend, true);
      assert.ok(
        (await sidecar.metric('trainjob_reconciler_handoff_hints_total', /result="persisted"/)) > hintsBefore,
        "the webhook's hint was received and acted on",
      );

      const report = await waitFor('the Rebuilt report', async () => {
        const r = a.report(await getTj('c1'));
        return r?.state === 'Rebuilt' ? r : undefined;
      });
      assert.deepEqual(report, {
        state: 'Rebuilt',
        numNodes: 2,
        replicatedJob: 'node',
        parallelism: { from: 1, to: 2 },
        replacedJobSetUID: old.metadata.uid,
      });
      const reasons = (await a.events(ns, 'c1'))
        .filter((e) => e.source?.component === 'trainjob-webhook-reconciler')
        .map((e) => e.reason);
      assert.deepEqual(reasons.sort(), ['JobSetDeleted', 'JobSetRebuilt']);
      const conditions = (await getTj('c1')).status?.conditions ?? [];
      assert.ok(
        !conditions.some((c) => /rebuild/i.test(`${c.type} ${c.reason}`)),
        'never reported through status.conditions in companion mode',
      );

      await patch('c1', { spec: { suspend: false } });
      const running = await a.waitJobSet(ns, 'c1', 'resumed', (j) => j.spec?.suspend === false);
      assert.equal(running.metadata.uid, js.metadata.uid);
      assert.equal(parallelism(running), 2);
      // The world's scheduler and KWOK nodes run them.
      await waitFor('2 running pods', async () => {
        const p = await a.pods(ns, 'c1');
        return p.length === 2 && p.every(isRunningReady);
      });
    });

    it('2. atomic: resume and scale in one update converges to one unsuspended JobSet with the new count', async () => {
      await create(torchTrainJob('c2', ns));
      const old = await a.waitJobSet(ns, 'c2', 'built with 1 node', (js) => parallelism(js) === 1);
      await patch('c2', { spec: { suspend: false, trainer: { numNodes: 3 } } });
      const js = await a.waitJobSet(
        ns,
        'c2',
        're-created unsuspended with 3 nodes',
        (j) => j.metadata.uid !== old.metadata.uid && parallelism(j) === 3 && j.spec?.suspend === false,
      );
      assert.equal(envValue(js, 'PET_NNODES'), '3');
      await waitFor('3 pods of the new JobSet', async () => (await a.pods(ns, 'c2')).length === 3);
    });

    it('3. a JobSet with a pod still present (Terminating, held by a finalizer) is never deleted; once the pod is gone the rebuild happens', async () => {
      await create(torchTrainJob('c3', ns, { suspend: false }));
      const old = await a.waitJobSet(
        ns,
        'c3',
        'running with 1 node',
        (js) => parallelism(js) === 1 && js.spec?.suspend === false,
      );
      const { podName, release } = await a.holdFirstPod(ns, 'c3');
      await patch('c3', { spec: { suspend: true } });
      await waitFor(
        'the pod Terminating, kept by its finalizer',
        async () => !!(await a.core.readNamespacedPod({ namespace: ns, name: podName })).metadata?.deletionTimestamp,
      );
      await a.waitJobSet(ns, 'c3', 'suspended', (js) => js.spec?.suspend === true);
      // Admitted at once: a pod that still terminates is no reason to refuse (the sidecar waits for it).
      await patch('c3', { spec: { trainer: { numNodes: 2 } } });
      const gen = await generation('c3');
      const waiting = await sidecar.reconciled(key('c3'), (l) => l.generation === gen && l.outcome === 'waiting');
      assert.match(
        String(waiting.detail),
        /(pod of the JobSet still exists \(1 terminating\)|Job c3-node-0 has 1 terminating pod)/,
      );
      assert.equal(a.report(await getTj('c3'))?.state, 'Waiting');
      await new Promise((r) => setTimeout(r, 4_000)); // more than one retry period
      assert.equal((await a.getJobSet(ns, 'c3'))?.metadata.uid, old.metadata.uid, 'not deleted while a pod exists');

      await release();
      const js = await a.waitJobSet(
        ns,
        'c3',
        're-created with 2 nodes',
        (j) => j.metadata.uid !== old.metadata.uid && parallelism(j) === 2,
      );
      assert.equal(js.spec?.suspend, true);
    });

    it('6. a dry-run update is never handed off and changes nothing', async () => {
      await create(torchTrainJob('c6', ns));
      await a.waitJobSet(ns, 'c6', 'built', (js) => parallelism(js) === 1);
      // Let Trainer, JobSet and the sidecar finish with it: two reads 1.5 s apart agree.
      const settled = await waitFor('c6 settled', async () => {
        const first = [
          (await getTj('c6')).metadata.resourceVersion,
          (await a.getJobSet(ns, 'c6'))?.metadata.resourceVersion,
        ];
        await new Promise((r) => setTimeout(r, 1_500));
        const second = [
          (await getTj('c6')).metadata.resourceVersion,
          (await a.getJobSet(ns, 'c6'))?.metadata.resourceVersion,
        ];
        return first.join() === second.join() ? second : undefined;
      });
      const received = await sidecar.metric('trainjob_reconciler_handoff_hints_total', /result="received"/);
      const sent = await w.webhook!.counter('trainjob_webhook_handoff_hints_total');

      await w.cp.kubectl([
        'patch',
        'trainjob',
        'c6',
        '-n',
        ns,
        '--type',
        'merge',
        '--dry-run=server',
        '-p',
        '{"spec":{"trainer":{"numNodes":5}}}',
      ]);
      await waitFor('the webhook decided the dry run', () =>
        w
          .webhook!.logLines()
          .some(
            (l) =>
              l.msg === 'admission' &&
              l.webhook === 'validate' &&
              l.dryRun === true &&
              l.name === 'c6' &&
              l.decision === 'allowed',
          ),
      );
      await new Promise((r) => setTimeout(r, 1_500));
      assert.equal(
        await w.webhook!.counter('trainjob_webhook_handoff_hints_total'),
        sent,
        'the webhook handed nothing on',
      );
      assert.equal(
        await sidecar.metric('trainjob_reconciler_handoff_hints_total', /result="received"/),
        received,
        'the sidecar received nothing',
      );
      const tj = await getTj('c6');
      assert.equal(tj.spec?.trainer?.numNodes, 1);
      assert.deepEqual([tj.metadata.resourceVersion, (await a.getJobSet(ns, 'c6'))?.metadata.resourceVersion], settled);
    });

    describe('7. torchtune-llama3.2-1b and its volumeClaimPolicies workspace', () => {
      const torchtune = (name: string, runtime: string): TrainJob => ({
        apiVersion: 'trainer.kubeflow.org/v1alpha1',
        kind: 'TrainJob',
        metadata: { name, namespace: ns },
        spec: { runtimeRef: { name: runtime }, suspend: true, trainer: { numNodes: 1 } },
      });

      for (const [name, runtime, what] of [
        ['t7p', 'torchtune-llama3.2-1b', 'as published (JobSet defaults whenDeleted to Delete)'],
        ['t7d', 'torchtune-llama3.2-1b-delete', 'with whenDeleted: Delete'],
      ] as const) {
        it(`${what}: JobSet's webhook would refuse the re-creation beside the claim, so the JobSet is not deleted and the claim keeps its uid; the report says why and what to do`, async () => {
          await create(torchtune(name, runtime));
          const old = await a.waitJobSet(ns, name, 'built', (js) => parallelism(js) === 1);
          const claim = await waitFor('the workspace PVC', () =>
            a.pvc(ns, `initializer-${name}`).catch(() => undefined),
          );
          assert.equal(
            claim.metadata?.ownerReferences?.[0]?.uid,
            old.metadata.uid,
            'JobSet v0.12.0 owns the claim (retentionPolicy Delete)',
          );
          // The webhook refuses the change (JobSet would refuse the re-creation); stored anyway, as
          // before this version or without the webhook, the sidecar keeps the JobSet and the claim.
          const refused = await w.tj.update(ns, name, (o) => (o.spec.trainer.numNodes = 2));
          assert.equal(refused.allowed, false);
          if (!refused.allowed) assert.match(refused.refusal.message, /has workspace claims/);
          await withoutWebhook(w, () =>
            untilAdmitted('numNodes 2 stored', () => patch(name, { spec: { trainer: { numNodes: 2 } } })),
          );
          const report = await waitFor('the Blocked report', async () => {
            const r = a.report(await getTj(name));
            return r?.state === 'Blocked' ? r : undefined;
          });
          assert.match(report.reason, new RegExp(`could not be re-created while PVC initializer-${name} exists`));
          assert.match(
            report.reason,
            /vjobset\.kb\.io.*(retentionPolicy must be retain when PVC exists|spec does not match existing PVC)/,
          );
          assert.match(report.reason, /whenDeleted: Retain/);
          const warning = (await a.events(ns, name)).find((e) => e.reason === 'JobSetRebuildBlocked');
          assert.equal(warning?.type, 'Warning');
          const js = await a.getJobSet(ns, name);
          assert.equal(js?.metadata.uid, old.metadata.uid);
          assert.equal((await a.pvc(ns, `initializer-${name}`)).metadata?.uid, claim.metadata?.uid);
          if (name !== 't7d') return;
          // Control: what a plain delete would do. The garbage collector takes the claim with the
          // JobSet, and Trainer's re-created JobSet gets a new, empty one.
          await w.cp.kubectl(['delete', 'jobset', name, '-n', ns, '--cascade=foreground', '--wait=false']);
          const fresh = await waitFor('a new claim', async () => {
            const p = await a.pvc(ns, `initializer-${name}`).catch(() => undefined);
            return p && p.metadata?.uid !== claim.metadata?.uid ? p : undefined;
          });
          assert.notEqual(fresh.metadata?.uid, claim.metadata?.uid, 'the workspace (and its data) would be gone');
        });
      }

      it("with whenDeleted: Retain and the claim's spec: the claim is bound (KWOK provisions it), so its spec (volumeName, storageClassName) no longer equals the template and JobSet's webhook would refuse the re-creation: Blocked, JobSet and claim kept", async () => {
        await create(torchtune('t7r', 'torchtune-llama3.2-1b-retain'));
        const old = await a.waitJobSet(ns, 't7r', 'built', (js) => parallelism(js) === 1);
        const claim = await waitFor('the workspace PVC bound', async () => {
          const c = await a.pvc(ns, 'initializer-t7r').catch(() => undefined);
          return c?.status?.phase === 'Bound' ? c : undefined;
        });
        assert.ok(claim.spec?.volumeName, 'bound to a volume');
        await withoutWebhook(w, () =>
          untilAdmitted('numNodes 2 stored', () => patch('t7r', { spec: { trainer: { numNodes: 2 } } })),
        );
        const report = await waitFor('the Blocked report', async () => {
          const r = a.report(await getTj('t7r'));
          return r?.state === 'Blocked' ? r : undefined;
        });
        assert.match(report.reason, /could not be re-created while PVC initializer-t7r exists/);
        assert.match(report.reason, /vjobset\.kb\.io.*spec does not match existing PVC/);
        assert.equal((await a.getJobSet(ns, 't7r'))?.metadata.uid, old.metadata.uid);
        assert.equal((await a.pvc(ns, 'initializer-t7r')).metadata?.uid, claim.metadata?.uid);
      });
    });

    it('8a. a TrainJob with managedBy kueue.x-k8s.io/multikueue is left alone', async () => {
      const tj = await create(torchTrainJob('mk', ns, { managedBy: 'kueue.x-k8s.io/multikueue' }));
      // Trainer does not build JobSets for it; one is put in place as MultiKueue's would be.
      await w.cp.applyYaml(
        JSON.stringify({
          apiVersion: 'jobset.x-k8s.io/v1alpha2',
          kind: 'JobSet',
          metadata: {
            name: 'mk',
            namespace: ns,
            ownerReferences: [
              {
                apiVersion: 'trainer.kubeflow.org/v1alpha1',
                kind: 'TrainJob',
                name: 'mk',
                uid: tj.metadata.uid,
                controller: true,
                blockOwnerDeletion: true,
              },
            ],
          },
          spec: {
            suspend: true,
            replicatedJobs: [
              {
                name: 'node',
                replicas: 1,
                template: {
                  metadata: { labels: { 'trainer.kubeflow.org/trainjob-ancestor-step': 'trainer' } },
                  spec: {
                    parallelism: 1,
                    completions: 1,
                    template: {
                      spec: {
                        restartPolicy: 'OnFailure',
                        containers: [
                          { name: 'node', image: 'ghcr.io/acme/train:1', env: [{ name: 'PET_NNODES', value: '1' }] },
                        ],
                      },
                    },
                  },
                },
              },
            ],
          },
        }) + '\n',
      );
      const old = await a.waitJobSet(ns, 'mk', 'present', () => true);
      await patch('mk', { spec: { trainer: { numNodes: 2 } } });
      const gen = await generation('mk');
      await waitFor('the sidecar looked and left it alone', () =>
        sidecar
          .logLines()
          .some((l) => l.msg === 'left alone' && l.trainJob === key('mk') && /multikueue/.test(String(l.reason))),
      );
      const js = await a.getJobSet(ns, 'mk');
      assert.equal(js?.metadata.uid, old.metadata.uid);
      assert.equal(parallelism(js), 1);
      assert.equal(a.report(await getTj('mk')), undefined);
      assert.equal(gen, 2);
    });

    it('8b. MPI (deepspeed-distributed): 1 -> 2 moves only the hostfile and is not rebuilt; 2 -> 3 changes the node job and is', async () => {
      const mpi: TrainJob = {
        apiVersion: 'trainer.kubeflow.org/v1alpha1',
        kind: 'TrainJob',
        metadata: { name: 'm8', namespace: ns },
        spec: { runtimeRef: { name: 'deepspeed-distributed' }, suspend: true, trainer: { numNodes: 1 } },
      };
      await create(mpi);
      const first = await a.waitJobSet(ns, 'm8', 'built', (js) => parallelism(js) === 1);
      await patch('m8', { spec: { trainer: { numNodes: 2 } } });
      const gen2 = await generation('m8');
      const current = await sidecar.reconciled(key('m8'), (l) => l.generation === gen2);
      assert.equal(current.outcome, 'current');
      await new Promise((r) => setTimeout(r, 2_000));
      assert.equal((await a.getJobSet(ns, 'm8'))?.metadata.uid, first.metadata.uid, 'not rebuilt');

      await patch('m8', { spec: { trainer: { numNodes: 3 } } });
      const js = await a.waitJobSet(
        ns,
        'm8',
        're-created with node parallelism 2',
        (j) => j.metadata.uid !== first.metadata.uid && parallelism(j) === 2,
      );
      assert.equal(parallelism(js, 'launcher'), 1);
      const hostfile = await waitFor("Trainer's hostfile with 3 hosts", async () => {
        const cm = await a.core.readNamespacedConfigMap({ namespace: ns, name: 'm8-mpi-hostfile' });
        return (cm.data?.hostfile ?? '').trim().split('\n').length === 3 ? cm.data?.hostfile : undefined;
      });
      assert.match(hostfile ?? '', /m8-node-0-1\.m8 slots=1/);
    });

    it('9. suspend and scale in one update of a running TrainJob: Trainer cannot suspend the stale JobSet, so the sidecar suspends it (spec.suspend alone), then it is rebuilt with 2 nodes, suspended; resume runs 2 nodes', async () => {
      // Its pod runs: the webhook admits the change all the same (the sidecar waits for the pod).
      const gns = 'companion-gap';
      await w.cp.kubectl(['create', 'namespace', gns]);
      const gtj = async () => (await w.tj.get(gns, 'g9')) as TrainJob;
      await create(torchTrainJob('g9', gns, { suspend: false }));
      const old = await a.waitJobSet(
        gns,
        'g9',
        'running with 1 node',
        (js) => parallelism(js) === 1 && js.spec?.suspend === false,
      );
      await waitFor('its pod running', async () =>
        (await a.pods(gns, 'g9')).some((x) => x.status?.phase === 'Running'),
      );

      await a.mergePatchTrainJob(gns, 'g9', { spec: { suspend: true, trainer: { numNodes: 2 } } });
      const js = await a.waitJobSet(
        gns,
        'g9',
        're-created with 2 nodes, suspended',
        (j) => j.metadata.uid !== old.metadata.uid && parallelism(j) === 2,
        90_000,
      );
      assert.equal(envValue(js, 'PET_NNODES'), '2');
      assert.equal(rJob(js)?.template?.spec?.completions, 2);
      assert.equal(js.spec?.suspend, true);
      const report = await waitFor('the Rebuilt report', async () => {
        const r = a.report(await gtj());
        return r?.state === 'Rebuilt' ? r : undefined;
      });
      assert.deepEqual(report, {
        state: 'Rebuilt',
        numNodes: 2,
        replicatedJob: 'node',
        parallelism: { from: 1, to: 2 },
        replacedJobSetUID: old.metadata.uid,
      });
      // The Event follows the report: wait for it.
      const ours = await waitFor("the sidecar's JobSetRebuilt Event", async () => {
        const e = (await a.events(gns, 'g9')).filter((x) => x.source?.component === 'trainjob-webhook-reconciler');
        return e.some((x) => x.reason === 'JobSetRebuilt') ? e : undefined;
      });
      assert.ok(
        ours.some((e) => e.reason === 'JobSetSuspended' && /so that it can be rebuilt/.test(e.message ?? '')),
        JSON.stringify(ours.map((e) => e.reason)),
      );
      assert.ok(ours.some((e) => e.reason === 'JobSetDeleted'));
      assert.ok(ours.some((e) => e.reason === 'JobSetRebuilt'));
      assert.ok(
        sidecar
          .logLines()
          .some(
            (l) => l.trainJob === 'companion-gap/g9' && Array.isArray(l.steps) && l.steps.includes('suspend-jobset'),
          ),
        'the sidecar took the suspend step',
      );

      await a.mergePatchTrainJob(gns, 'g9', { spec: { suspend: false } });
      const running = await a.waitJobSet(gns, 'g9', 'resumed', (j) => j.spec?.suspend === false);
      assert.deepEqual(
        [running.metadata.uid, parallelism(running), envValue(running, 'PET_NNODES')],
        [js.metadata.uid, 2, '2'],
      );
      await waitFor('2 pods of the new JobSet', async () => (await a.pods(gns, 'g9')).length === 2);
    });

    it("its identity needed no more than the project's RBAC, and nothing failed for want of it", () => {
      const forbidden = sidecar.logLines().filter((l) => /HTTP 403/.test(String(l.error ?? '')));
      assert.deepEqual(forbidden, []);
    });
  });
});
