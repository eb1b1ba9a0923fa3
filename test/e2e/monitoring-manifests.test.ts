// manifests/monitoring against the real API server with the Prometheus Operator's own CRDs
// (v0.85.0, from its root Go module's example/prometheus-operator-crd/, vendored in upstream/):
// rendered with kubectl kustomize and server-side applied, each object comes back as written (the
// CRDs' structural schemas prune nothing and accept every field), and the schemas do refuse a bad
// field (so the acceptance means something). The expressions themselves are checked by
// test/monitoring/monitoring.test.ts; no Prometheus runs here.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { controlPlaneAvailability, projectRoot, startControlPlane, type ControlPlane } from '../harness/index.ts';
import { renderOverlay, toYaml, type Obj } from './support/install.ts';

const CRDS = ['monitoring.coreos.com_prometheusrules.yaml', 'monitoring.coreos.com_podmonitors.yaml'].map((f) =>
  path.join(projectRoot, 'upstream/crds/prometheus-operator-v0.85.0', f),
);
const availability = controlPlaneAvailability();

describe(
  'manifests/monitoring against the real API server',
  { skip: availability.available ? false : availability.reason },
  () => {
    let cp: ControlPlane;
    before(async () => {
      cp = await startControlPlane({ crds: CRDS, controllerManager: false, world: false });
      await cp.kubectl(['create', 'namespace', 'kubeflow-system']);
    });
    after(async () => {
      await cp?.stop();
    });

    it('applies server-side and every object reads back as rendered', async () => {
      const docs = await renderOverlay(cp, path.join(projectRoot, 'manifests/monitoring'));
      assert.deepEqual(docs.map((d) => `${d.kind}/${d.metadata.name}`).sort(), [
        'ConfigMap/trainjob-webhook-dashboard',
        'PodMonitor/trainjob-webhook',
        'PrometheusRule/trainjob-webhook',
      ]);
      await cp.applyYaml(toYaml(docs));
      for (const doc of docs) {
        const resource = {
          ConfigMap: 'configmaps',
          PodMonitor: 'podmonitors.monitoring.coreos.com',
          PrometheusRule: 'prometheusrules.monitoring.coreos.com',
        }[doc.kind as string]!;
        const stored = JSON.parse(
          (await cp.kubectl(['get', resource, doc.metadata.name, '-n', doc.metadata.namespace, '-o', 'json'])).stdout,
        ) as Obj;
        for (const field of ['spec', 'data'] as const)
          assert.deepEqual(stored[field], doc[field], `${doc.kind} ${field} is stored as written`);
        assert.deepEqual(stored.metadata.labels, doc.metadata.labels);
      }
    });

    it("the CRDs' schemas do validate: a rule with a malformed `for` is refused", async () => {
      const bad = {
        apiVersion: 'monitoring.coreos.com/v1',
        kind: 'PrometheusRule',
        metadata: { name: 'bad', namespace: 'kubeflow-system' },
        spec: { groups: [{ name: 'g', rules: [{ alert: 'A', expr: 'vector(1)', for: 'five minutes' }] }] },
      };
      await assert.rejects(cp.applyYaml(toYaml([bad])), /for|Invalid value|spec\.groups/);
    });
  },
);
