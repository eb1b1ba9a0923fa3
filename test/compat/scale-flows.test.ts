// The version matrix's compatibility suite, in the cell TJW_CELL names (hack/versions.env; docs/versions.md,
// "Supported versions"): admission through the real API server of that Kubernetes release, the
// torch and MPI scale flows beside that cell's real Trainer and JobSet managers, one refusal, and
// Kueue (the cell's: v0.17.1, or v0.19.2 on the newer Kubernetes; both built against Trainer v2.2's
// types) beside v2.3.0 and the main line. Every test names its cell, so a failure says which one
// broke. The default cell runs the full suites instead (test/e2e/), which hold these flows and more;
// `npm run test:matrix` runs this file in each other cell.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  controlPlaneAvailability,
  currentCell,
  kueueAvailability,
  pods,
  readVersions,
  upstreamControllersAvailability,
  waitFor,
} from '../harness/index.ts';
import type { JobSet, TrainJob } from '../../src/api/objects.ts';
import { startSidecar } from '../reconciler/support/sidecar.ts';
import { api, inNamespace, parallelism, RECONCILER_SA, startWorld, type World } from '../reconciler/support/world.ts';
import { CPU_PER_NODE, isTrue, KUEUE, podCount, QUEUE_LABEL, queueObjects, type Obj } from '../e2e/support/kueue.ts';

const cell = currentCell();
/** The cell's Kueue beside Trainer v2.3.0 and the main line (it decodes TrainJobs with v2.2's types). */
const withKueue = cell.trainer !== 'v2.2.1';
const kueueVersion = readVersions().kueue;
const controlPlane = controlPlaneAvailability();
const controllers = upstreamControllersAvailability();
const kueue = withKueue ? kueueAvailability() : ({ available: true } as const);
const skip = !controlPlane.available
  ? controlPlane.reason
  : !controllers.available
    ? controllers.reason
    : !kueue.available
      ? kueue.reason
      : false;

const trainJob = (name: string, ns: string, runtime: string, numNodes: number, suspend = false): TrainJob => ({
  apiVersion: 'trainer.kubeflow.org/v1alpha1',
  kind: 'TrainJob',
  metadata: { name, namespace: ns },
  spec: { runtimeRef: { name: runtime }, suspend, trainer: { numNodes } },
});

describe(`[${cell.name}] compatibility: admission, the torch and MPI scale flows, a refusal, Kueue`, { skip }, () => {
  let w: World;
  let a: ReturnType<typeof api>;
  let p: ReturnType<typeof pods>;
  const ns = 'compat';
  const { getTj, create, patch } = inNamespace(ns, () => w);
  const livePods = async (name: string) =>
    (await a.pods(ns, name)).filter(
      (x) => !x.metadata?.deletionTimestamp && x.status?.phase !== 'Succeeded' && x.status?.phase !== 'Failed',
    );
  const scale = (name: string, numNodes: number, dryRun?: 'All') =>
    w.tj.update(ns, name, (o) => (o.spec.trainer = { ...o.spec.trainer, numNodes }), dryRun);

  before(async () => {
    w = await startWorld({ trainer: true, webhook: true, kueue: withKueue });
    a = api(w.cp);
    p = pods(w.cp);
    await w.cp.kubectl(['create', 'namespace', ns]);
    await startSidecar(w.cp, {
      name: 'reconciler',
      mode: 'companion',
      kubeconfig: w.reconcilerKubeconfig.path,
      leaseNamespace: RECONCILER_SA.namespace,
      handoffPort: w.handoffPort,
    });
  });
  after(async () => {
    if (process.exitCode && w) process.stderr.write(`[${cell.name}]\n${w.cp.logTails(30)}`);
    await w?.stop();
  });

  it(`[${cell.name}] admission: the server's version is the cell's; a dry-run scale of a suspended job is admitted and stores nothing; an image change is refused in the API server's error shape`, async () => {
    const version = JSON.parse((await w.cp.kubectl(['version', '-o', 'json'])).stdout) as Obj;
    assert.equal(`${version.serverVersion.major}.${version.serverVersion.minor}`, cell.k8sMinor);
    await create(trainJob('adm', ns, 'torch-distributed', 1, true));
    const dry = await scale('adm', 3, 'All');
    assert.ok(dry.allowed, JSON.stringify(dry));
    assert.equal((await getTj('adm')).spec?.trainer?.numNodes, 1, 'a dry run stores nothing');
    const out = await w.tj.update(ns, 'adm', (o) => (o.spec.trainer = { ...o.spec.trainer, image: 'img:2' }));
    assert.equal(out.allowed, false, JSON.stringify(out));
    if (out.allowed) return;
    assert.equal(out.refusal.code, 422);
    assert.equal(out.refusal.reason, 'Invalid');
    assert.ok(
      out.refusal.causes?.some((c) => c.field === 'spec.trainer.image'),
      `the cause names spec.trainer.image: ${JSON.stringify(out.refusal)}`,
    );
  });

  it(`[${cell.name}] refused: numNodes of a running TrainJob, with the table's reason; nothing changes`, async () => {
    await create(trainJob('running', ns, 'torch-distributed', 1));
    const js = await a.waitJobSet(
      ns,
      'running',
      'running with 1 node',
      (j) => parallelism(j) === 1 && !j.spec?.suspend,
    );
    const out = await scale('running', 2);
    assert.equal(out.allowed, false, JSON.stringify(out));
    if (!out.allowed) assert.match(out.refusal.message, /numNodes/);
    assert.equal((await a.getJobSet(ns, 'running'))?.metadata.uid, js.metadata.uid);
  });

  it(`[${cell.name}] torch: run 1 node, suspend, scale 1 -> 2, resume: the JobSet is rebuilt with 2 nodes and 2 pods run`, async () => {
    await create(trainJob('torch', ns, 'torch-distributed', 1));
    const old = await a.waitJobSet(ns, 'torch', 'running with 1 node', (j) => parallelism(j) === 1 && !j.spec?.suspend);
    await waitFor(`[${cell.name}] 1 pod running`, async () => (await livePods('torch')).length === 1);
    await patch('torch', { spec: { suspend: true } });
    const scaled = await scale('torch', 2);
    assert.ok(scaled.allowed, JSON.stringify(scaled));
    await patch('torch', { spec: { suspend: false } });
    const rebuilt = await a.waitJobSet(
      ns,
      'torch',
      `[${cell.name}] re-created with 2 nodes, running`,
      (j) => j.metadata.uid !== old.metadata.uid && parallelism(j) === 2 && j.spec?.suspend === false,
      90_000,
    );
    assert.equal(rebuilt.spec?.replicatedJobs?.find((r) => r.name === 'node')?.template?.spec?.completions, 2);
    await p.waitJobSetRunning(ns, 'torch', 2, 'node', 90_000);
  });

  it(`[${cell.name}] MPI (deepspeed-distributed): suspended 1 -> 3 is rebuilt (launcher as node 0, 2 node pods), Trainer's hostfile lists 3 hosts; resumed, 3 pods run`, async () => {
    await create(trainJob('mpi', ns, 'deepspeed-distributed', 1, true));
    const first = await a.waitJobSet(ns, 'mpi', 'built with 1 node', (j) => parallelism(j, 'launcher') === 1);
    const out = await scale('mpi', 3);
    assert.ok(out.allowed, JSON.stringify(out));
    const js: JobSet = await a.waitJobSet(
      ns,
      'mpi',
      `[${cell.name}] re-created with node parallelism 2`,
      (j) => j.metadata.uid !== first.metadata.uid && parallelism(j) === 2,
      90_000,
    );
    assert.equal(parallelism(js, 'launcher'), 1);
    await waitFor(`[${cell.name}] Trainer's hostfile with 3 hosts`, async () => {
      const cm = await a.core.readNamespacedConfigMap({ namespace: ns, name: 'mpi-mpi-hostfile' });
      return (cm.data?.hostfile ?? '').trim().split('\n').length === 3;
    });
    await patch('mpi', { spec: { suspend: false } });
    await waitFor(`[${cell.name}] 3 MPI pods running`, async () => (await livePods('mpi')).length === 3, {
      timeoutMs: 90_000,
    });
  });

  it(
    `[${cell.name}] Kueue ${kueueVersion}: a queued job is admitted and resumed; suspended and scaled 2 -> 3 in one update, Kueue admits the new count, the sidecar rebuilds, 3 pods run`,
    {
      skip: withKueue ? false : `Kueue is tried beside Trainer v2.3.0 and the main line, not ${cell.trainer}`,
    },
    async () => {
      await w.cp.applyYaml(queueObjects(ns));
      const clusterQueue = () =>
        a.objects.getClusterCustomObject({ ...KUEUE, plural: 'clusterqueues', name: 'cluster-queue' }) as Promise<Obj>;
      await waitFor('the ClusterQueue Active', async () => isTrue(await clusterQueue(), 'Active'));
      const name = 'queued';
      const workload = async (): Promise<Obj | undefined> => {
        const uid = (await getTj(name)).metadata.uid;
        const list = (await a.objects.listNamespacedCustomObject({ ...KUEUE, plural: 'workloads', namespace: ns })) as {
          items: Obj[];
        };
        const mine = list.items.filter(
          (wl) =>
            (wl.metadata.ownerReferences as Obj[] | undefined)?.some((o) => o.uid === uid) &&
            !wl.metadata.deletionTimestamp,
        );
        return mine.length === 1 ? mine[0] : undefined;
      };
      const created = await create({
        ...trainJob(name, ns, 'torch-distributed', 2),
        metadata: { name, namespace: ns, labels: { [QUEUE_LABEL]: 'queue' } },
        spec: {
          runtimeRef: { name: 'torch-distributed' },
          suspend: false,
          trainer: { numNodes: 2, resourcesPerNode: { requests: { cpu: String(CPU_PER_NODE) } } },
        },
      });
      assert.equal(created.spec?.suspend, true, 'Kueue suspends a queued TrainJob at creation');
      const admitted = await waitFor(`[${cell.name}] the Workload admitted with 2 pods`, async () => {
        const wl = await workload();
        return wl && isTrue(wl, 'Admitted') && podCount(wl) === 2 ? wl : undefined;
      });
      const running = await a.waitJobSet(
        ns,
        name,
        'running with 2 nodes',
        (j) => !j.spec?.suspend && parallelism(j) === 2,
      );
      await p.waitJobSetRunning(ns, name, 2, 'node', 90_000);

      await patch(name, { spec: { suspend: true, trainer: { numNodes: 3 } } });
      await waitFor(
        `[${cell.name}] a new Workload for 3 pods admitted`,
        async () => {
          const wl = await workload();
          return wl && wl.metadata.uid !== admitted.metadata.uid && isTrue(wl, 'Admitted') && podCount(wl) === 3;
        },
        { timeoutMs: 120_000 },
      );
      await a.waitJobSet(
        ns,
        name,
        `[${cell.name}] rebuilt with 3 nodes, running`,
        (j) => j.metadata.uid !== running.metadata.uid && !j.spec?.suspend && parallelism(j) === 3,
        120_000,
      );
      await p.waitJobSetRunning(ns, name, 3, 'node', 120_000);
    },
  );
});
