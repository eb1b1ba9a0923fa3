// Smoke suite for the end-to-end harness: the real control plane does what the later suites
// rely on (Job controller, garbage collector, kubectl within skew), and, where they could be
// built, the real upstream JobSet and Trainer controllers run beside it.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { BatchV1Api, CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import {
  allUpstreamCrds,
  controlPlaneAvailability,
  readVersions,
  startControlPlane,
  startUpstreamControllers,
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

describe('real control plane', { skip: controlPlane.available ? false : controlPlane.reason }, () => {
  let cp: ControlPlane;
  const ns = 'smoke';

  before(async () => {
    cp = await startControlPlane({ crds: allUpstreamCrds });
    await cp.kubectl(['create', 'namespace', ns]);
  });
  after(async () => {
    await cp?.stop();
  });

  it('serves the built version, and kubectl is of the same minor', async () => {
    const { stdout } = await cp.kubectl(['version', '-o', 'json']);
    const v = JSON.parse(stdout);
    assert.equal(v.serverVersion.gitVersion, readVersions().k8s);
    assert.equal(minorOf(v.clientVersion.gitVersion), minorOf(v.serverVersion.gitVersion));
  });

  it('has the upstream CRDs Established', async () => {
    const { stdout } = await cp.kubectl(['get', 'crd', '-o', 'name']);
    for (const crd of ['jobsets.jobset.x-k8s.io', 'trainjobs.trainer.kubeflow.org', 'trainingruntimes.trainer.kubeflow.org', 'clustertrainingruntimes.trainer.kubeflow.org']) {
      assert.match(stdout, new RegExp(`customresourcedefinition.apiextensions.k8s.io/${crd.replaceAll('.', '\\.')}`));
    }
  });

  it('authorizes with RBAC: a restricted identity is refused until bound', async () => {
    const alice = await cp.makeUserKubeconfig('alice', ['e2e:readers']);
    const denied = await cp.kubectl(['get', 'pods', '-n', ns], { kubeconfig: alice.path, check: false });
    assert.notEqual(denied.code, 0);
    assert.match(denied.stderr, /User "alice" cannot list resource "pods"/);
    await cp.kubectl(['create', 'role', 'pod-reader', '-n', ns, '--verb=list', '--resource=pods']);
    await cp.kubectl(['create', 'rolebinding', 'readers', '-n', ns, '--role=pod-reader', '--group=e2e:readers']);
    const core = alice.kubeConfig.makeApiClient(CoreV1Api);
    await waitFor('alice may list pods', async () => (await core.listNamespacedPod({ namespace: ns }), true));
  });

  it('runs the Job controller (a Job gets a pod, which the scheduler binds and KWOK runs) and the garbage collector (a foreground delete finishes)', async () => {
    const batch = cp.kubeConfig.makeApiClient(BatchV1Api);
    const core = cp.kubeConfig.makeApiClient(CoreV1Api);
    await batch.createNamespacedJob({
      namespace: ns,
      body: {
        metadata: { name: 'one' },
        spec: {
          parallelism: 1,
          template: { spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }] } },
        },
      },
    });
    const pods = await waitFor('a pod of Job one', async () => {
      const list = await core.listNamespacedPod({ namespace: ns, labelSelector: 'job-name=one' });
      return list.items.length > 0 ? list.items : undefined;
    });
    assert.equal(pods.length, 1);
    // The world's nodes (test/harness/world.ts): the pod is bound and runs.
    const running = await waitFor('the pod Running', async () => {
      const pod = await core.readNamespacedPod({ namespace: ns, name: pods[0].metadata!.name! });
      return pod.status?.phase === 'Running' ? pod : undefined;
    });
    assert.ok(cp.world?.nodes.includes(running.spec?.nodeName ?? ''), `bound to a world node: ${running.spec?.nodeName}`);

    await batch.deleteNamespacedJob({ name: 'one', namespace: ns, propagationPolicy: 'Foreground' });
    // Foreground: the Job stays (with a deletionTimestamp) until the garbage collector has
    // deleted its pods and removed the foregroundDeletion finalizer.
    await waitFor('Job one to be gone', async () => (await cp.kubectl(['get', 'job', 'one', '-n', ns, '--ignore-not-found', '-o', 'name'])).stdout.trim() === '', { timeoutMs: 60_000 });
    const left = await core.listNamespacedPod({ namespace: ns, labelSelector: 'job-name=one' });
    assert.equal(left.items.length, 0);
  });

  describe('upstream Trainer and JobSet controllers', { skip: controllers.available ? false : controllers.reason }, () => {
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
        namespace: ns,
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
            return (await objects.getNamespacedCustomObject({ group: 'jobset.x-k8s.io', version: 'v1alpha2', namespace: ns, plural: 'jobsets', name: 'tj' })) as any;
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
      assert.deepEqual(env.find((e: any) => e.name === 'PET_NNODES'), { name: 'PET_NNODES', value: '1' });

      // JobSet creates its child Jobs even while suspended (suspended Jobs).
      const batch = cp.kubeConfig.makeApiClient(BatchV1Api);
      const jobs = await waitFor(
        "JobSet tj's Jobs",
        async () => {
          const list = await batch.listNamespacedJob({ namespace: ns, labelSelector: 'jobset.sigs.k8s.io/jobset-name=tj' });
          return list.items.length > 0 ? list.items : undefined;
        },
        { timeoutMs: 60_000, process: upstream.jobset.process },
      );
      assert.ok(jobs.every((j) => j.spec?.suspend === true));
      assert.ok(jobs.some((j) => j.metadata?.name === 'tj-node-0'));
    });
  });
});
