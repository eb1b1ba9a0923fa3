// Issue 4, flow 5: the sidecar killed with SIGKILL in the middle of a rebuild and started again
// converges to exactly one correct JobSet (companion and standalone); two sidecars at once
// converge too (one leads through the Lease; a killed leader is replaced once its Lease expires);
// and even without the Lease, the delete preconditions keep a second sidecar from deleting the
// re-created JobSet.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { controlPlaneAvailability, upstreamControllersAvailability, waitFor, skipUnless } from '../harness/index.ts';
import { microTime } from '../../src/reconciler/lease.ts';
import { startSidecar, type Sidecar } from '../reconciler/support/sidecar.ts';
import { killRounds } from '../faults/kill-rounds.ts';
import {
  api,
  envValue,
  parallelism,
  RECONCILER_SA,
  inNamespace,
  startWorld,
  torchTrainJob,
  torchtuneVariant,
  type World,
} from '../reconciler/support/world.ts';

const skip = skipUnless(controlPlaneAvailability(), upstreamControllersAvailability());

/**
 * The sidecars' leader-election timing here (ms: lease duration, renew deadline, retry period;
 * the test entry's --lease-timing): the logic is client-go's whatever the durations, and a
 * takeover then waits 6 s instead of the shipped 15 s (three takeovers and one renew deadline
 * per run). The shipped 15 s / 10 s / 2 s are checked in test/reconciler/config.test.ts.
 */
const LEASE_TIMING = ['--lease-timing', '6000,4000,1000'];
/** Generous bound on a takeover: the lease duration plus retry periods and much slack. */
const TAKEOVER_MS = 30_000;

describe('reconciler resilience: SIGKILL mid-rebuild, two sidecars', { skip }, () => {
  let w: World;
  let a: ReturnType<typeof api>;
  const ns = 'resilience';
  const { getTj, create, patch } = inNamespace(ns, () => w);
  const sidecarOf = (name: string, mode: 'companion' | 'standalone', extraArgs: string[] = [], waitReady = true) =>
    startSidecar(w.cp, {
      name,
      mode,
      kubeconfig: w.reconcilerKubeconfig.path,
      leaseNamespace: RECONCILER_SA.namespace,
      extraArgs: [...LEASE_TIMING, ...extraArgs],
      waitReady,
    });
  const deletions = (s: Sidecar, name: string) =>
    s.logLines().filter((l) => /stale JobSet deleted/.test(String(l.msg)) && l.trainJob === `${ns}/${name}`).length;
  /** Exactly one JobSet of that name, and it stays the same one. */
  const settledOn = async (name: string, count: number) => {
    const js = await a.waitJobSet(
      ns,
      name,
      `with ${count} nodes`,
      (j) => parallelism(j) === count,
      TAKEOVER_MS + 30_000,
    );
    await new Promise((r) => setTimeout(r, 3_000));
    const again = await a.getJobSet(ns, name);
    assert.equal(again?.metadata.uid, js.metadata.uid, 'no further rebuild');
    assert.equal(envValue(again, 'PET_NNODES'), String(count));
    const all = (await a.objects.listNamespacedCustomObject({
      group: 'jobset.x-k8s.io',
      version: 'v1alpha2',
      namespace: ns,
      plural: 'jobsets',
    })) as { items: { metadata: { name: string } }[] };
    assert.equal(all.items.filter((j) => j.metadata.name === name).length, 1);
    return again!;
  };

  before(async () => {
    w = await startWorld({ trainer: true, webhook: false });
    a = api(w.cp);
    await w.cp.kubectl(['create', 'namespace', ns]);
    // In the world, claims of the default class are bound at once, and a bound claim's spec never
    // equals the template again (JobSet then refuses any re-creation: Blocked). A class that binds
    // only for a first consumer leaves the claim of a suspended job unbound, so it can be kept.
    await w.cp.applyYaml(
      '{"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":"wait-for-consumer"},"provisioner":"kwok.x-k8s.io/volume","volumeBindingMode":"WaitForFirstConsumer"}\n',
    );
    await w.cp.applyYaml(
      torchtuneVariant('retain-unbound', 'Retain', { volumeMode: 'Filesystem', storageClassName: 'wait-for-consumer' }),
    );
  });
  after(async () => {
    if (process.exitCode && w) process.stderr.write(w.cp.logTails(20));
    await w?.stop();
  });

  it('companion: killed with SIGKILL right after deleting the stale JobSet (workspace PVC kept, Lease still held), restarted: one JobSet with the new count, the same PVC, the report completed', async () => {
    await create({
      apiVersion: 'trainer.kubeflow.org/v1alpha1',
      kind: 'TrainJob',
      metadata: { name: 'k1', namespace: ns },
      spec: { runtimeRef: { name: 'torchtune-llama3.2-1b-retain-unbound' }, suspend: true, trainer: { numNodes: 1 } },
    });
    const old = await a.waitJobSet(ns, 'k1', 'built', (j) => parallelism(j) === 1);
    const claim = await waitFor('the workspace PVC', () => a.pvc(ns, 'initializer-k1').catch(() => undefined));
    const crashing = await sidecarOf('crashing', 'companion', ['--crash-after', 'delete-jobset']);
    await patch('k1', { spec: { trainer: { numNodes: 2 } } });
    const status = await crashing.proc.exited;
    assert.equal(status.signal, 'SIGKILL');
    assert.equal(deletions(crashing, 'k1'), 1);
    assert.equal(a.report(await getTj('k1'))?.state, 'Rebuilding', 'the report was written before the delete');

    const restarted = await sidecarOf('restarted', 'companion');
    const js = await settledOn('k1', 2);
    assert.notEqual(js.metadata.uid, old.metadata.uid);
    assert.equal((await a.pvc(ns, 'initializer-k1')).metadata?.uid, claim.metadata?.uid);
    await waitFor(
      'the Rebuilt report (once the restarted sidecar holds the Lease)',
      async () => a.report(await getTj('k1'))?.state === 'Rebuilt',
      { timeoutMs: TAKEOVER_MS },
    );
    assert.equal(deletions(restarted, 'k1'), 0, 'the restarted sidecar did not delete again');
    const stopped = await restarted.proc.stop();
    assert.deepEqual([stopped.code, stopped.signal], [0, null], 'SIGTERM: drained, Lease released, exit 0');
    assert.ok(restarted.logLines().some((l) => l.msg === 'leader election: released the Lease'));
  });

  it('two sidecars at once: one leads, each stale JobSet is deleted exactly once; the leader killed with SIGKILL is replaced and the next scale converges', async () => {
    const [b, c] = await Promise.all([sidecarOf('sidecar-b', 'companion'), sidecarOf('sidecar-c', 'companion')]);
    const leader = await waitFor(
      'one leader',
      async () => {
        const lead = [
          (await b.metric('trainjob_reconciler_leader')) === 1,
          (await c.metric('trainjob_reconciler_leader')) === 1,
        ];
        return lead.filter(Boolean).length === 1 ? (lead[0] ? b : c) : undefined;
      },
      { timeoutMs: TAKEOVER_MS },
    );
    const follower = leader === b ? c : b;
    for (const name of ['p1', 'p2']) await create(torchTrainJob(name, ns));
    for (const name of ['p1', 'p2']) await a.waitJobSet(ns, name, 'built', (j) => parallelism(j) === 1);
    await Promise.all(['p1', 'p2'].map((name) => patch(name, { spec: { trainer: { numNodes: 2 } } })));
    await Promise.all(['p1', 'p2'].map((name) => settledOn(name, 2)));
    for (const name of ['p1', 'p2']) {
      assert.equal(deletions(leader, name) + deletions(follower, name), 1, `${name} deleted exactly once`);
      assert.equal(deletions(follower, name), 0);
    }

    leader.proc.kill('SIGKILL');
    await leader.proc.exited;
    await waitFor(
      'the follower takes over once the Lease expires',
      async () => (await follower.metric('trainjob_reconciler_leader')) === 1,
      { timeoutMs: TAKEOVER_MS },
    );
    await patch('p1', { spec: { trainer: { numNodes: 3 } } });
    await settledOn('p1', 3);
    assert.equal(deletions(follower, 'p1'), 1);
    await follower.proc.stop();
  });

  it('a leader whose Lease is taken (another holder keeps renewing it past the renew deadline) stops acting and stays up (a sidecar that exits makes the webhook pod NotReady); once the Lease is free again it leads and rebuilds', async () => {
    const LEASE_NAME = 'trainjob-webhook-reconciler';
    const leases = {
      group: 'coordination.k8s.io',
      version: 'v1',
      plural: 'leases',
      namespace: RECONCILER_SA.namespace,
      name: LEASE_NAME,
    };
    type Lease = { metadata: Record<string, unknown>; spec: Record<string, unknown> };
    const lease = () => a.objects.getNamespacedCustomObject(leases) as Promise<Lease>;
    const write = async (holderIdentity: string, leaseDurationSeconds: number) => {
      const l = await lease();
      await a.objects.replaceNamespacedCustomObject({
        ...leases,
        body: { ...l, spec: { ...l.spec, holderIdentity, leaseDurationSeconds, renewTime: microTime(Date.now()) } },
      });
    };
    const s = await sidecarOf('robbed', 'companion');
    await waitFor('it leads', async () => (await s.metric('trainjob_reconciler_leader')) === 1, {
      timeoutMs: TAKEOVER_MS,
    });
    // Another holder renews every second: the sidecar's renewals see a live foreign holder and wait.
    let stealing = true;
    const thief = (async () => {
      while (stealing) {
        await write('thief', 15).catch(() => undefined);
        await new Promise((r) => setTimeout(r, 1_000));
      }
    })();
    try {
      await waitFor('it stops acting', async () => (await s.metric('trainjob_reconciler_leader')) === 0, {
        timeoutMs: TAKEOVER_MS,
      });
      assert.ok(s.logLines().some((l) => /stopped acting, campaigning again/.test(String(l.msg))));
      await create(torchTrainJob('r1', ns));
      const old = await a.waitJobSet(ns, 'r1', 'built', (j) => parallelism(j) === 1);
      await patch('r1', { spec: { trainer: { numNodes: 2 } } });
      await new Promise((r) => setTimeout(r, 3_000));
      assert.equal(
        (await a.getJobSet(ns, 'r1'))?.metadata.uid,
        old.metadata.uid,
        'no rebuild while another holds the Lease',
      );
      assert.equal(s.proc.exitStatus, undefined, 'still running: a lost Lease makes it campaign again, not exit');
    } finally {
      stealing = false;
      await thief;
    }
    await write('', 1); // released, as a stopping leader releases it
    await waitFor('it leads again', async () => (await s.metric('trainjob_reconciler_leader')) === 1, {
      timeoutMs: TAKEOVER_MS,
    });
    await settledOn('r1', 2);
    assert.equal(deletions(s, 'r1'), 1);
    assert.equal(s.proc.exitStatus, undefined);
    await s.proc.stop();
  });

  it("without the Lease (--no-leader-election), two sidecars still converge: the delete preconditions (uid, resourceVersion) never let one delete the JobSet re-created after the other's delete", async () => {
    const free = ['--no-leader-election'];
    const [d, e] = await Promise.all([
      sidecarOf('sidecar-d', 'companion', free),
      sidecarOf('sidecar-e', 'companion', free),
    ]);
    for (const name of ['q1', 'q2', 'q3']) await create(torchTrainJob(name, ns));
    for (const name of ['q1', 'q2', 'q3']) await a.waitJobSet(ns, name, 'built', (j) => parallelism(j) === 1);
    await Promise.all(['q1', 'q2', 'q3'].map((name) => patch(name, { spec: { trainer: { numNodes: 2 } } })));
    await Promise.all(['q1', 'q2', 'q3'].map((name) => settledOn(name, 2)));
    await d.proc.stop();
    await e.proc.stop();
  });

  // The fault suite's short form, in this world (its long form: test/faults/reconciler-kills.test.ts).
  it('fault suite: 3 SIGKILLs at named points of rebuilds (pods terminating, right after a delete, right after the suspend): one correct JobSet each round, no JobSet deleted while its pods ran, the claim kept', (t) =>
    killRounds(t, w, {
      ns: 'faults',
      mode: 'companion',
      kills: 3,
      restarts: 0,
      seed: Number(process.env.FAULT_SEED) || Math.floor(Math.random() * 2 ** 31),
    }));

  it('standalone: killed with SIGKILL right after deleting the stale JobSet, restarted: it applies exactly one JobSet with the new count', async () => {
    // Standalone mode is for clusters without Trainer's controller: stop it first.
    await w.upstream.trainer?.stop();
    await create(torchTrainJob('k2', ns));
    const crashing = await sidecarOf('crashing-standalone', 'standalone', ['--crash-after', 'delete-jobset']);
    const old = await a.waitJobSet(ns, 'k2', 'applied', (j) => parallelism(j) === 1, TAKEOVER_MS + 30_000);
    await patch('k2', { spec: { trainer: { numNodes: 2 } } });
    assert.equal((await crashing.proc.exited).signal, 'SIGKILL');
    await waitFor('the old JobSet gone (foreground delete finished)', async () => !(await a.getJobSet(ns, 'k2')));
    await new Promise((r) => setTimeout(r, 2_000));
    assert.equal(await a.getJobSet(ns, 'k2'), undefined, 'nobody re-creates it while the sidecar is down');

    const restarted = await sidecarOf('restarted-standalone', 'standalone');
    const js = await settledOn('k2', 2);
    assert.notEqual(js.metadata.uid, old.metadata.uid);
    await waitFor('the Rebuilt report', async () => a.report(await getTj('k2'))?.state === 'Rebuilt', {
      timeoutMs: TAKEOVER_MS,
    });
    await restarted.proc.stop();
  });
});
