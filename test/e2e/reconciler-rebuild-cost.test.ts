// Issue 8, the reconciler's side, in the world where pods run (KWOK nodes, kube-scheduler, the real
// Job, JobSet and Trainer v2.3.0 controllers): a runtime whose initializer has finished is rebuilt
// (JobSet leaves a finished Job unsuspended), and what one rebuild costs in API requests (read from
// the sidecar's own trainjob_reconciler_api_requests_total): TrainJobs, JobSets and Jobs are read
// from the watches' caches, and the JobSet's Jobs and pods once, live, right before the delete. A
// TrainJob that failed (not by its deadline) is reconciled again by Trainer, so it is rebuilt too.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parse, stringify } from 'yaml';
import {
  controlPlaneAvailability,
  pods,
  upstreamControllersAvailability,
  upstreamDir,
  waitFor,
  skipUnless,
} from '../harness/index.ts';
import type { Sidecar } from '../reconciler/support/sidecar.ts';
import {
  api,
  inNamespace,
  parallelism,
  startWorld,
  startWorldReconciler,
  torchTrainJob,
  type World,
} from '../reconciler/support/world.ts';

const skip = skipUnless(controlPlaneAvailability(), upstreamControllersAvailability());

/** The sidecar's request counters, by `verb resource`, leader-election renewals left out. */
async function requestCounts(sidecar: Sidecar): Promise<Map<string, number>> {
  const { body } = await fetch(`http://127.0.0.1:${sidecar.opsPort}/metrics`).then(async (r) => ({
    body: await r.text(),
  }));
  const counts = new Map<string, number>();
  for (const line of body.split('\n')) {
    const m = /^trainjob_reconciler_api_requests_total\{(.*)\} (\d+)$/.exec(line);
    if (!m) continue;
    const labels = Object.fromEntries([...m[1].matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    if (labels.resource === 'leases') continue;
    counts.set(`${labels.verb} ${labels.resource}`, Number(m[2]));
  }
  return counts;
}

function delta(before: Map<string, number>, after: Map<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of after) if (v - (before.get(k) ?? 0) > 0) out[k] = v - (before.get(k) ?? 0);
  return Object.fromEntries(Object.entries(out).sort());
}

const total = (d: Record<string, number>) => Object.values(d).reduce((a, b) => a + b, 0);

describe(
  'reconciler (companion) in the world where pods run: finished initializers, and the cost of a rebuild',
  { skip },
  () => {
    let w: World;
    let a: ReturnType<typeof api>;
    let sidecar: Sidecar;
    const ns = 'rebuild-cost';
    const { getTj, create, patch } = inNamespace(ns, () => w);
    const report = async (name: string) => a.report(await getTj(name));

    before(async () => {
      w = await startWorld({ trainer: true, webhook: false });
      a = api(w.cp);
      await w.cp.kubectl(['create', 'namespace', ns]);
      // The data-cache runtime's shape (a dataset initializer the node job depends on) without the
      // cache itself (CACHE_IMAGE): a count change of the data-cache runtime is refused at
      // admission (scale-carried-out.test.ts), one of a plain initializer is carried out.
      const withInit = parse(
        readFileSync(path.join(upstreamDir, 'runtimes/torch_distributed_with_cache.yaml'), 'utf8'),
      );
      withInit.metadata.name = 'torch-distributed-with-initializer';
      for (const r of withInit.spec.template.spec.replicatedJobs)
        for (const c of r.template.spec.template.spec.containers)
          c.env = (c.env ?? []).filter((e: { name: string }) => e.name !== 'CACHE_IMAGE');
      await w.cp.applyYaml(stringify(withInit));
      // The runtime's initializer runs as this ServiceAccount (Trainer's manifests make it).
      await w.cp.kubectl(['create', 'serviceaccount', 'kubeflow-trainer-cache-initializer', '-n', ns]);
      // torch-distributed whose node Job gives up at the first failed pod (the stock one retries 6 times).
      const runtime = parse(readFileSync(path.join(upstreamDir, 'runtimes/torch_distributed.yaml'), 'utf8'));
      runtime.kind = 'TrainingRuntime';
      runtime.metadata = { name: 'torch-no-retry', namespace: ns };
      runtime.spec.template.spec.replicatedJobs[0].template.spec.backoffLimit = 0;
      await w.cp.applyYaml(stringify(runtime));
      sidecar = await startWorldReconciler(w);
    });
    after(async () => {
      if (process.exitCode && w) process.stderr.write(w.cp.logTails(30));
      await w?.stop();
    });

    it('a runtime with a dataset initializer (the data-cache runtime without its cache): the initializer has finished (its Job Complete and unsuspended), suspend, scale 1 -> 2, resume: rebuilt, 2 nodes run', async (t) => {
      const world = pods(w.cp);
      let ended = false;
      t.after(async () => {
        // What the world looked like, when this flow did not end as expected.
        if (!ended) {
          const got = await w.cp.kubectl(['get', 'jobsets,jobs,pods', '-n', ns, '-o', 'wide'], { check: false });
          const events = await w.cp.kubectl(['get', 'events', '-n', ns, '--sort-by=.lastTimestamp'], { check: false });
          process.stderr.write(
            `${got.stdout}\n${events.stdout.split('\n').slice(-40).join('\n')}\n${JSON.stringify(await report('cache'))}\n`,
          );
        }
      });
      await create(
        torchTrainJob('cache', ns, { suspend: false, runtimeRef: { name: 'torch-distributed-with-initializer' } }),
      );
      const old = await a.waitJobSet(ns, 'cache', 'built with 1 node', (js) => parallelism(js) === 1);
      await world.waitJobSetRunning(ns, 'cache', 1, 'node');
      const [initializer] = await world.ofJobSet(ns, 'cache', 'dataset-initializer');
      assert.equal(initializer?.status?.phase, 'Succeeded');

      await patch('cache', { spec: { suspend: true } });
      await a.waitJobSet(ns, 'cache', 'suspended', (js) => js.spec?.suspend === true);
      // JobSet suspends only the Jobs that are still active: the finished initializer keeps suspend: false.
      const jobs = await waitFor('the node Job suspended, the initializer Job Complete and not suspended', async () => {
        const items = (
          await a.batch.listNamespacedJob({ namespace: ns, labelSelector: 'jobset.sigs.k8s.io/jobset-name=cache' })
        ).items;
        const init = items.find(
          (j) => j.metadata?.labels?.['jobset.sigs.k8s.io/replicatedjob-name'] === 'dataset-initializer',
        );
        const node = items.find((j) => j.metadata?.labels?.['jobset.sigs.k8s.io/replicatedjob-name'] === 'node');
        const complete = init?.status?.conditions?.some((c) => c.type === 'Complete' && c.status === 'True');
        return complete && init?.spec?.suspend === false && node?.spec?.suspend === true ? items : undefined;
      });
      assert.equal(jobs.length, 2);

      await patch('cache', { spec: { trainer: { numNodes: 2 } } });
      const rebuilt = await a.waitJobSet(
        ns,
        'cache',
        're-created with 2 nodes',
        (js) => js.metadata.uid !== old.metadata.uid && parallelism(js) === 2,
        90_000,
      );
      assert.equal(rebuilt.spec?.suspend, true);
      await waitFor('the Rebuilt report', async () =>
        (await report('cache'))?.state === 'Rebuilt' ? true : undefined,
      );

      await patch('cache', { spec: { suspend: false } });
      await world.waitJobSetRunning(ns, 'cache', 2, 'node', 90_000);
      assert.equal((await a.getJobSet(ns, 'cache'))?.metadata.uid, rebuilt.metadata.uid);
      ended = true;
    });

    it('a TrainJob Failed by its Job (not by its deadline): suspended, scaled 1 -> 2 and resumed, it is rebuilt (its Failed Job unsuspended, its Failed pod kept) and runs 2 nodes', async () => {
      const world = pods(w.cp);
      await create(
        torchTrainJob('failed', ns, {
          suspend: false,
          runtimeRef: { name: 'torch-no-retry', kind: 'TrainingRuntime', apiGroup: 'trainer.kubeflow.org' },
        }),
      );
      const old = await a.waitJobSet(ns, 'failed', 'running with 1 node', (js) => parallelism(js) === 1);
      await world.waitJobSetRunning(ns, 'failed', 1, 'node');
      await world.endJobSetTraining(ns, 'failed', 'Failed', 'node');
      const failed = await waitFor(
        'the TrainJob Failed',
        async () => {
          const c = (await getTj('failed')).status?.conditions?.find((x) => x.type === 'Failed' && x.status === 'True');
          return c;
        },
        { timeoutMs: 60_000 },
      );
      assert.notEqual(failed.reason, 'DeadlineExceeded');

      await patch('failed', { spec: { suspend: true } });
      await a.waitJobSet(ns, 'failed', 'suspended', (js) => js.spec?.suspend === true);
      await patch('failed', { spec: { trainer: { numNodes: 2 } } });
      const rebuilt = await a.waitJobSet(
        ns,
        'failed',
        're-created with 2 nodes',
        (js) => js.metadata.uid !== old.metadata.uid && parallelism(js) === 2,
        90_000,
      );
      assert.equal(rebuilt.spec?.suspend, true);
      await patch('failed', { spec: { suspend: false } });
      await world.waitJobSetRunning(ns, 'failed', 2, 'node', 90_000);
      await waitFor('the Failed condition gone (Trainer reconciled it again)', async () =>
        (await getTj('failed')).status?.conditions?.some((x) => x.type === 'Failed' && x.status === 'True')
          ? undefined
          : true,
      );
    });

    it('one rebuild of a suspended torch job (1 -> 2) costs a handful of requests: no GET of TrainJobs, JobSets or Jobs; one live LIST of Jobs and of pods, before the delete', async () => {
      await create(torchTrainJob('cost', ns));
      const old = await a.waitJobSet(ns, 'cost', 'built with 1 node', (js) => parallelism(js) === 1);
      // Let the creation's reconciles finish: the count starts from a quiet sidecar.
      await sidecar.reconciled('rebuild-cost/cost', (l) => l.outcome === 'current');
      await new Promise((r) => setTimeout(r, 2_000));
      const start = await requestCounts(sidecar);
      await patch('cost', { spec: { trainer: { numNodes: 2 } } });
      await a.waitJobSet(
        ns,
        'cost',
        're-created with 2 nodes',
        (js) => js.metadata.uid !== old.metadata.uid && parallelism(js) === 2,
      );
      await waitFor('the Rebuilt report', async () => ((await report('cost'))?.state === 'Rebuilt' ? true : undefined));
      await sidecar.reconciled('rebuild-cost/cost', (l) => l.outcome === 'rebuilt');
      // The re-created JobSet's own events (its Jobs, Trainer's status writes) settle.
      await new Promise((r) => setTimeout(r, 3_000));
      const cost = delta(start, await requestCounts(sidecar));
      const reconciles = sidecar
        .logLines()
        .filter((l) => l.msg === 'reconciled' && l.trainJob === 'rebuild-cost/cost').length;
      process.stdout.write(
        `# one rebuild (companion, torch 1 -> 2, suspended): ${total(cost)} API requests ${JSON.stringify(cost)}\n`,
      );
      process.stdout.write(`#   reconciles of the key logged so far: ${reconciles}\n`);

      // What is watched is read from the caches, except the live read the delete rests on (the
      // TrainJob, the JobSet's Jobs and pods), once; the JobSet is pinned by the delete's preconditions.
      for (const k of ['get jobsets', 'get jobs', 'list jobsets', 'list trainjobs'])
        assert.equal(cost[k] ?? 0, 0, `${k}: ${JSON.stringify(cost)}`);
      assert.equal(cost['get trainjobs'], 1, JSON.stringify(cost));
      assert.equal(cost['delete jobsets'], 1, JSON.stringify(cost));
      assert.equal(cost['list pods'], 1, JSON.stringify(cost));
      assert.equal(cost['list jobs'], 1, JSON.stringify(cost));
      // Trainer's runtime snapshot: remembered per TrainJob, read live again before the delete (a
      // second read only if the first look found no snapshot yet).
      assert.ok((cost['get configmaps'] ?? 0) + (cost['get clustertrainingruntimes'] ?? 0) <= 2, JSON.stringify(cost));
    });
  },
);
