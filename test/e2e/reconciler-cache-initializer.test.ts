// A rebuild runs the runtime's initializers again: Trainer v2.3.0's data cache initializer
// (pkg/initializers/dataset/cache.py, vendored unchanged in upstream/trainer-v2.3.0-initializers)
// runs on the host against this world's API server whenever a dataset-initializer pod of the stock
// torch-distributed-with-cache runtime starts, as that pod's ServiceAccount with Trainer's own
// ClusterRole for it (manifests/overlays/data-cache). Its pod is held Running (the runtimePatches
// annotation below keeps KWOK's initializer stage off it) and ends with cache.py's exit code.
// KWOK cannot run LeaderWorkerSet's controller, so the test makes the cache's LeaderWorkerSet
// Available (its status), which is what cache.py waits for.
//
// The behaviour: after a rebuild, the cache initializer's second run leaves a consistent cache
// (its LeaderWorkerSet and the ServiceAccount that LeaderWorkerSet's pods run as both exist). On
// the product without src/rebuild/initializers.ts, the second run gets 409 on the LeaderWorkerSet,
// deletes the ServiceAccount and exits 0.
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { parse, stringify } from 'yaml';
import { PatchStrategy, setHeaderOptions, type V1Pod } from '@kubernetes/client-node';
import {
  controlPlaneAvailability,
  isRunningReady,
  projectRoot,
  upstreamControllersAvailability,
  upstreamDir,
  waitFor,
  type UserKubeconfig,
  skipUnless,
} from '../harness/index.ts';
import { TRAINING_ANNOTATION } from '../harness/pods.ts';
import { startSidecar } from '../reconciler/support/sidecar.ts';
import {
  api,
  inNamespace,
  parallelism,
  RECONCILER_SA,
  startWorld,
  torchTrainJob,
  type World,
} from '../reconciler/support/world.ts';

const skip = skipUnless(controlPlaneAvailability(), upstreamControllersAvailability());

const LWS = { group: 'leaderworkerset.x-k8s.io', version: 'v1', plural: 'leaderworkersets' } as const;
const INITIALIZER_SA = 'kubeflow-trainer-cache-initializer';
const initializers = path.join(upstreamDir, 'trainer-v2.3.0-initializers');

/** The venv with the `kubernetes` package Trainer's image locks (hack/python-venv.sh, cached by version). */
function python(): string {
  return execFileSync('bash', [path.join(projectRoot, 'hack/python-venv.sh')], { encoding: 'utf8' }).trim();
}

/**
 * The stock runtime plus the `initializer` volume and its mount in the dataset-initializer
 * container: Trainer v2.3.0's webhook refuses spec.initializer.dataset without that mount
 * (plugins/jobset/jobset.go Validate), and refuses initializer env in runtimePatches, so the stock
 * runtime alone can never be given a STORAGE_URI (its initializer would fail on the missing env).
 */
function cacheRuntime(): string {
  const doc = parse(readFileSync(path.join(upstreamDir, 'runtimes/torch_distributed_with_cache.yaml'), 'utf8'));
  const pod = doc.spec.template.spec.replicatedJobs[0].template.spec.template.spec;
  pod.volumes = [{ name: 'initializer', emptyDir: {} }];
  pod.containers[0].volumeMounts = [{ name: 'initializer', mountPath: '/workspace' }];
  return stringify(doc);
}

interface InitializerRun {
  pod: string;
  code: number;
  log: string;
}

describe("the data cache initializer's second run after a rebuild, with Trainer's cache.py", { skip }, () => {
  let w: World;
  let a: ReturnType<typeof api>;
  let py: string;
  let initializerKubeconfig: UserKubeconfig;
  const ns = 'cache';
  const { getTj, create, patch } = inNamespace(ns, () => w);
  const runs: InitializerRun[] = [];
  let driving = true;
  let driver: Promise<void> | undefined;

  const getLws = async (name: string) => {
    try {
      return (await a.objects.getNamespacedCustomObject({ ...LWS, namespace: ns, name })) as Record<string, any>;
    } catch (err) {
      if ((err as { code?: number }).code === 404) return undefined;
      throw err;
    }
  };
  const getSa = async (name: string) => {
    try {
      return await a.core.readNamespacedServiceAccount({ namespace: ns, name });
    } catch (err) {
      if ((err as { code?: number }).code === 404) return undefined;
      throw err;
    }
  };

  /** The pod's env as the kubelet resolves it (values, and fieldRefs to its labels). */
  const podEnv = (pod: V1Pod): Record<string, string> => {
    const c = pod.spec?.containers?.find((x) => x.name === 'dataset-initializer');
    const env: Record<string, string> = {};
    for (const e of c?.env ?? []) {
      const field = e.valueFrom?.fieldRef?.fieldPath?.match(/^metadata\.labels\['(.+)'\]$/)?.[1];
      env[e.name] = e.value ?? (field ? (pod.metadata?.labels?.[field] ?? '') : '');
    }
    return env;
  };

  /** Makes the cache's LeaderWorkerSet Available while cache.py runs (LWS's controller would). */
  const makeAvailable = async (name: string, running: () => boolean) => {
    while (running()) {
      const lws = await getLws(name);
      const available = lws?.status?.conditions?.some((c: any) => c.type === 'Available' && c.status === 'True');
      if (lws && !available && !lws.metadata.deletionTimestamp) {
        const status = {
          conditions: [
            {
              type: 'Available',
              status: 'True',
              reason: 'AllGroupsReady',
              message: 'All replicas are ready',
              lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
            },
          ],
        };
        await a.objects.patchNamespacedCustomObjectStatus(
          { ...LWS, namespace: ns, name, body: { status } },
          setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
        );
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  };

  /** Runs cache.py for one started initializer pod, then ends the pod with its exit code. */
  const runInitializer = async (pod: V1Pod): Promise<void> => {
    const env = podEnv(pod);
    let running = true;
    const available = makeAvailable(`${env.TRAIN_JOB_NAME}-cache`, () => running);
    let code = 0;
    let log: string;
    try {
      const out = await promisify(execFile)(py, [path.join(projectRoot, 'test/e2e/support/run-cache-initializer.py')], {
        cwd: initializers,
        timeout: 60_000,
        env: {
          PATH: process.env.PATH ?? '',
          PYTHONPATH: initializers,
          // No __pycache__ under upstream/ (test/repo/vendored.test.ts: every file there is recorded).
          PYTHONDONTWRITEBYTECODE: '1',
          ...env,
          CACHE_INITIALIZER_KUBECONFIG: initializerKubeconfig.path,
          POD_NAMESPACE: ns,
        },
      });
      log = out.stdout + out.stderr;
    } catch (err) {
      const e = err as { code?: number; stdout?: string; stderr?: string };
      code = typeof e.code === 'number' ? e.code : 1;
      log = `${e.stdout ?? ''}${e.stderr ?? ''}`;
    } finally {
      running = false;
      await available;
    }
    const name = pod.metadata!.name!;
    runs.push({ pod: name, code, log });
    await w.cp.kubectl([
      'annotate',
      'pod',
      name,
      '-n',
      ns,
      '--overwrite',
      `${TRAINING_ANNOTATION}=${code === 0 ? 'Succeeded' : 'Failed'}`,
    ]);
  };

  /** Every held dataset-initializer pod that starts is run once, as its kubelet would. */
  const drive = async () => {
    const seen = new Set<string>();
    while (driving) {
      const pods = (
        await a.core.listNamespacedPod({
          namespace: ns,
          labelSelector: 'jobset.sigs.k8s.io/replicatedjob-name=dataset-initializer',
        })
      ).items;
      for (const p of pods.filter((x) => isRunningReady(x) && !seen.has(x.metadata!.uid!))) {
        if (p.metadata?.annotations?.[TRAINING_ANNOTATION] !== 'Held') continue;
        seen.add(p.metadata!.uid!);
        await runInitializer(p);
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  };

  /** The TrainJob of the cache runtime whose initializer pod is held until cache.py has run. */
  const cacheTrainJob = (name: string) =>
    torchTrainJob(name, ns, {
      runtimeRef: { name: 'torch-distributed-with-cache' },
      suspend: false,
      initializer: {
        dataset: {
          storageUri: 'cache://schema/table',
          env: [
            { name: 'IAM_ROLE', value: 'arn:aws:iam::123456789012:role/cache' },
            { name: 'METADATA_LOC', value: 's3://bucket/metadata.json' },
          ],
        },
      },
      // Holds the initializer pod Running until cache.py has run (KWOK's initializer stage skips it).
      runtimePatches: [
        {
          manager: 'e2e.trainjob-webhook/cache',
          trainingRuntimeSpec: {
            template: {
              spec: {
                replicatedJobs: [
                  {
                    name: 'dataset-initializer',
                    template: {
                      spec: {
                        template: {
                          metadata: { annotations: { [TRAINING_ANNOTATION]: 'Held' } },
                        },
                      },
                    },
                  },
                ],
              },
            },
          },
        },
      ],
    });

  before(async () => {
    py = python();
    w = await startWorld({ trainer: true, webhook: true });
    a = api(w.cp);
    await w.cp.kubectl(['create', 'namespace', ns]);
    // The stock runtime, LWS's CRD, Trainer's ClusterRole for the initializer and its namespace
    // RBAC (manifests/overlays/data-cache/namespace-rbac: a ServiceAccount and a RoleBinding).
    await w.cp.applyYaml(path.join(upstreamDir, 'crds/lws-v0.8.0/leaderworkerset.x-k8s.io_leaderworkersets.yaml'));
    await waitFor(
      "LeaderWorkerSet's CRD established",
      async () =>
        (
          await w.cp.kubectl(
            ['wait', '--for=condition=Established', '--timeout=30s', 'crd/leaderworkersets.leaderworkerset.x-k8s.io'],
            { check: false },
          )
        ).code === 0,
    );
    await w.cp.applyYaml(
      [
        cacheRuntime(),
        readFileSync(path.join(initializers, 'cluster_role.yaml'), 'utf8'),
        `apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: ${INITIALIZER_SA}\n  namespace: ${ns}\n`,
        [
          'apiVersion: rbac.authorization.k8s.io/v1',
          'kind: RoleBinding',
          `metadata:\n  name: ${INITIALIZER_SA}\n  namespace: ${ns}`,
          `roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: ${INITIALIZER_SA}`,
          `subjects:\n  - kind: ServiceAccount\n    name: ${INITIALIZER_SA}\n    namespace: ${ns}`,
        ].join('\n'),
        // Not in Trainer v2.3.0's ClusterRole, yet cache.py's first call (without it, cache.py logs
        // "Failed to get TrainJob" and exits 0 having made nothing): what an admin must add.
        [
          'apiVersion: rbac.authorization.k8s.io/v1',
          'kind: Role',
          `metadata:\n  name: cache-initializer-trainjobs\n  namespace: ${ns}`,
          'rules:\n  - apiGroups: ["trainer.kubeflow.org"]\n    resources: ["trainjobs"]\n    verbs: ["get"]',
        ].join('\n'),
        [
          'apiVersion: rbac.authorization.k8s.io/v1',
          'kind: RoleBinding',
          `metadata:\n  name: cache-initializer-trainjobs\n  namespace: ${ns}`,
          'roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: Role\n  name: cache-initializer-trainjobs',
          `subjects:\n  - kind: ServiceAccount\n    name: ${INITIALIZER_SA}\n    namespace: ${ns}`,
        ].join('\n'),
      ].join('\n---\n'),
    );
    initializerKubeconfig = await w.cp.makeUserKubeconfig(`system:serviceaccount:${ns}:${INITIALIZER_SA}`, [
      'system:serviceaccounts',
      `system:serviceaccounts:${ns}`,
    ]);
    await startSidecar(w.cp, {
      name: 'reconciler',
      mode: 'companion',
      kubeconfig: w.reconcilerKubeconfig.path,
      leaseNamespace: RECONCILER_SA.namespace,
      handoffPort: w.handoffPort,
    });
    driver = drive();
  });
  after(async () => {
    driving = false;
    await driver?.catch(() => undefined);
    if (process.exitCode && w) {
      process.stderr.write(w.cp.logTails(20));
      for (const r of runs) process.stderr.write(`--- cache.py in ${r.pod} (exit ${r.code})\n${r.log}\n`);
    }
    await w?.stop();
  });

  it('created, initialized (first run), suspended, scaled 1 -> 2, resumed, initialized again (second run): the LeaderWorkerSet and its ServiceAccount exist and are consistent', async () => {
    const tj = cacheTrainJob('c');
    const created = await create(tj);
    const uid = created.metadata.uid;

    // First run: the cache exists, owned by the TrainJob; training runs on 1 node.
    await waitFor('the first cache.py run', async () => runs.length >= 1, { timeoutMs: 90_000 });
    assert.equal(runs[0].code, 0, runs[0].log);
    const lws1 = await getLws('c-cache');
    const sa1 = await getSa('c-cache');
    assert.ok(lws1 && sa1, runs[0].log);
    assert.equal(lws1.metadata.ownerReferences?.[0]?.uid, uid);
    const old = await a.waitJobSet(ns, 'c', 'built with 1 node, running', (js) => parallelism(js) === 1);
    await waitFor('1 node pod running', async () =>
      (await a.pods(ns, 'c')).some(
        (p) => p.metadata?.labels?.['jobset.sigs.k8s.io/replicatedjob-name'] === 'node' && isRunningReady(p),
      ),
    );

    // Suspend, scale, and wait for the rebuild (the sidecar deletes the stale JobSet, Trainer re-creates it).
    await patch('c', { spec: { suspend: true } });
    await patch('c', { spec: { trainer: { numNodes: 2 } } });
    await a.waitJobSet(
      ns,
      'c',
      're-created with 2 nodes',
      (js) => js.metadata.uid !== old.metadata.uid && parallelism(js) === 2,
      120_000,
    );

    // Resume: the initializer runs again (second run), then training on 2 nodes.
    await patch('c', { spec: { suspend: false } });
    await waitFor('the second cache.py run', async () => runs.length >= 2, { timeoutMs: 90_000 });
    const second = runs[1];
    assert.equal(second.code, 0, second.log);
    assert.doesNotMatch(second.log, /Cache cluster creation failed/, second.log);

    const lws2 = await getLws('c-cache');
    const sa2 = await getSa('c-cache');
    assert.ok(lws2, `the cache's LeaderWorkerSet exists after the second run\n${second.log}`);
    assert.ok(sa2, `the ServiceAccount the cache's pods run as exists after the second run\n${second.log}`);
    // Consistent: the LeaderWorkerSet is the second run's, its pods run as the ServiceAccount that
    // exists, both controlled by this TrainJob; the Service selects the leader's pods.
    assert.notEqual(lws2.metadata.uid, lws1.metadata.uid);
    const templates = lws2.spec.leaderWorkerTemplate;
    assert.equal(templates.leaderTemplate.spec.serviceAccountName, sa2.metadata?.name);
    assert.equal(templates.workerTemplate.spec.serviceAccountName, sa2.metadata?.name);
    for (const o of [lws2.metadata, sa2.metadata]) {
      const owner = o?.ownerReferences?.find((r: { controller?: boolean }) => r.controller);
      assert.equal(owner?.uid, uid);
    }
    assert.equal(sa2.metadata?.annotations?.['eks.amazonaws.com/role-arn'], 'arn:aws:iam::123456789012:role/cache');
    const svc = await a.core.readNamespacedService({ namespace: ns, name: 'c-cache-service' });
    assert.deepEqual(svc.spec?.selector, templates.leaderTemplate.metadata.labels);

    await waitFor(
      '2 node pods running',
      async () =>
        (await a.pods(ns, 'c')).filter(
          (p) => p.metadata?.labels?.['jobset.sigs.k8s.io/replicatedjob-name'] === 'node' && isRunningReady(p),
        ).length === 2,
    );
    // Written on the sidecar's reconcile after the re-creation: waited for, not read once.
    await waitFor('the Rebuilt report', async () => a.report(await getTj('c'))?.state === 'Rebuilt');
  });

  it('a revert the moment the cache is being deleted (suspended, scaled 1 -> 2, set back to 1): the JobSet was already deleted with it, so the initializer runs again on resume and the cache exists', async () => {
    await create(cacheTrainJob('r'));
    const ofR = () => runs.filter((r) => r.pod.startsWith('r-'));
    await waitFor('the first cache.py run of r', async () => ofR().length >= 1, { timeoutMs: 90_000 });
    assert.equal(ofR()[0].code, 0, ofR()[0].log);
    assert.ok((await getLws('r-cache')) && (await getSa('r-cache')));
    await a.waitJobSet(ns, 'r', 'built with 1 node, running', (js) => parallelism(js) === 1);
    // A finalizer stands in for the cache's pods, which a real LeaderWorkerSet waits for when
    // deleted in the foreground (KWOK runs no LeaderWorkerSet controller, so it has none): the
    // LeaderWorkerSet stays, being deleted, until the test lets it go.
    const hold = (finalizers: string[] | null) =>
      a.objects.patchNamespacedCustomObject(
        { ...LWS, namespace: ns, name: 'r-cache', body: { metadata: { finalizers } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
    await hold(['e2e.trainjob-webhook/pods-terminating']);

    await patch('r', { spec: { suspend: true } });
    await patch('r', { spec: { trainer: { numNodes: 2 } } });
    // The user (or settle --revert) sets numNodes back as soon as the rebuild has touched the cache.
    await waitFor(
      'the cache LeaderWorkerSet of the first run being deleted',
      async () => Boolean((await getLws('r-cache'))?.metadata.deletionTimestamp),
      { timeoutMs: 120_000, intervalMs: 50 },
    );
    await patch('r', { spec: { trainer: { numNodes: 1 } } });
    await hold(null);
    await waitFor('the cache LeaderWorkerSet of the first run gone', async () => !(await getLws('r-cache')));
    await patch('r', { spec: { suspend: false } });

    // On the product that deleted the cache first and the JobSet a reconcile later, the revert kept
    // the old JobSet, whose initializer had completed: it never ran again, and the cache stayed gone.
    await waitFor('the second cache.py run of r', async () => ofR().length >= 2, { timeoutMs: 120_000 });
    const second = ofR()[1];
    assert.equal(second.code, 0, second.log);
    assert.doesNotMatch(second.log, /Cache cluster creation failed/, second.log);
    assert.ok(await getLws('r-cache'), `the cache's LeaderWorkerSet exists again\n${second.log}`);
    assert.ok(await getSa('r-cache'), `its ServiceAccount exists again\n${second.log}`);
    const js = await a.waitJobSet(ns, 'r', 'running with 1 node', (j) => j.spec?.suspend === false);
    assert.equal(parallelism(js), 1);
  });
});
