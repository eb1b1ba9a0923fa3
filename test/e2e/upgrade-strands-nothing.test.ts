// Issue 17, item 3: upgrades strand nothing. One world with the real managers of Trainer v2.2.1
// (JobSet v0.11.1), the project's CRD patch, webhook and reconciler sidecar (companion mode), and
// TrainJobs in every state, created at once: running, suspended, finished (Complete), Blocked (a
// count change whose rebuild would lose a claim being deleted), a suspended DeepSpeed (MPI) job, a running one, a
// suspended torch job whose runtime sets node resources, and one scaled while Trainer is down
// (mid-rebuild). Trainer is installed with its Helm chart (v2.2.1's; its CRDs, in the chart's crds/,
// are the world's, created before and patched as docs/versions.md says, which Helm's install leaves as
// they are) and upgraded as a platform team does it (support/trainer-upgrade.ts: managers stopped,
// JobSet's CRD replaced, `helm upgrade` of Trainer's chart rewriting Trainer's CRDs, the patch put
// back by the sidecar's CRD patch restorer alone, the new line's managers started): v2.2.1 -> v2.3.0
// with Helm 3 (`--take-ownership`: v2.3.0's chart moved the CRDs from crds/ into its templates,
// kubeflow/trainer#3655, so the CRDs Helm created from crds/ are not the release's), v2.3.0 -> main
// (8c0f5059, for v2.4) with Helm 4 by server-side apply (`--server-side=true`: Helm 4's default `auto`
// keeps a release Helm 3 wrote on client-side apply), and back to v2.3.0 with Helm 3's rollback.
//
// v2.3.0 builds the MPI JobSet and a torch JobSet whose runtime sets node resources differently
// (the SSH volume's defaultMode and item modes, kubeflow/trainer#3649; resourcesPerNode merged
// into the runtime's resources instead of replacing them): JobSet refuses those applies, as
// spec.replicatedJobs is immutable. Without the sidecar such a job, resumed, says Resumed while
// its JobSet stays suspended with no pods; here the sidecar rebuilds it once at the resume.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  controlPlaneAvailability,
  isRunningReady,
  pods,
  upstreamControllersAvailability,
  waitFor,
  type TrainerLine,
} from '../harness/index.ts';
import type { JobSet, TrainJob } from '../../src/api/objects.ts';
import { startSidecar, type Sidecar } from '../reconciler/support/sidecar.ts';
import { switchTrainer } from '../reconciler/support/trainer-upgrade.ts';
import { ensureHelmBinaries, helmSkipReason } from '../harness/helm.ts';
import { projectRoot } from '../harness/binaries.ts';
import { helmFor, prepareTrainerChart, type Helm } from './support/trainer-chart.ts';
import {
  api,
  inNamespace,
  parallelism,
  RECONCILER_SA,
  startWorld,
  torchTrainJob,
  type World,
} from '../reconciler/support/world.ts';
import { torchWithResources } from '../rebuild/line-cases.ts';

const LINES: TrainerLine[] = ['v2.2.1', 'v2.3.0', 'main'];
const controlPlane = controlPlaneAvailability();
const missing = LINES.map((l) => upstreamControllersAvailability(process.env, l)).find((a) => !a.available);
const skip = !controlPlane.available
  ? controlPlane.reason
  : missing && !missing.available
    ? missing.reason
    : helmSkipReason();
const RELEASE = 'kubeflow-trainer';
/** The CRDs Trainer's v2.2.1 chart has in crds/, with JobSet's (its subchart's crds/). */
const LINE_CRD_NAMES = {
  trainjobs: 'trainjobs.trainer.kubeflow.org',
  trainingRuntimes: 'trainingruntimes.trainer.kubeflow.org',
  clusterTrainingRuntimes: 'clustertrainingruntimes.trainer.kubeflow.org',
  jobsets: 'jobsets.jobset.x-k8s.io',
};

/**
 * The world applied the CRDs server-side as its own manager (`e2e-harness`); Helm creates a chart's
 * crds/ with a plain create, as the manager `helm` (operation Update). Their managed fields are
 * rewritten to that, so that no later apply meets a manager a Helm-installed cluster lacks (Helm 4's
 * server-side upgrade would conflict with `e2e-harness` on fields that differ between lines).
 */
async function asCreatedByHelm(w: World, names: string[]): Promise<void> {
  for (const name of names) {
    const crd = JSON.parse((await w.cp.kubectl(['get', 'crd', name, '-o', 'json', '--show-managed-fields'])).stdout);
    const fields = (crd.metadata.managedFields as Record<string, unknown>[]).map((e) =>
      e.manager === 'e2e-harness' ? { ...e, manager: 'helm', operation: 'Update' } : e,
    );
    await w.cp.kubectl([
      'patch',
      'crd',
      name,
      '--type=json',
      '-p',
      JSON.stringify([
        { op: 'test', path: '/metadata/resourceVersion', value: crd.metadata.resourceVersion },
        { op: 'replace', path: '/metadata/managedFields', value: fields },
      ]),
    ]);
  }
}

const ns = 'upgrade';
const mpiJob = (name: string, suspend: boolean): TrainJob => ({
  apiVersion: 'trainer.kubeflow.org/v1alpha1',
  kind: 'TrainJob',
  metadata: { name, namespace: ns },
  spec: { runtimeRef: { name: 'deepspeed-distributed' }, suspend, trainer: { numNodes: 1 } },
});
const sshVolume = (js: JobSet | undefined, rJob: string) => {
  const volumes = js?.spec?.replicatedJobs?.find((r) => r.name === rJob)?.template?.spec?.template?.spec?.volumes;
  return (volumes as { name?: string; secret?: { defaultMode?: number } }[] | undefined)?.find(
    (v) => v.name === 'mpi-ssh-auth',
  );
};
const isComplete = (t: TrainJob) => !!t.status?.conditions?.some((c) => c.type === 'Complete' && c.status === 'True');

describe('upgrades strand nothing: Trainer v2.2.1 -> v2.3.0 -> main beside the sidecar', { skip }, () => {
  let w: World;
  let sidecar: Sidecar;
  let h3: Helm;
  let h4: Helm;
  const charts = {} as Record<TrainerLine, string>;
  /** Trainer's chart for a line, with Helm 3 or 4 (a `helm upgrade` through the CRDs-only post-renderer). */
  const helmUpgrade =
    (helm: () => Helm, line: TrainerLine, extra: string[] = []) =>
    async () => {
      await helm().run(['upgrade', RELEASE, charts[line], '-n', 'kubeflow-system', ...extra, ...helm().postRender]);
    };
  const a = () => api(w.cp);
  const p = () => pods(w.cp);
  const { getTj, create, patch } = inNamespace(ns, () => w);
  let step = 'v2.2.1';
  const at = (what: string) => `${step}: ${what}`;
  const uids = new Map<string, string | undefined>();
  const jobSet = (name: string, what: string, pred: (js: JobSet) => boolean, timeoutMs = 60_000) =>
    a().waitJobSet(ns, name, at(what), pred, timeoutMs);
  const report = (name: string, what: string, pred: (r: Record<string, any>) => boolean, timeoutMs = 60_000) =>
    waitFor(
      at(`${name}: report ${what}`),
      async () => {
        const r = a().report(await getTj(name));
        return r && pred(r) ? r : undefined;
      },
      { timeoutMs },
    );
  const running = (name: string, count: number) =>
    waitFor(
      at(`${name}: ${count} pods running`),
      async () => {
        const list = (await a().pods(ns, name)).filter((x) => !['Succeeded', 'Failed'].includes(x.status?.phase ?? ''));
        return list.length === count && list.every(isRunningReady) ? list : undefined;
      },
      { timeoutMs: 60_000 },
    );
  const rebuiltRunning = async (name: string, what: string, pred: (js: JobSet) => boolean, count: number) => {
    const js = await jobSet(
      name,
      `${what}: re-created and running`,
      (j) => j.metadata.uid !== uids.get(name) && j.spec?.suspend === false && pred(j),
    );
    await running(name, count);
    uids.set(name, js.metadata.uid);
    return js;
  };

  before(async () => {
    const helmBins = await ensureHelmBinaries();
    w = await startWorld({ trainer: true, webhook: true, line: 'v2.2.1' });
    await w.cp.kubectl(['create', 'namespace', ns]);
    await w.cp.applyYaml(JSON.stringify(torchWithResources()));
    const dir = await w.cp.tempDir('helm');
    for (const line of LINES) charts[line] = await prepareTrainerChart(dir, line);
    h3 = await helmFor('helm3', helmBins.helm3, dir, w.cp.childEnv());
    h4 = await helmFor('helm4', helmBins.helm4, dir, w.cp.childEnv());
    // Trainer v2.2.1 installed with its chart: its crds/ exist already (Helm leaves them), the rest is
    // the host processes' (the post-renderer keeps only CRDs).
    await h3.run(['install', RELEASE, charts['v2.2.1'], '-n', 'kubeflow-system', ...h3.postRender]);
    await asCreatedByHelm(w, Object.values(LINE_CRD_NAMES));
    // The sidecar with the opt-in CRD patch restorer (components/crd-patch-restorer: its flag and rights).
    await w.cp.applyYaml(
      (await w.cp.kubectl(['kustomize', path.join(projectRoot, 'manifests/rbac/crd-patch-restorer')])).stdout,
    );
    sidecar = await startSidecar(w.cp, {
      name: 'reconciler',
      mode: 'companion',
      kubeconfig: w.reconcilerKubeconfig.path,
      leaseNamespace: RECONCILER_SA.namespace,
      handoffPort: w.handoffPort,
      extraArgs: ['--restore-crd-patch'],
    });
  });
  after(async () => {
    if (process.exitCode && w) process.stderr.write(w.cp.logTails(30));
    await sidecar?.proc.stop();
    await w?.stop();
  });

  it('v2.2.1: TrainJobs in every state, created at once', async () => {
    const torchres = torchTrainJob('torchres', ns, { runtimeRef: { name: 'torch-resources' } });
    torchres.spec!.trainer!.resourcesPerNode = { limits: { cpu: '8' } };
    await Promise.all([
      create(torchTrainJob('running', ns, { suspend: false })),
      create(torchTrainJob('finished', ns, { suspend: false })),
      create(torchTrainJob('blocked', ns)),
      create(torchTrainJob('suspended', ns)),
      create(torchTrainJob('midrebuild', ns)),
      create(torchres),
      create(mpiJob('mpi', true)),
      create(mpiJob('mpirun', false)),
    ]);
    await Promise.all([
      ...['running', 'finished'].map((n) => running(n, 1)),
      running('mpirun', 2),
      ...['blocked', 'suspended', 'midrebuild', 'torchres', 'mpi'].map((n) =>
        jobSet(n, 'built, suspended', (j) => j.spec?.suspend === true),
      ),
    ]);
    await p().endJobSetTraining(ns, 'finished', 'Succeeded');
    // Blocked: a claim its JobSet owns is being deleted (held by a finalizer), so a rebuild would
    // lose it; the sidecar keeps the JobSet and says so.
    const blocked = await a().getJobSet(ns, 'blocked');
    await w.cp.applyYaml(
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: {
          name: 'held',
          namespace: ns,
          finalizers: ['e2e.trainjob-webhook/hold'],
          ownerReferences: [
            { apiVersion: 'jobset.x-k8s.io/v1alpha2', kind: 'JobSet', name: 'blocked', uid: blocked?.metadata.uid },
          ],
        },
        spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
      }),
    );
    await w.cp.kubectl(['delete', 'pvc', 'held', '-n', ns, '--wait=false']);
    await patch('blocked', { spec: { trainer: { numNodes: 2 } } });
    await Promise.all([
      waitFor(at('finished: Complete'), async () => isComplete(await getTj('finished'))),
      report('blocked', 'Blocked', (r) => r.state === 'Blocked'),
    ]);
    for (const n of ['running', 'finished', 'blocked', 'suspended', 'midrebuild', 'torchres', 'mpi', 'mpirun'])
      uids.set(n, (await a().getJobSet(ns, n))?.metadata.uid);
  });

  it('v2.2.1 -> v2.3.0 (helm upgrade --take-ownership): the CRDs rewritten, the patch back by the restorer, one job scaled while Trainer is down; the new Trainer re-creates it', async (t) => {
    step = 'v2.2.1 -> v2.3.0';
    const restoredMs = await switchTrainer(w, 'v2.3.0', {
      trainerCrds: helmUpgrade(() => h3, 'v2.3.0', ['--take-ownership']),
      whileDown: async () => {
        await patch('midrebuild', { spec: { trainer: { numNodes: 2 } } });
        await report(
          'midrebuild',
          'Rebuilding (its JobSet deleted, no Trainer to re-create it)',
          (r) => r.state === 'Rebuilding',
        );
      },
    });
    t.diagnostic(`the patch was back ${Math.round(restoredMs)} ms after Helm 3's upgrade returned`);
    await jobSet(
      'midrebuild',
      're-created by v2.3.0 with 2 nodes',
      (j) => j.metadata.uid !== uids.get('midrebuild') && parallelism(j) === 2,
    );
    await report('midrebuild', 'Rebuilt', (r) => r.state === 'Rebuilt' && r.parallelism?.to === 2);
  });

  it('v2.2.1 -> v2.3.0: running keeps running, finished stays finished, Blocked stays Blocked; every job still scales; the stranded MPI and torch jobs are rebuilt at their resume', async () => {
    // Running, untouched by the upgrade (v2.3.0 reconciled it: its runtime snapshot exists).
    await waitFor(at('running: reconciled by v2.3.0 (runtime snapshot)'), () =>
      a().core.readNamespacedConfigMap({ namespace: ns, name: 'running-runtime-snapshot' }),
    );
    assert.equal((await a().getJobSet(ns, 'running'))?.metadata.uid, uids.get('running'), at('running: same JobSet'));
    await running('running', 1);
    await Promise.all([
      (async () => {
        // Suspend and scale in one update, then resume: 2 nodes.
        await patch('running', { spec: { suspend: true, trainer: { numNodes: 2 } } });
        await report('running', 'Rebuilt', (r) => r.state === 'Rebuilt' && r.parallelism?.to === 2);
        await patch('running', { spec: { suspend: false } });
        await rebuiltRunning('running', 'running scaled to 2', (j) => parallelism(j) === 2, 2);
      })(),
      (async () => {
        await patch('suspended', { spec: { trainer: { numNodes: 2 } } });
        await report('suspended', 'Rebuilt', (r) => r.state === 'Rebuilt' && r.parallelism?.to === 2);
        await patch('suspended', { spec: { suspend: false } });
        await rebuiltRunning('suspended', 'suspended scaled to 2', (j) => parallelism(j) === 2, 2);
      })(),
      (async () => {
        // Resumed as it was: v2.3.0's apply is refused (the SSH volume's modes); rebuilt once.
        await patch('mpi', { spec: { suspend: false } });
        const js = await rebuiltRunning('mpi', 'mpi rebuilt at its resume', () => true, 2);
        assert.equal(sshVolume(js, 'node')?.secret?.defaultMode, 0o400, at('mpi: built by v2.3.0 (#3649)'));
        const r = await report('mpi', 'Rebuilt (for the refused apply)', (x) => x.state === 'Rebuilt');
        assert.equal(typeof r.resumedAt, 'string');
        assert.match(
          r.reason,
          /can no longer apply JobSet mpi: JobSet refuses the change of its immutable spec\.replicatedJobs/,
        );
      })(),
      (async () => {
        await patch('torchres', { spec: { suspend: false } });
        const js = await rebuiltRunning('torchres', 'torchres rebuilt at its resume', () => true, 1);
        const node = js.spec?.replicatedJobs?.[0]?.template?.spec?.template?.spec?.containers?.[0];
        assert.deepEqual(
          node?.resources,
          { limits: { cpu: '8', memory: '16Gi' }, requests: { cpu: '4' } },
          at('torchres: merged by v2.3.0'),
        );
      })(),
      (async () => {
        // Running MPI: v2.3.0's apply of the suspend is refused too; the sidecar pauses the JobSet,
        // and rebuilds it at the resume.
        await patch('mpirun', { spec: { suspend: true } });
        await jobSet('mpirun', 'suspended (by the sidecar: Trainer cannot)', (j) => j.spec?.suspend === true);
        await waitFor(at('mpirun: its pods gone'), async () => (await a().pods(ns, 'mpirun')).length === 0);
        await patch('mpirun', { spec: { suspend: false } });
        await rebuiltRunning(
          'mpirun',
          'mpirun rebuilt at its resume',
          (j) => sshVolume(j, 'launcher')?.secret?.defaultMode === 0o400,
          2,
        );
      })(),
    ]);
    // Finished and Blocked: kept as they were, nothing runs.
    assert.ok(isComplete(await getTj('finished')), at('finished: still Complete'));
    for (const n of ['finished', 'blocked']) {
      assert.equal((await a().getJobSet(ns, n))?.metadata.uid, uids.get(n), at(`${n}: same JobSet`));
      assert.deepEqual((await a().pods(ns, n)).filter(isRunningReady), [], at(`${n}: nothing runs`));
    }
    assert.equal(a().report(await getTj('blocked'))?.state, 'Blocked', at('blocked: still Blocked'));
  });
  it('v2.3.0 -> main (Helm 4, --server-side=true): it builds the same JobSets (nothing rebuilt); running jobs keep their JobSets, a suspended one resumes as it is, MPI still scales', async (t) => {
    step = 'v2.3.0 -> main';
    const before = new Map(uids);
    uids.set('midrebuild', (await a().getJobSet(ns, 'midrebuild'))?.metadata.uid);
    const restoredMs = await switchTrainer(w, 'main', {
      trainerCrds: helmUpgrade(() => h4, 'main', ['--server-side=true']),
    });
    t.diagnostic(`the patch was back ${Math.round(restoredMs)} ms after Helm 4's upgrade returned`);
    await Promise.all([
      (async () => {
        await patch('midrebuild', { spec: { suspend: false } });
        const js = await jobSet('midrebuild', 'resumed by main as it is', (j) => j.spec?.suspend === false);
        assert.equal(js.metadata.uid, uids.get('midrebuild'), at('midrebuild: not rebuilt'));
        await running('midrebuild', 2);
      })(),
      (async () => {
        // MPI 1 -> 3 nodes (runLauncherAsNode: the node job gets numNodes - 1 = 2).
        await patch('mpi', { spec: { suspend: true } });
        await jobSet('mpi', 'suspended by main', (j) => j.spec?.suspend === true);
        await patch('mpi', { spec: { trainer: { numNodes: 3 } } });
        await report('mpi', 'Rebuilt with 2 node pods', (r) => r.state === 'Rebuilt' && r.parallelism?.to === 2);
        await patch('mpi', { spec: { suspend: false } });
        await rebuiltRunning('mpi', 'mpi scaled to 3', (j) => parallelism(j) === 2, 3);
      })(),
    ]);
    // By now main has reconciled every job (it acted on two of them): the running ones kept theirs.
    for (const n of ['running', 'suspended', 'torchres', 'mpirun'])
      assert.equal((await a().getJobSet(ns, n))?.metadata.uid, before.get(n), at(`${n}: same JobSet`));
    assert.ok(isComplete(await getTj('finished')), at('finished: still Complete'));
    assert.equal(a().report(await getTj('blocked'))?.state, 'Blocked', at('blocked: still Blocked'));
  });

  it('a downgrade, main -> v2.3.0 (helm rollback), tried once: the JobSets main built are applied by v2.3.0 as they are (suspend and resume), nothing rebuilt', async () => {
    step = 'main -> v2.3.0 (downgrade)';
    const before = (await a().getJobSet(ns, 'running'))?.metadata.uid;
    // Revision 2 is v2.3.0's upgrade (1 the v2.2.1 install, 3 main's). The rollback deletes what
    // revision 3 has and 2 lacks: main's optimizationjobs CRD, unless it is annotated to be kept
    // (docs/versions.md's advice before a rollback: Helm reads the annotation from the live object).
    const optimizationJobs = 'optimizationjobs.trainer.kubeflow.org';
    await w.cp.kubectl(['annotate', 'crd', optimizationJobs, 'helm.sh/resource-policy=keep']);
    await switchTrainer(w, 'v2.3.0', {
      trainerCrds: async () => void (await h3.run(['rollback', RELEASE, '2', '-n', 'kubeflow-system'])),
    });
    assert.equal(
      (await w.cp.kubectl(['get', 'crd', optimizationJobs, '--ignore-not-found', '-o', 'name'])).stdout.trim(),
      `customresourcedefinition.apiextensions.k8s.io/${optimizationJobs}`,
      at('the CRD annotated helm.sh/resource-policy=keep survives the rollback'),
    );
    await patch('running', { spec: { suspend: true } });
    await jobSet('running', 'suspended by v2.3.0', (j) => j.spec?.suspend === true);
    await waitFor(at('running: its pods gone'), async () => (await a().pods(ns, 'running')).length === 0);
    await patch('running', { spec: { suspend: false } });
    const js = await jobSet('running', 'resumed by v2.3.0', (j) => j.spec?.suspend === false);
    assert.equal(js.metadata.uid, before, at('running: not rebuilt'));
    await running('running', 2);
  });
});
