// The world pods run in (test/harness/world.ts, kwok/stages.yaml): the real kube-scheduler binds
// pods to KWOK's fake Nodes, KWOK plays their kubelets with our Stages, and kube-controller-
// manager's Job, pod GC and PV controllers do the rest. Each case proves one promise the other
// suites rely on. On the same control plane, while the lost node's quarantine runs, the harness's
// smoke cases: the real control plane does what the later suites rely on (Job controller, garbage
// collector, kubectl within skew, RBAC) and, where they could be built, the real upstream JobSet
// and Trainer controllers run beside it.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import path from 'node:path';
import { BatchV1Api, CoreV1Api, CustomObjectsApi, type V1Job, type V1Pod } from '@kubernetes/client-node';
import {
  allUpstreamCrds,
  controlPlaneAvailability,
  isRunningReady,
  pods,
  readVersions,
  startControlPlane,
  startUpstreamControllers,
  STORAGE_CLASS,
  upstreamControllersAvailability,
  upstreamDir,
  waitFor,
  type ControlPlane,
  type UpstreamControllers,
} from '../harness/index.ts';

// Both throw under CI=true when the binaries cannot be had: there the suite must run.
const controlPlane = controlPlaneAvailability();
const controllers = upstreamControllersAvailability();

const minorOf = (gitVersion: string) => /^v?\d+\.(\d+)/.exec(gitVersion)?.[1];

const container = {
  name: 'c',
  image: 'registry.k8s.io/pause:3.10',
  resources: { requests: { cpu: '1', memory: '1Gi', 'nvidia.com/gpu': '1' }, limits: { 'nvidia.com/gpu': '1' } },
};

function job(
  name: string,
  spec: Partial<V1Job['spec']> = {},
  labels: Record<string, string> = {},
  podSpec: Record<string, unknown> = {},
): V1Job {
  return {
    metadata: { name },
    spec: {
      parallelism: 1,
      completions: 1,
      backoffLimit: 3,
      template: { metadata: { labels }, spec: { restartPolicy: 'Never', containers: [container], ...podSpec } },
      ...spec,
    } as V1Job['spec'],
  };
}

describe(
  'the world: scheduler, KWOK nodes and our stages',
  { skip: controlPlane.available ? false : controlPlane.reason },
  () => {
    let cp: ControlPlane;
    let batch: BatchV1Api;
    let core: CoreV1Api;
    let p: ReturnType<typeof pods>;
    const ns = 'world';
    const jobPods = async (name: string) =>
      (await core.listNamespacedPod({ namespace: ns, labelSelector: `job-name=${name}` })).items;
    const readJob = (name: string) => batch.readNamespacedJob({ namespace: ns, name });
    // A node only the `lost` Job's pod tolerates; its pod is held by a finalizer of the test's own,
    // so its end state can be read after the pod GC's delete; then the node is deleted.
    const taint = { key: 'world.trainjob-webhook.test/doomed', value: 'true', effect: 'NoSchedule' as const };
    let lost: Promise<{ ok: true; name: string; failed: V1Pod } | { ok: false; err: unknown }>;
    const loseANode = async () => {
      await cp.world!.addNode({ name: 'doomed', taints: [taint] });
      await batch.createNamespacedJob({
        namespace: ns,
        body: job(
          'lost',
          { backoffLimit: 0 },
          {},
          { nodeSelector: { 'kubernetes.io/hostname': 'doomed' }, tolerations: [{ ...taint, operator: 'Equal' }] },
        ),
      });
      const [pod] = await p.waitRunning(ns, 'job-name=lost', 1);
      assert.equal(pod.spec?.nodeName, 'doomed');
      const name = pod.metadata!.name!;
      await cp.kubectl([
        'patch',
        'pod',
        name,
        '-n',
        ns,
        '--type',
        'json',
        '-p',
        '[{"op":"add","path":"/metadata/finalizers/-","value":"e2e.trainjob-webhook/hold"}]',
      ]);
      await p.deleteNode('doomed');
      return { name, failed: await p.waitPhase(ns, name, ['Failed'], 120_000) };
    };

    before(async () => {
      cp = await startControlPlane({ crds: allUpstreamCrds });
      batch = cp.kubeConfig.makeApiClient(BatchV1Api);
      core = cp.kubeConfig.makeApiClient(CoreV1Api);
      p = pods(cp);
      await cp.kubectl(['create', 'namespace', ns]);
      await waitFor(
        'the default service account',
        async () => (await cp.kubectl(['get', 'serviceaccount', 'default', '-n', ns], { check: false })).code === 0,
      );
      // The lost node's case waits out the pod GC's 40 s quarantine while the other cases run.
      lost = loseANode().then(
        (v) => ({ ok: true as const, ...v }),
        (err: unknown) => ({ ok: false as const, err }),
      );
    });
    after(async () => {
      if (process.exitCode && cp) process.stderr.write(cp.logTails(20));
      await cp?.stop();
    });

    it('has Ready nodes with CPU, memory and nvidia.com/gpu, untainted', async () => {
      const nodes = (await core.listNode()).items.filter((n) => cp.world?.nodes.includes(n.metadata?.name ?? ''));
      assert.deepEqual(nodes.map((n) => n.metadata?.name).sort(), cp.world?.nodes.slice().sort());
      for (const n of nodes) {
        assert.equal(n.status?.conditions?.find((c) => c.type === 'Ready')?.status, 'True', n.metadata?.name);
        assert.equal(n.status?.allocatable?.['nvidia.com/gpu'], '8');
        assert.ok(n.status?.allocatable?.cpu && n.status.allocatable.memory);
        assert.deepEqual(n.spec?.taints ?? [], []);
      }
    });

    it("a Job's pods are scheduled by the real scheduler and run until told the training finished; the Job completes", async () => {
      await batch.createNamespacedJob({ namespace: ns, body: job('run', { parallelism: 2, completions: 2 }) });
      const running = await p.waitRunning(ns, 'job-name=run', 2);
      for (const pod of running) {
        assert.ok(cp.world?.nodes.includes(pod.spec?.nodeName ?? ''), `bound to a world node: ${pod.spec?.nodeName}`);
        assert.ok(pod.status?.conditions?.some((c) => c.type === 'PodScheduled' && c.status === 'True'));
        assert.ok(pod.status?.podIP);
      }
      // Training pods run until a test ends them: still running after the stages' delays.
      await new Promise((r) => setTimeout(r, 3_000));
      assert.deepEqual((await jobPods('run')).map(isRunningReady), [true, true]);
      await p.endTraining(
        ns,
        running.map((x) => x.metadata!.name!),
        'Succeeded',
      );
      const done = await waitFor('Job run Complete', async () => {
        const j = await readJob('run');
        return j.status?.conditions?.some((c) => c.type === 'Complete' && c.status === 'True') ? j : undefined;
      });
      assert.equal(done.status?.succeeded, 2);
    });

    it('a training told it failed fails its pod (exit 1)', async () => {
      await batch.createNamespacedJob({ namespace: ns, body: job('fail', { backoffLimit: 0 }) });
      const [pod] = await p.waitRunning(ns, 'job-name=fail', 1);
      await p.endTraining(ns, [pod.metadata!.name!], 'Failed');
      const j = await waitFor('Job fail Failed', async () => {
        const x = await readJob('fail');
        return x.status?.conditions?.some((c) => c.type === 'Failed' && c.status === 'True') ? x : undefined;
      });
      assert.equal(j.status?.failed, 1);
      const [after] = await jobPods('fail');
      assert.equal(after?.status?.phase, 'Failed');
      assert.equal(after?.status?.containerStatuses?.[0]?.state?.terminated?.exitCode, 1);
    });

    it('an initializer pod (trainer.kubeflow.org/trainjob-ancestor-step, or a JobSet pod of that replicated job) succeeds by itself; its Job completes', async () => {
      // Trainer labels the initializer Jobs with the step; their pods carry JobSet's replicated-job name.
      await batch.createNamespacedJob({
        namespace: ns,
        body: job('dataset-initializer', {}, { 'trainer.kubeflow.org/trainjob-ancestor-step': 'dataset-initializer' }),
      });
      await batch.createNamespacedJob({
        namespace: ns,
        body: job('model-initializer', {}, { 'jobset.sigs.k8s.io/replicatedjob-name': 'model-initializer' }),
      });
      for (const step of ['dataset-initializer', 'model-initializer']) {
        await waitFor(`Job ${step} Complete`, async () =>
          (await readJob(step)).status?.conditions?.some((c) => c.type === 'Complete' && c.status === 'True'),
        );
        const [pod] = await jobPods(step);
        assert.equal(pod.status?.phase, 'Succeeded');
        assert.equal(pod.status?.containerStatuses?.[0]?.state?.terminated?.reason, 'Completed');
      }
    });

    it('a deleted pod stays Terminating (still Running) for the grace, then stops (Failed, exit 143) and is gone', async () => {
      await core.createNamespacedPod({
        namespace: ns,
        body: { metadata: { name: 'bare' }, spec: { containers: [container] } },
      });
      await waitFor('pod bare running', async () =>
        isRunningReady(await core.readNamespacedPod({ namespace: ns, name: 'bare' })),
      );
      // A longer grace than the default, so the Terminating state is seen on a busy machine too.
      await p.terminationSeconds(ns, ['bare'], 6);
      await core.deleteNamespacedPod({ namespace: ns, name: 'bare' });
      const seen: string[] = [];
      let last: V1Pod | undefined;
      await waitFor(
        'pod bare gone',
        async () => {
          try {
            last = await core.readNamespacedPod({ namespace: ns, name: 'bare' });
            const state = `${last.metadata?.deletionTimestamp ? 'Terminating' : 'Live'}/${last.status?.phase}`;
            if (seen.at(-1) !== state) seen.push(state);
            return false;
          } catch (err) {
            if ((err as { code?: number }).code === 404) return true;
            throw err;
          }
        },
        { intervalMs: 100 },
      );
      assert.equal(seen[0], 'Terminating/Running', `states seen: ${seen.join(' -> ')}`);
      assert.ok(
        seen.every((s) => s.startsWith('Terminating/')),
        seen.join(' -> '),
      );
    });

    it('a terminating pod holding the job-tracking finalizer reaches a terminal phase (a podFailurePolicy sees exit 143), so the Job controller lets it go', async () => {
      await batch.createNamespacedJob({
        namespace: ns,
        body: job('pfp', {
          backoffLimit: 3,
          podFailurePolicy: { rules: [{ action: 'Count', onExitCodes: { operator: 'In', values: [143] } }] },
        }),
      });
      const [pod] = await p.waitRunning(ns, 'job-name=pfp', 1);
      assert.ok(
        pod.metadata?.finalizers?.includes('batch.kubernetes.io/job-tracking'),
        'the Job controller tracks it with its finalizer',
      );
      await core.deleteNamespacedPod({ namespace: ns, name: pod.metadata!.name! });
      // With a podFailurePolicy the Job controller counts a deleted pod only once it is terminal.
      const j = await waitFor('the deleted pod counted as failed', async () => {
        const x = await readJob('pfp');
        return (x.status?.failed ?? 0) >= 1 ? x : undefined;
      });
      assert.equal(j.status?.failed, 1);
      assert.notEqual(
        j.status?.conditions?.find((c) => c.type === 'Failed')?.status,
        'True',
        'counted by the rule (Count), not failing the Job',
      );
      await p.waitGone(ns, pod.metadata!.name!);
    });

    it('a pod with a claim of the default StorageClass runs once KWOK has provisioned and bound it', async () => {
      await core.createNamespacedPersistentVolumeClaim({
        namespace: ns,
        body: {
          metadata: { name: 'data' },
          spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
        },
      });
      await core.createNamespacedPod({
        namespace: ns,
        body: {
          metadata: { name: 'claims' },
          spec: {
            containers: [{ ...container, volumeMounts: [{ name: 'd', mountPath: '/data' }] }],
            volumes: [{ name: 'd', persistentVolumeClaim: { claimName: 'data' } }],
          },
        },
      });
      await waitFor('pod claims running', async () =>
        isRunningReady(await core.readNamespacedPod({ namespace: ns, name: 'claims' })),
      );
      const pvc = await core.readNamespacedPersistentVolumeClaim({ namespace: ns, name: 'data' });
      assert.equal(pvc.status?.phase, 'Bound');
      assert.equal(pvc.spec?.storageClassName, STORAGE_CLASS, 'the default class');
    });

    // The harness's smoke cases (they run during the lost node's quarantine).
    describe('real control plane', () => {
      const smoke = 'smoke';
      before(async () => {
        await cp.kubectl(['create', 'namespace', smoke]);
      });

      it('serves the built version, and kubectl is of the same minor', async () => {
        const { stdout } = await cp.kubectl(['version', '-o', 'json']);
        const v = JSON.parse(stdout);
        assert.equal(v.serverVersion.gitVersion, readVersions().k8s);
        assert.equal(minorOf(v.clientVersion.gitVersion), minorOf(v.serverVersion.gitVersion));
      });

      it('has the upstream CRDs Established', async () => {
        const { stdout } = await cp.kubectl(['get', 'crd', '-o', 'name']);
        for (const crd of [
          'jobsets.jobset.x-k8s.io',
          'trainjobs.trainer.kubeflow.org',
          'trainingruntimes.trainer.kubeflow.org',
          'clustertrainingruntimes.trainer.kubeflow.org',
        ]) {
          assert.match(
            stdout,
            new RegExp(`customresourcedefinition.apiextensions.k8s.io/${crd.replaceAll('.', '\\.')}`),
          );
        }
      });

      it('authorizes with RBAC: a restricted identity is refused until bound', async () => {
        const alice = await cp.makeUserKubeconfig('alice', ['e2e:readers']);
        const denied = await cp.kubectl(['get', 'pods', '-n', smoke], { kubeconfig: alice.path, check: false });
        assert.notEqual(denied.code, 0);
        assert.match(denied.stderr, /User "alice" cannot list resource "pods"/);
        await cp.kubectl(['create', 'role', 'pod-reader', '-n', smoke, '--verb=list', '--resource=pods']);
        await cp.kubectl(['create', 'rolebinding', 'readers', '-n', smoke, '--role=pod-reader', '--group=e2e:readers']);
        const core = alice.kubeConfig.makeApiClient(CoreV1Api);
        await waitFor('alice may list pods', async () => (await core.listNamespacedPod({ namespace: smoke }), true));
      });

      it('runs the Job controller (a Job gets a pod, which the scheduler binds and KWOK runs) and the garbage collector (a foreground delete finishes)', async () => {
        const batch = cp.kubeConfig.makeApiClient(BatchV1Api);
        const core = cp.kubeConfig.makeApiClient(CoreV1Api);
        await batch.createNamespacedJob({
          namespace: smoke,
          body: {
            metadata: { name: 'one' },
            spec: {
              parallelism: 1,
              template: {
                spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }] },
              },
            },
          },
        });
        const created = await waitFor('a pod of Job one', async () => {
          const list = await core.listNamespacedPod({ namespace: smoke, labelSelector: 'job-name=one' });
          return list.items.length > 0 ? list.items : undefined;
        });
        assert.equal(created.length, 1);
        // The world's nodes (test/harness/world.ts): the pod is bound and runs.
        const running = await waitFor('the pod Running', async () => {
          const pod = await core.readNamespacedPod({ namespace: smoke, name: created[0].metadata!.name! });
          return pod.status?.phase === 'Running' ? pod : undefined;
        });
        assert.ok(
          cp.world?.nodes.includes(running.spec?.nodeName ?? ''),
          `bound to a world node: ${running.spec?.nodeName}`,
        );

        await batch.deleteNamespacedJob({ name: 'one', namespace: smoke, propagationPolicy: 'Foreground' });
        // Foreground: the Job stays (with a deletionTimestamp) until the garbage collector has
        // deleted its pods and removed the foregroundDeletion finalizer.
        await waitFor(
          'Job one to be gone',
          async () =>
            (await cp.kubectl(['get', 'job', 'one', '-n', smoke, '--ignore-not-found', '-o', 'name'])).stdout.trim() ===
            '',
          { timeoutMs: 60_000 },
        );
        const left = await core.listNamespacedPod({ namespace: smoke, labelSelector: 'job-name=one' });
        assert.equal(left.items.length, 0);
      });

      describe(
        'upstream Trainer and JobSet controllers',
        { skip: controllers.available ? false : controllers.reason },
        () => {
          let upstream: UpstreamControllers;

          before(async () => {
            upstream = await startUpstreamControllers(cp);
            // Goes through Trainer's validating webhook, so it also proves that registration.
            await cp.applyYaml(path.join(upstreamDir, 'runtimes/torch_distributed.yaml'));
          });
          after(async () => {
            await upstream?.stop();
          });

          it('Trainer builds a suspended JobSet for a suspended TrainJob, and JobSet creates its Jobs', async () => {
            const objects = cp.kubeConfig.makeApiClient(CustomObjectsApi);
            await objects.createNamespacedCustomObject({
              group: 'trainer.kubeflow.org',
              version: 'v1alpha1',
              namespace: smoke,
              plural: 'trainjobs',
              body: {
                apiVersion: 'trainer.kubeflow.org/v1alpha1',
                kind: 'TrainJob',
                metadata: { name: 'tj' },
                spec: { suspend: true, runtimeRef: { name: 'torch-distributed' }, trainer: { numNodes: 1 } },
              },
            });
            const jobset = await waitFor(
              'JobSet tj',
              async () => {
                try {
                  return (await objects.getNamespacedCustomObject({
                    group: 'jobset.x-k8s.io',
                    version: 'v1alpha2',
                    namespace: smoke,
                    plural: 'jobsets',
                    name: 'tj',
                  })) as any;
                } catch {
                  return undefined;
                }
              },
              { timeoutMs: 60_000, process: upstream.trainer?.process },
            );
            assert.equal(jobset.spec.suspend, true);
            assert.equal(jobset.metadata.ownerReferences?.[0]?.kind, 'TrainJob');
            const node = jobset.spec.replicatedJobs.find((r: any) => r.name === 'node');
            assert.equal(node.template.spec.parallelism, 1);
            const env = node.template.spec.template.spec.containers.find((c: any) => c.name === 'node').env;
            assert.deepEqual(
              env.find((e: any) => e.name === 'PET_NNODES'),
              { name: 'PET_NNODES', value: '1' },
            );

            // JobSet creates its child Jobs even while suspended (suspended Jobs).
            const batch = cp.kubeConfig.makeApiClient(BatchV1Api);
            const jobs = await waitFor(
              "JobSet tj's Jobs",
              async () => {
                const list = await batch.listNamespacedJob({
                  namespace: smoke,
                  labelSelector: 'jobset.sigs.k8s.io/jobset-name=tj',
                });
                return list.items.length > 0 ? list.items : undefined;
              },
              { timeoutMs: 60_000, process: upstream.jobset.process },
            );
            assert.ok(jobs.every((j) => j.spec?.suspend === true));
            assert.ok(jobs.some((j) => j.metadata?.name === 'tj-node-0'));
          });
        },
      );
    });

    it('a pod on a lost (deleted) node is marked Failed by the pod GC after its quarantine', async () => {
      const out = await lost;
      if (!out.ok) throw out.err;
      const { name, failed } = out;
      const target = failed.status?.conditions?.find((c) => c.type === 'DisruptionTarget');
      assert.equal(target?.reason, 'DeletionByPodGC');
      assert.ok(failed.metadata?.deletionTimestamp, 'and deleted');
      await waitFor('Job lost Failed', async () =>
        (await readJob('lost')).status?.conditions?.some((c) => c.type === 'Failed' && c.status === 'True'),
      );
      await cp.kubectl([
        'patch',
        'pod',
        name,
        '-n',
        ns,
        '--type',
        'json',
        '-p',
        '[{"op":"remove","path":"/metadata/finalizers"}]',
      ]);
      await p.waitGone(ns, name);
    });
  },
);
