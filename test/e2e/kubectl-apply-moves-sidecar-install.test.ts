// Issue 18: moving an install made while the sidecar was the default (overlays/sidecar renders the
// same objects manifests/ did then) to today's default by applying manifests/ again, as docs/versions.md,
// "Moving an install made before the default layout changed", says, with kubectl as a user runs it: server-side
// (field manager "kubectl", which owned the sidecar's entry of the containers map-list, so the
// apply that no longer names it removes it) and client-side (the last-applied annotation names
// it, so the strategic merge patch deletes it). Against the real API server; no pods run here
// (the roll and the Lease's hand-over are install-layouts' and admission-survives-reconciler's).
// Only the same field manager removes the entry: applied under another (`--field-manager`), the
// sidecar stays; installed client-side and moved server-side, the apply conflicts with
// "kubectl-client-side-apply" on the webhook's env fieldRef (stored with its default apiVersion).
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { controlPlaneAvailability, startControlPlane, type ControlPlane } from '../harness/index.ts';
import { byKind, manifestsDir, renderOverlay, toYaml, type Obj } from './support/install.ts';

const availability = controlPlaneAvailability();
const NS = 'kubeflow-system';
const SIDECAR = path.join(manifestsDir, 'overlays/sidecar');

describe(
  'kubectl apply of manifests/ over a sidecar install: the sidecar leaves the webhook pod, the reconciler gets its own Deployment and account',
  { skip: availability.available ? false : availability.reason },
  () => {
    let cp: ControlPlane;
    before(async () => {
      cp = await startControlPlane({});
      await cp.kubectl(['create', 'namespace', NS]);
    });
    after(async () => {
      await cp?.stop();
    });

    const get = async (kind: string, name: string, namespaced = true): Promise<Obj> =>
      JSON.parse(
        (await cp.kubectl(['get', kind, name, ...(namespaced ? ['-n', NS] : []), '-o', 'json'])).stdout,
      ) as Obj;
    /** What of the pod template a move must change: containers (names, args), volumes, account. */
    const podShape = (d: Obj) => ({
      containers: d.spec.template.spec.containers.map((c: Obj) => ({ name: c.name, args: c.args })),
      volumes: (d.spec.template.spec.volumes ?? []).map((v: Obj) => v.name).sort(),
      serviceAccountName: d.spec.template.spec.serviceAccountName,
    });

    const SSA = ['apply', '--server-side'];
    const CSA = ['apply'];
    for (const how of [
      { name: 'server-side', installed: SSA, args: SSA },
      { name: 'client-side', installed: CSA, args: CSA },
    ])
      it(`${how.name} (kubectl ${how.installed.join(' ')} -k, then ${how.args.join(' ')} -k): the webhook Deployment's pod becomes the rendered one, the bindings name the reconciler's account`, async () => {
        const old = await renderOverlay(cp, SIDECAR);
        assert.deepEqual(
          podShape(byKind(old, 'Deployment', 'trainjob-webhook')[0]).containers.map((c: Obj) => c.name),
          ['webhook', 'reconciler'],
          'the old install runs the reconciler as a sidecar',
        );
        await cp.kubectl([...how.installed, '-k', SIDECAR]);
        await cp.kubectl([...how.args, '-k', manifestsDir]);
        const now = await renderOverlay(cp, manifestsDir);
        assert.deepEqual(
          podShape(await get('deployment', 'trainjob-webhook')),
          podShape(byKind(now, 'Deployment', 'trainjob-webhook')[0]),
          `${how.name}: the webhook's pod as manifests/ renders it (no sidecar, no --handoff)`,
        );
        assert.deepEqual(
          podShape(await get('deployment', 'trainjob-webhook-reconciler')),
          podShape(byKind(now, 'Deployment', 'trainjob-webhook-reconciler')[0]),
          `${how.name}: the reconciler's own Deployment`,
        );
        for (const b of [...byKind(now, 'ClusterRoleBinding'), ...byKind(now, 'RoleBinding')]) {
          const stored = await get(b.kind, b.metadata.name, b.kind === 'RoleBinding');
          assert.deepEqual(stored.subjects, b.subjects, `${how.name}: ${b.kind} ${b.metadata.name}'s subjects`);
        }
        await cp.kubectl(['delete', '-f', '-', '--ignore-not-found', '--wait=true'], {
          input: toYaml([...old, ...now.filter((d) => !byKind(old, d.kind, d.metadata.name).length)]),
        });
      });
  },
);
