// Every count change that is admitted is carried out, and one that cannot be is refused at
// admission with the reason: the webhook (serve, judging against the cluster) and the reconciler
// sidecar beside the real Trainer v2.3.0 and JobSet v0.12.0 managers, in the world where pods run.
// The stock runtimes the sidecar now rebuilds (JAX, XGBoost, MLX), the refusals (a workspace claim,
// a runtime without a trainer job), the transient refusal while no reconciler leads, and the pause
// Trainer cannot carry out beside a workspace claim.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import {
  controlPlaneAvailability,
  projectRoot,
  upstreamControllersAvailability,
  waitFor,
  skipUnless,
} from '../harness/index.ts';
import type { JobSet, TrainJob } from '../../src/api/objects.ts';
import { startSidecar, type Sidecar } from '../reconciler/support/sidecar.ts';
import {
  api,
  inNamespace,
  parallelism,
  RECONCILER_SA,
  rJob,
  startWorld,
  untilAdmitted,
  withoutWebhook,
  type World,
} from '../reconciler/support/world.ts';

const execFileAsync = promisify(execFile);

const skip = skipUnless(controlPlaneAvailability(), upstreamControllersAvailability());

const env = (js: JobSet | undefined, name: string, job = 'node') =>
  rJob(js, job)
    ?.template?.spec?.template?.spec?.containers?.find((c) => c.name === 'node')
    ?.env?.find((e) => e.name === name)?.value;

const trainJob = (name: string, ns: string, runtime: string, numNodes: number, suspend = false): TrainJob => ({
  apiVersion: 'trainer.kubeflow.org/v1alpha1',
  kind: 'TrainJob',
  metadata: { name, namespace: ns },
  spec: { runtimeRef: { name: runtime }, suspend, trainer: { numNodes } },
});

describe('every admitted count change is carried out; the others are refused with the reason', { skip }, () => {
  let w: World;
  let a: ReturnType<typeof api>;
  let sidecar: Sidecar;
  const ns = 'scale';
  const { getTj, create, patch } = inNamespace(ns, () => w);
  const runningPods = async (name: string) =>
    (await a.pods(ns, name)).filter((p) => p.status?.phase === 'Running' && !p.metadata?.deletionTimestamp);
  const startReconciler = async () =>
    (sidecar = await startSidecar(w.cp, {
      name: `reconciler-${Date.now()}`,
      mode: 'companion',
      kubeconfig: w.reconcilerKubeconfig.path,
      leaseNamespace: RECONCILER_SA.namespace,
      handoffPort: w.handoffPort,
    }));
  /** numNodes changed through the API server (and so the webhook) by an UPDATE: the Outcome, allowed or refused. */
  const scale = (name: string, numNodes: number, suspend?: boolean, dryRun?: 'All') =>
    w.tj.update(
      ns,
      name,
      (o) => {
        o.spec.trainer = { ...o.spec.trainer, numNodes };
        if (suspend !== undefined) o.spec.suspend = suspend;
      },
      dryRun,
    );
  /** Pods that are not finished: what a suspended JobSet must not have (initializer pods stay Succeeded). */
  const livePods = async (name: string) =>
    (await a.pods(ns, name)).filter((p) => p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed');

  before(async () => {
    w = await startWorld({ trainer: true, webhook: true });
    a = api(w.cp);
    await w.cp.kubectl(['create', 'namespace', ns]);
    // A runtime of a user's own without the trainer-ancestor job: Trainer puts numNodes nowhere.
    await w.cp.applyYaml(
      JSON.stringify({
        apiVersion: 'trainer.kubeflow.org/v1alpha1',
        kind: 'ClusterTrainingRuntime',
        metadata: { name: 'no-trainer-job' },
        spec: {
          mlPolicy: { numNodes: 1 },
          template: {
            spec: {
              replicatedJobs: [
                {
                  name: 'worker',
                  template: {
                    spec: { template: { spec: { containers: [{ name: 'worker', image: 'busybox' }] } } },
                  },
                },
              ],
            },
          },
        },
      }),
    );
    await startReconciler();
  });
  after(async () => {
    if (process.exitCode && w) process.stderr.write(w.cp.logTails(20));
    await w?.stop();
  });

  for (const [runtime, numEnv, want] of [
    ['jax-distributed', 'JAX_NUM_PROCESSES', '2'],
    ['xgboost-distributed', 'DMLC_NUM_WORKER', '2'],
  ] as const) {
    it(`${runtime}: run, suspend, scale 1 -> 2, resume: the JobSet is rebuilt with 2 nodes (${numEnv}=${want}) and 2 pods run`, async () => {
      const name = runtime.split('-')[0];
      await create(trainJob(name, ns, runtime, 1));
      const old = await a.waitJobSet(
        ns,
        name,
        'running with 1 node',
        (js) => parallelism(js) === 1 && !js.spec?.suspend,
      );
      assert.equal(env(old, numEnv), '1');
      await waitFor('1 pod running', async () => (await runningPods(name)).length === 1);
      await patch(name, { spec: { suspend: true } });
      const scaled = await scale(name, 2);
      assert.ok(scaled.allowed, JSON.stringify(scaled));
      await patch(name, { spec: { suspend: false } });
      const js = await a.waitJobSet(
        ns,
        name,
        're-created with 2 nodes, running',
        (j) => j.metadata.uid !== old.metadata.uid && parallelism(j) === 2 && j.spec?.suspend === false,
      );
      assert.equal(rJob(js)?.template?.spec?.completions, 2);
      assert.equal(env(js, numEnv), want);
      await waitFor('2 pods running', async () => (await runningPods(name)).length === 2);
    });
  }

  it('mlx-distributed (MPI, launcher as node): suspended, scaled 2 -> 3: the node job goes from 1 to 2 (max(n - 1, 1)), the JobSet is rebuilt', async () => {
    await create(trainJob('mlx', ns, 'mlx-distributed', 2, true));
    const old = await a.waitJobSet(ns, 'mlx', 'built for 2 nodes', (js) => parallelism(js) === 1);
    const scaled = await scale('mlx', 3);
    assert.ok(scaled.allowed, JSON.stringify(scaled));
    await a.waitJobSet(
      ns,
      'mlx',
      're-created for 3 nodes',
      (j) => j.metadata.uid !== old.metadata.uid && parallelism(j) === 2,
    );
  });

  it('a workspace claim (torchtune): refused at admission, 403, with the reason and the way out; the JobSet is kept', async () => {
    await create(trainJob('claims', ns, 'torchtune-llama3.2-1b', 1, true));
    const old = await a.waitJobSet(ns, 'claims', 'built', (js) => parallelism(js) === 1);
    const out = await scale('claims', 2);
    assert.equal(out.allowed, false);
    if (out.allowed) return;
    assert.equal(out.refusal.code, 403);
    assert.match(
      out.refusal.message,
      /spec\.trainer\.numNodes: Forbidden: its JobSet has workspace claims \(spec\.volumeClaimPolicies\): JobSet v0\.12\.0 refuses to re-create it.*copy the data out of the claims and create a new TrainJob with numNodes 2/,
    );
    assert.deepEqual(
      out.refusal.causes.map((c) => c.field),
      ['spec.trainer.numNodes'],
    );
    assert.equal((await a.getJobSet(ns, 'claims'))?.metadata.uid, old.metadata.uid);
    assert.equal((await getTj('claims')).spec?.trainer?.numNodes, 1);
  });

  it('a runtime without the trainer-ancestor job: refused, Trainer puts numNodes nowhere', async () => {
    await create(trainJob('nowhere', ns, 'no-trainer-job', 1, true));
    await a.waitJobSet(ns, 'nowhere', 'built', () => true);
    const out = await scale('nowhere', 2);
    assert.equal(out.allowed, false);
    if (!out.allowed)
      assert.match(out.refusal.message, /its JobSet cannot be judged against its runtime.*leave numNodes as it is/);
    // The details (which job is missing) go to the webhook's log: the API server is not known to be the caller.
    await waitFor('the webhook logs what it found', () =>
      w
        .webhook!.logLines()
        .some(
          (l) =>
            l.component === 'count-change' &&
            l.name === 'nowhere' &&
            /has no replicated job labelled/.test(String(l.detail)),
        ),
    );
  });

  it('the judgment reads the runtime from its watch (serve --watch-runtimes): no GET of it, and a change to the runtime is followed', async (t) => {
    const ANCESTOR = 'trainer.kubeflow.org/trainjob-ancestor-step';
    const stock = JSON.parse(
      (await w.cp.kubectl(['get', 'clustertrainingruntime', 'torch-distributed', '-o', 'json'])).stdout,
    ) as {
      spec: {
        template: { spec: { replicatedJobs: { template: { metadata?: { labels?: Record<string, string> } } }[] } };
      };
    };
    const runtime = (spec: unknown) =>
      JSON.stringify({
        apiVersion: 'trainer.kubeflow.org/v1alpha1',
        kind: 'ClusterTrainingRuntime',
        metadata: { name: 'followed' },
        spec,
      });
    await w.cp.applyYaml(runtime(stock.spec));
    t.after(async () => {
      await w.cp.kubectl(['delete', 'trainjob', 'followed', '-n', ns, '--ignore-not-found', '--wait=false']);
      await w.cp.kubectl(['delete', 'clustertrainingruntime', 'followed', '--ignore-not-found', '--wait=false']);
    });
    await create(trainJob('followed', ns, 'followed', 1, true));
    await a.waitJobSet(ns, 'followed', 'built', (js) => parallelism(js) === 1);
    const runtimeGets = () =>
      w.webhook!.counter('trainjob_webhook_admission_stage_seconds_total', /stage="read-runtime"/);
    const jobSetGets = () =>
      w.webhook!.counter('trainjob_webhook_admission_stage_seconds_total', /stage="read-jobset"/);
    const [runtimeBefore, jobSetBefore] = [await runtimeGets(), await jobSetGets()];
    const admitted = await scale('followed', 2, undefined, 'All');
    assert.equal(admitted.allowed, true, admitted.allowed ? '' : admitted.refusal.message);
    assert.ok((await jobSetGets()) > jobSetBefore, 'the JobSet is read (the stage series counts that read)');
    // The runtime loses its trainer-ancestor job: the next change is refused, from the watch's copy.
    const changed = structuredClone(stock.spec);
    for (const r of changed.template.spec.replicatedJobs)
      if (r.template.metadata?.labels?.[ANCESTOR]) r.template.metadata.labels[ANCESTOR] = 'not-the-trainer';
    await w.cp.applyYaml(runtime(changed));
    await waitFor('the judgment follows the changed runtime', async () => {
      const out = await scale('followed', 2, undefined, 'All');
      return !out.allowed && /has no replicated job labelled/.test(out.refusal.message);
    });
    assert.equal(await runtimeGets(), runtimeBefore, 'no count change GET the runtime: the watch held it');
  });

  it('a dry run is judged the same, and changes nothing', async () => {
    const out = await scale('claims', 2, undefined, 'All');
    assert.equal(out.allowed, false);
    if (!out.allowed) assert.equal(out.refusal.code, 403);
  });

  it('a pause Trainer cannot carry out (every apply of a JobSet with a workspace claim is refused): the sidecar suspends the JobSet, so no pod runs under the suspended TrainJob, and resumes it on resume', async () => {
    await create(trainJob('pause', ns, 'torchtune-llama3.2-1b', 1));
    await a.waitJobSet(ns, 'pause', 'running', (js) => js.spec?.suspend === false);
    await waitFor('a pod running', async () => (await runningPods('pause')).length > 0);
    await patch('pause', { spec: { suspend: true } });
    await a.waitJobSet(ns, 'pause', 'suspended', (js) => js.spec?.suspend === true);
    await waitFor('no pod but finished ones', async () => (await livePods('pause')).length === 0);
    const events = await a.events(ns, 'pause');
    assert.ok(
      events.some((e) => e.reason === 'TrainJobResourcesCreationFailed' && /volumeClaimPolicies/.test(e.message ?? '')),
      "Trainer's apply of the suspend was refused",
    );
    assert.ok(
      events.some((e) => e.reason === 'JobSetSuspended'),
      'the sidecar says it suspended the JobSet',
    );
    // The resume: Trainer's apply is refused the same way, so the sidecar undoes its own suspend.
    await patch('pause', { spec: { suspend: false } });
    await a.waitJobSet(ns, 'pause', 'resumed', (js) => js.spec?.suspend === false);
    await waitFor('a pod running again', async () => (await runningPods('pause')).length > 0);
    assert.ok(
      (await a.events(ns, 'pause')).some((e) => e.reason === 'JobSetResumed'),
      'the sidecar says it resumed the JobSet',
    );
  });

  it('settle before an uninstall: a Blocked change (stored without the webhook) is reverted to the count its JobSet was built with; then nothing is pending', async () => {
    const old = await a.waitJobSet(ns, 'claims', 'built', (js) => parallelism(js) === 1);
    await withoutWebhook(w, () =>
      untilAdmitted('numNodes 2 stored', () => patch('claims', { spec: { trainer: { numNodes: 2 } } })),
    );
    await waitFor('Blocked', async () => a.report(await getTj('claims'))?.state === 'Blocked');
    const settle = (...args: string[]) =>
      execFileAsync(process.execPath, [
        path.join(projectRoot, 'bin/trainjob-webhook.js'),
        'settle',
        '--kubeconfig',
        w.cp.kubeconfigPath,
        ...args,
      ]).then(
        (r) => ({ code: 0, out: r.stdout }),
        (err: { code?: number; stdout?: string }) => ({ code: err.code ?? -1, out: err.stdout ?? '' }),
      );
    const before = await settle();
    assert.equal(before.code, 1, before.out);
    assert.match(before.out, /scale\/claims: needs a person: not rebuilt; --revert sets numNodes back to 1/);
    const reverted = await settle('--revert');
    assert.match(reverted.out, /scale\/claims: reverted to numNodes 1/);
    assert.equal((await getTj('claims')).spec?.trainer?.numNodes, 1);
    assert.equal((await a.getJobSet(ns, 'claims'))?.metadata.uid, old.metadata.uid, 'nothing rebuilt');
    const after = await settle('--wait', '30');
    assert.equal(after.code, 0, after.out);
    assert.match(after.out, /settled: no TrainJob has a count change that is not carried out/);
  });

  describe('while no reconciler leads', () => {
    before(async () => {
      await create(trainJob('idle', ns, 'torch-distributed', 1, true));
      await a.waitJobSet(ns, 'idle', 'built', (js) => parallelism(js) === 1);
      await create(trainJob('busy', ns, 'torch-distributed', 1));
      await waitFor('busy: a pod running', async () => (await runningPods('busy')).length === 1);
      await sidecar.proc.stop(); // releases the Lease
    });

    it('a count change that needs a rebuild is refused for now: 503 ServiceUnavailable with the reason, at once (no Retry-After, which client-go would retry silently)', async () => {
      const out = await scale('idle', 2);
      assert.equal(out.allowed, false);
      if (out.allowed) return;
      assert.equal(out.refusal.code, 503);
      assert.equal(out.refusal.reason, 'ServiceUnavailable');
      assert.match(
        out.refusal.message,
        /cannot be changed now: spec\.trainer\.numNodes: Forbidden: no reconciler leads to carry the rebuild out.*refused for now and can be applied again in a few seconds/,
      );
      await waitFor('the webhook logs why no reconciler leads', () =>
        w
          .webhook!.logLines()
          .some(
            (l) =>
              l.component === 'count-change' && l.name === 'idle' && /its Lease has no holder/.test(String(l.detail)),
          ),
      );
      // kubectl (client-go) shows it as it is: no Retry-After for it to retry on silently.
      const kubectl = await w.cp.kubectl(
        ['patch', 'trainjob', 'idle', '-n', ns, '--type', 'merge', '-p', '{"spec":{"trainer":{"numNodes":2}}}'],
        { check: false },
      );
      assert.notEqual(kubectl.code, 0);
      assert.match(kubectl.stderr, /denied the request: TrainJob\.trainer\.kubeflow\.org "idle" cannot be changed now/);
    });

    it('suspend and scale in one update on a running job is refused whole: the job keeps running with its quota, nothing runs without its rebuild', async () => {
      const out = await scale('busy', 2, true);
      assert.equal(out.allowed, false);
      if (!out.allowed) assert.equal(out.refusal.code, 503);
      const tj = await getTj('busy');
      assert.deepEqual([tj.spec?.suspend, tj.spec?.trainer?.numNodes], [false, 1]);
      assert.equal((await runningPods('busy')).length, 1);
    });

    it('every other update is admitted: a lone suspend, a label', async () => {
      await patch('busy', { spec: { suspend: true }, metadata: { labels: { team: 'a' } } });
      assert.equal((await getTj('busy')).spec?.suspend, true);
    });

    it('the refusal clears by itself once a reconciler leads again: the same change is admitted and carried out', async () => {
      await startReconciler();
      const out = await waitFor('admitted', async () => {
        const o = await scale('idle', 2);
        return o.allowed ? o : undefined;
      });
      assert.ok(out.allowed);
      await a.waitJobSet(ns, 'idle', 'rebuilt with 2 nodes', (js) => parallelism(js) === 2);
    });
  });
});
