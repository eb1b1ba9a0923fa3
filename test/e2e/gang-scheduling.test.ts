// Gang scheduling follows the count: a TrainJob whose runtime has a podGroupPolicy, scaled around a
// suspension and resumed before its JobSet is re-created, gets a PodGroup with the new minMember and
// its new pods run. Beside the real Trainer v2.3.0 and JobSet v0.12.0 managers, scheduler-plugins'
// scheduler (Coscheduling, v0.35.4-devel) binding the pods to KWOK nodes, and the sidecar with the
// project's RBAC. Trainer re-applies an existing PodGroup only while the TrainJob is suspended and
// stops at its first failed apply, in a plugin order fixed per process (a Go map): Trainer is
// restarted before every round so that each round meets a fresh order. Without the sidecar's
// PodGroup delete, the one-update round fails every time and the others about half the time.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import {
  controlPlaneAvailability,
  coschedulingAvailability,
  ensureControllerBinaries,
  startTrainerController,
  upstreamControllersAvailability,
  waitFor,
} from '../harness/index.ts';
import type { TrainJob } from '../../src/api/objects.ts';
import { startSidecar, type Sidecar } from '../reconciler/support/sidecar.ts';
import {
  api,
  GANG_RUNTIMES,
  inNamespace,
  parallelism,
  RECONCILER_SA,
  startWorld,
  torchTrainJob,
  type World,
} from '../reconciler/support/world.ts';

const controlPlane = controlPlaneAvailability();
const controllers = upstreamControllersAvailability();
const cosched = coschedulingAvailability();
const skip = [controlPlane, controllers, cosched].find((a) => !a.available);

const POD_GROUPS = {
  coscheduling: { group: 'scheduling.x-k8s.io', version: 'v1alpha1', plural: 'podgroups' },
  volcano: { group: 'scheduling.volcano.sh', version: 'v1beta1', plural: 'podgroups' },
} as const;

describe(
  'gang scheduling: the PodGroup follows the count through a rebuild',
  { skip: skip && !skip.available ? skip.reason : false },
  () => {
    let w: World;
    let a: ReturnType<typeof api>;
    let _sidecar: Sidecar;
    const ns = 'gang';
    const { getTj, create, patch } = inNamespace(ns, () => w);

    const minMember = async (scheduler: keyof typeof POD_GROUPS, name: string): Promise<number | undefined> => {
      try {
        const pg = (await a.objects.getNamespacedCustomObject({ ...POD_GROUPS[scheduler], namespace: ns, name })) as {
          spec?: { minMember?: number };
          metadata: { deletionTimestamp?: string };
        };
        return pg.metadata.deletionTimestamp ? undefined : pg.spec?.minMember;
      } catch (err) {
        if ((err as { code?: number }).code === 404) return undefined;
        throw err;
      }
    };
    /** The JobSet's pods that are not being deleted, as phases. */
    const phases = async (name: string) =>
      (await a.pods(ns, name)).filter((p) => !p.metadata?.deletionTimestamp).map((p) => p.status?.phase);
    const waitRunning = (name: string, n: number, timeoutMs = 60_000) =>
      waitFor(
        `${n} pods of ${name} Running`,
        async () => {
          const p = await phases(name);
          return p.length === n && p.every((x) => x === 'Running') ? p : undefined;
        },
        { timeoutMs },
      );
    /** Trainer's log lines for this TrainJob that say JobSet's webhook refused its apply. */
    const trainerRefusals = (name: string) =>
      readFileSync(w.upstream.trainer!.process.logFile, 'utf8')
        .split('\n')
        .filter((l) => l.includes(`"name":"${name}"`) && /denied the request.*field is immutable/.test(l)).length;
    const restartTrainer = async () => {
      await w.upstream.trainer!.stop();
      w.upstream.trainer = await startTrainerController(w.cp, await ensureControllerBinaries());
    };
    const gangJob = (name: string, numNodes: number, runtime: string, suspend: boolean): TrainJob => {
      const tj = torchTrainJob(name, ns, { suspend, runtimeRef: { name: runtime } });
      tj.spec!.trainer!.numNodes = numNodes;
      return tj;
    };
    const outcome = async (name: string, scheduler: keyof typeof POD_GROUPS = 'coscheduling') =>
      `${name}: PodGroup minMember ${await minMember(scheduler, name)}, JobSet parallelism ${parallelism(await a.getJobSet(ns, name))}, pods ${JSON.stringify(await phases(name))}`;

    before(async () => {
      w = await startWorld({ trainer: true, webhook: true, gang: true });
      a = api(w.cp);
      await w.cp.kubectl(['create', 'namespace', ns]);
      // The world stops it; its log is in the control plane's logs.
      _sidecar = await startSidecar(w.cp, {
        name: 'reconciler',
        mode: 'companion',
        kubeconfig: w.reconcilerKubeconfig.path,
        leaseNamespace: RECONCILER_SA.namespace,
        handoffPort: w.handoffPort,
      });
    });
    after(async () => {
      if (process.exitCode && w) process.stderr.write(w.cp.logTails(30));
      await w?.stop();
    });

    // Running at `from`; suspended while a pod is kept Terminating (so the rebuild waits); scaled,
    // and Trainer's refused apply seen (it reconciled the suspended, scaled job: the PodGroup is
    // re-applied there only if its plugin comes before JobSet's); resumed; the pod let go.
    const scaleAround = (from: number, to: number) => async () => {
      const name = `scale-${from}-${to}`;
      await restartTrainer();
      await create(gangJob(name, from, GANG_RUNTIMES.coscheduling, false));
      await waitRunning(name, from);
      assert.equal(await minMember('coscheduling', name), from);
      const old = await a.getJobSet(ns, name);
      const held = await a.holdFirstPod(ns, name);
      await patch(name, { spec: { suspend: true } });
      await a.waitJobSet(ns, name, 'suspended by Trainer', (js) => js.spec?.suspend === true);
      const refusals = trainerRefusals(name);
      await patch(name, { spec: { trainer: { numNodes: to } } });
      await waitFor("Trainer's refused apply of the new count", () => trainerRefusals(name) > refusals);
      await patch(name, { spec: { suspend: false } });
      await held.release();
      await a.waitJobSet(
        ns,
        name,
        `re-created with ${to} nodes`,
        (js) => js.metadata.uid !== old?.metadata.uid && parallelism(js) === to,
      );
      const got = await waitFor(
        `minMember ${to}`,
        async () => ((await minMember('coscheduling', name)) === to ? to : undefined),
        {
          timeoutMs: 20_000,
        },
      ).catch(async () => assert.fail(await outcome(name)));
      assert.equal(got, to);
      await waitRunning(name, to, 60_000).catch(async () => assert.fail(await outcome(name)));
      process.stdout.write(`# ${await outcome(name)}\n`);
    };

    it(
      '4 -> 2 around a suspension, resumed before the re-creation: minMember 2 and the 2 new pods Running',
      scaleAround(4, 2),
    );
    it(
      '2 -> 4 around a suspension, resumed before the re-creation: minMember 4 and the 4 new pods Running',
      scaleAround(2, 4),
    );

    it('suspended at 4, then one update that resumes and scales to 2: minMember 2 and the 2 new pods Running', async () => {
      const name = 'one-update';
      await restartTrainer();
      await create(gangJob(name, 4, GANG_RUNTIMES.coscheduling, false));
      await waitRunning(name, 4);
      await patch(name, { spec: { suspend: true } });
      await waitFor('its pods gone', async () => ((await a.pods(ns, name)).length === 0 ? true : undefined));
      const old = await a.getJobSet(ns, name);
      assert.equal(old?.spec?.suspend, true);
      await patch(name, { spec: { suspend: false, trainer: { numNodes: 2 } } });
      await a.waitJobSet(
        ns,
        name,
        're-created with 2 nodes',
        (js) => js.metadata.uid !== old?.metadata.uid && parallelism(js) === 2,
      );
      await waitFor('minMember 2', async () => ((await minMember('coscheduling', name)) === 2 ? true : undefined), {
        timeoutMs: 20_000,
      }).catch(async () => assert.fail(await outcome(name)));
      await waitRunning(name, 2).catch(async () => assert.fail(await outcome(name)));
      process.stdout.write(`# ${await outcome(name)}\n`);
    });

    it('Volcano (by value, no Volcano scheduler): suspended at 2, one update resumes and scales to 3: minMember 3', async () => {
      const name = 'volcano';
      await restartTrainer();
      await create(gangJob(name, 2, GANG_RUNTIMES.volcano, true));
      const old = await a.waitJobSet(ns, name, 'built with 2 nodes', (js) => parallelism(js) === 2);
      await waitFor('Volcano PodGroup minMember 2', async () =>
        (await minMember('volcano', name)) === 2 ? true : undefined,
      );
      await patch(name, { spec: { suspend: false, trainer: { numNodes: 3 } } });
      await a.waitJobSet(
        ns,
        name,
        're-created with 3 nodes',
        (js) => js.metadata.uid !== old.metadata.uid && parallelism(js) === 3,
      );
      await waitFor('minMember 3', async () => ((await minMember('volcano', name)) === 3 ? true : undefined), {
        timeoutMs: 20_000,
      }).catch(async () => assert.fail(await outcome(name, 'volcano')));
      // The report turns Rebuilt on the sidecar's next reconcile after the re-creation.
      await waitFor('the Rebuilt report', async () => a.report(await getTj(name))?.state === 'Rebuilt');
    });
  },
);
