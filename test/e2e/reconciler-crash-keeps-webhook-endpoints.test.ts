// Issue 18: the layout's wiring. With failurePolicy: Fail the API server can call the webhook only
// through the ready endpoints of its Service, which the real kube-controller-manager's
// EndpointSlice controller writes from each pod's Ready condition (k8s.io/endpointslice v0.35.8
// utils.go podToEndpoint: `serving := IsPodReady(pod)`, `ready := serving && !terminating`); a
// pod is Ready only while every container is (the kubelet's rules, which the crash stage follows:
// support/kwok-crash-loop-stage.yaml). So the rendered Deployments of each layout run as pods on
// KWOK nodes of this test's own kwok process (the harness's stages plus that crash stage); once
// every pod's reconciler container is in CrashLoopBackOff after an OOM kill, the webhook's
// EndpointSlices are read back: in the default layout (manifests/: the reconciler's own
// Deployment) its endpoints stay ready while the reconciler's pods are NotReady; in the sidecar
// layout (overlays/sidecar) none is left ready, which is what would refuse every TrainJob write.
// No serve or reconcile process runs here: the kubelet's part is KWOK's, the rest the real
// control plane's (admission-survives-reconciler.test.ts runs the processes).
import assert from 'node:assert/strict';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it, type TestContext } from 'node:test';
import {
  controlPlaneAvailability,
  locateControlPlaneBinaries,
  NODE_LABEL,
  nodeObject,
  stagesFile,
  startControlPlane,
  waitFor,
  type ControlPlane,
} from '../harness/index.ts';
import { kwokArgs } from '../harness/flags.ts';
import { byKind, manifestsDir, renderOverlay, toYaml, type Obj } from './support/install.ts';

const availability = controlPlaneAvailability();
const NS = 'kubeflow-system';
const CRASH_STAGE = path.join(path.dirname(fileURLToPath(import.meta.url)), 'support/kwok-crash-loop-stage.yaml');
const CRASH_ANNOTATION = 'world.trainjob-webhook.test/crash-containers';
/** This test's nodes: the harness's kwok does not manage them (they lack NODE_LABEL), its own kwok does. */
const CRASH_WORLD = { key: 'world.trainjob-webhook.test/crash-world', value: 'true' };
const NODES = ['crash-0', 'crash-1', 'crash-2'];

type Endpoint = { ready: boolean; serving: boolean; pod: string };

describe(
  "a crash-looping reconciler and the webhook's endpoints: the rendered layouts as KWOK pods, read back through pod conditions and EndpointSlices",
  { skip: availability.available ? false : availability.reason },
  () => {
    let cp: ControlPlane;

    before(async () => {
      // The harness's world with no nodes of its own: its kwok manages nothing here.
      cp = await startControlPlane({ world: { nodes: [] } });
      const kwok = locateControlPlaneBinaries();
      if (!kwok.found) throw new Error(`binaries missing: ${kwok.missing.join(', ')}`);
      const proc = cp.startProcess(
        'kwok-crash',
        kwok.paths.kwok,
        [
          ...kwokArgs({
            kubeconfig: cp.kubeconfigPath,
            configFile: stagesFile,
            nodeLabelSelector: `${CRASH_WORLD.key}=${CRASH_WORLD.value}`,
          }),
          `--config=${CRASH_STAGE}`,
        ],
        { env: cp.childEnv() },
      );
      for (const name of NODES) {
        const node = nodeObject({ name }) as Obj;
        delete node.metadata.labels[NODE_LABEL.key];
        node.metadata.labels[CRASH_WORLD.key] = CRASH_WORLD.value;
        await cp.kubectl(['create', '-f', '-'], { input: JSON.stringify(node) });
      }
      await waitFor(
        'the crash world nodes Ready and untainted',
        async () => {
          const out = JSON.parse((await cp.kubectl(['get', 'nodes', '-o', 'json'])).stdout) as { items: Obj[] };
          return (
            out.items.filter(
              (n) =>
                n.status?.conditions?.some((c: Obj) => c.type === 'Ready' && c.status === 'True') &&
                !(n.spec.taints ?? []).some((t: Obj) => t.key === 'node.kubernetes.io/not-ready'),
            ).length === NODES.length
          );
        },
        { process: proc, timeoutMs: 60_000 },
      );
      await cp.kubectl(['create', 'namespace', NS]);
    });
    after(async () => {
      if (process.exitCode && cp) process.stderr.write(cp.logTails(30));
      await cp?.stop();
    });

    const podsOf = async (app: string): Promise<Obj[]> =>
      (
        JSON.parse(
          (await cp.kubectl(['get', 'pods', '-n', NS, '-l', `app.kubernetes.io/name=${app}`, '-o', 'json'])).stdout,
        ) as { items: Obj[] }
      ).items.filter((p) => !p.metadata.deletionTimestamp);
    const condition = (pod: Obj, type: string) => pod.status?.conditions?.find((c: Obj) => c.type === type);
    /** The webhook Service's endpoints as the EndpointSlice controller wrote them. */
    const webhookEndpoints = async (): Promise<Endpoint[]> => {
      const slices = JSON.parse(
        (
          await cp.kubectl([
            'get',
            'endpointslices',
            '-n',
            NS,
            '-l',
            'kubernetes.io/service-name=trainjob-webhook',
            '-o',
            'json',
          ])
        ).stdout,
      ) as { items: Obj[] };
      return slices.items.flatMap((s) =>
        (s.endpoints ?? []).map((e: Obj) => ({
          ready: e.conditions?.ready === true,
          serving: e.conditions?.serving === true,
          pod: e.targetRef?.name,
        })),
      );
    };

    /**
     * Applies the rendered overlay (without its webhook configurations: no serve runs to answer
     * them), waits until every Deployment's pods are Ready and the webhook's endpoints ready, then
     * puts every pod's reconciler container into CrashLoopBackOff; returns what the pods and the
     * EndpointSlices say once the crash stage has acted on every pod that has such a container.
     */
    async function crashReconcilers(t: TestContext, overlay: string) {
      const docs = (await renderOverlay(cp, path.join(manifestsDir, overlay))).filter(
        (d) => !/WebhookConfiguration$/.test(d.kind),
      );
      await cp.applyYaml(toYaml(docs));
      const deployments = byKind(docs, 'Deployment');
      const apps = deployments.map((d) => d.spec.selector.matchLabels['app.kubernetes.io/name'] as string);
      for (const d of deployments)
        await waitFor(`${d.metadata.name}: ${d.spec.replicas} pods Ready`, async () => {
          const ready = (await podsOf(d.spec.selector.matchLabels['app.kubernetes.io/name'])).filter(
            (p) => condition(p, 'Ready')?.status === 'True',
          );
          return ready.length === d.spec.replicas;
        });
      const webhookReplicas = byKind(docs, 'Deployment', 'trainjob-webhook')[0].spec.replicas as number;
      const before = await waitFor('the webhook endpoints ready', async () => {
        const eps = await webhookEndpoints();
        return eps.filter((e) => e.ready).length === webhookReplicas ? eps : undefined;
      });
      // The reconciler fails in every pod that runs it (OOM-killed, then backed off).
      const crashing: string[] = [];
      for (const app of apps)
        for (const p of await podsOf(app)) {
          if (!p.spec.containers.some((c: Obj) => c.name === 'reconciler')) continue;
          crashing.push(p.metadata.name);
          await cp.kubectl(['annotate', 'pod', p.metadata.name, '-n', NS, `${CRASH_ANNOTATION}=reconciler`]);
        }
      assert.ok(crashing.length >= 2, `${overlay || 'manifests/'}: reconciler containers to crash (${crashing})`);
      const crashed = await waitFor('every reconciler container in CrashLoopBackOff', async () => {
        const all = (await Promise.all(apps.map(podsOf))).flat();
        const hit = all.filter((p) => crashing.includes(p.metadata.name));
        const done = hit.every((p) =>
          p.status?.containerStatuses?.some(
            (s: Obj) => s.name === 'reconciler' && s.state?.waiting?.reason === 'CrashLoopBackOff' && !s.ready,
          ),
        );
        return done ? all : undefined;
      });
      // The EndpointSlice controller acts on the pods' updates within a second or so; allow it
      // time to have written whatever it will write (waiting for a change that must not come).
      await new Promise((r) => setTimeout(r, 3_000));
      const after = await webhookEndpoints();
      t.diagnostic(
        `${overlay || 'manifests/ (default)'}: webhook endpoints before ${JSON.stringify(before)}, after ${JSON.stringify(after)}; ` +
          `pods Ready: ${crashed.map((p) => `${p.metadata.name}=${condition(p, 'Ready')?.status}`).join(', ')}`,
      );
      return { docs, crashed, crashing, after, webhookReplicas };
    }

    async function uninstall(docs: Obj[]) {
      await cp.kubectl(['delete', '-f', '-', '--ignore-not-found', '--wait=true'], { input: toYaml(docs) });
    }

    it("the default layout: the reconciler's own pods go NotReady (ContainersNotReady), the webhook's pods stay Ready and its endpoints stay ready", async (t) => {
      const r = await crashReconcilers(t, '');
      for (const p of r.crashed) {
        const isReconciler = p.metadata.labels['app.kubernetes.io/name'] === 'trainjob-webhook-reconciler';
        const ready = condition(p, 'Ready');
        if (isReconciler) {
          assert.deepEqual(
            [ready?.status, ready?.reason, ready?.message],
            ['False', 'ContainersNotReady', 'containers with unready status: [reconciler]'],
            `${p.metadata.name}: NotReady as a kubelet reports it`,
          );
        } else assert.equal(ready?.status, 'True', `${p.metadata.name}: the webhook's pod has no reconciler to lose`);
      }
      assert.ok(
        r.crashing.every((n) => n.startsWith('trainjob-webhook-reconciler-')),
        'only the reconciler Deployment runs the reconciler',
      );
      assert.equal(r.after.length, r.webhookReplicas, "the Service selects the webhook's pods alone");
      assert.equal(r.after.filter((e) => e.ready).length, r.webhookReplicas, 'every webhook endpoint still ready');
      await uninstall(r.docs);
    });

    it('the sidecar layout, for contrast: every webhook pod goes NotReady with its sidecar and no webhook endpoint is ready', async (t) => {
      const r = await crashReconcilers(t, 'overlays/sidecar');
      for (const p of r.crashed)
        assert.equal(condition(p, 'Ready')?.status, 'False', `${p.metadata.name}: NotReady with its sidecar`);
      assert.equal(r.after.length, r.webhookReplicas, 'the endpoints are listed, not ready');
      assert.deepEqual(
        r.after.filter((e) => e.ready),
        [],
        'no ready endpoint left: with failurePolicy: Fail every TrainJob create and spec update would be refused',
      );
      assert.ok(
        r.after.every((e) => !e.serving),
        'not serving either',
      );
      await uninstall(r.docs);
    });
  },
);
