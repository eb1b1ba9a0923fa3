// The chart generator's pure part (hack/chart/templates.ts): what a rendered object becomes in a
// template, the condition on the values that selects each variant, and the input it refuses.
// Whether Helm renders the generated chart as kustomize renders manifests/ is
// chart-matches-kustomize.test.ts's.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { combinationName, combinations, type Combination } from '../../hack/chart/combinations.ts';
import { chartTemplates, condition, type Obj, type Rendered } from '../../hack/chart/templates.ts';

const S = {
  namespace: 'ns-sentinel',
  imageRepository: 'repo-sentinel',
  imageTag: 'tag-sentinel',
  manifestsNamespace: 'kubeflow-system',
};
const all = combinations();
const where = (pred: (c: Combination) => boolean) => all.filter(pred);

function deployment(args: string[]): Obj {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'd', namespace: S.namespace },
    spec: { template: { spec: { containers: [{ name: 'c', image: `${S.imageRepository}:${S.imageTag}`, args }] } } },
  };
}
const rendered = (objects: (c: Combination) => Obj[]): Rendered[] =>
  all.map((combination) => ({ combination, objects: objects(combination).map((object) => ({ object, origin: 'x' })) }));

describe('chart templates from the rendered combinations', () => {
  it('there are 34 combinations: 2 webhook layouts × 2 certificate modes × mutating or not × the CRD patch restorer or not, and VAP mode once, each with the network policy or not', () => {
    const webhookLayouts = [
      'sidecar/rotation',
      'sidecar/rotation/mutating',
      'sidecar/cert-manager',
      'sidecar/cert-manager/mutating',
      'separate-reconciler/rotation',
      'separate-reconciler/rotation/mutating',
      'separate-reconciler/cert-manager',
      'separate-reconciler/cert-manager/mutating',
    ];
    const withoutPolicy = [...webhookLayouts, 'vap', ...webhookLayouts.map((n) => `${n}/crd-patch-restorer`)];
    assert.deepEqual(all.map(combinationName), [...withoutPolicy, ...withoutPolicy.map((n) => `${n}/network-policy`)]);
  });

  it('conditions: each dimension only where it matters, VAP mode by its layout alone (the schema fixes its other values)', () => {
    assert.equal(
      condition(
        where((c) => c.layout !== 'vap'),
        all,
      ),
      'ne .Values.layout "vap"',
    );
    assert.equal(
      condition(
        where((c) => c.layout === 'vap'),
        all,
      ),
      'eq .Values.layout "vap"',
    );
    assert.equal(
      condition(
        where((c) => c.certificates === 'cert-manager' && c.mutatingWebhook),
        all,
      ),
      'and (eq .Values.certificates "cert-manager") (.Values.mutatingWebhook)',
    );
    assert.equal(
      condition(
        where((c) => c.layout !== 'sidecar' && c.certificates === 'rotation'),
        all,
      ),
      'and (ne .Values.layout "sidecar") (eq .Values.certificates "rotation")',
      'vap counts as rotation',
    );
    assert.equal(
      condition(
        where((c) => c.crdPatchRestorer),
        all,
      ),
      '.Values.crdPatchRestorer.enabled',
      'no VAP mode with the restorer: the value alone selects it',
    );
    assert.equal(
      condition(
        where((c) => c.networkPolicy),
        all,
      ),
      '.Values.networkPolicy.enabled',
      'the network policy in every layout: the value alone selects it',
    );
    assert.equal(
      condition(
        where((c) => c.layout === 'sidecar' && !c.crdPatchRestorer),
        all,
      ),
      'and (eq .Values.layout "sidecar") (not .Values.crdPatchRestorer.enabled)',
    );
    assert.equal(condition(all, all), 'true');
  });

  it('a set of combinations that is no box of values is a disjunction of the combinations', () => {
    const odd = where((c) => ['sidecar/rotation', 'separate-reconciler/cert-manager'].includes(combinationName(c)));
    assert.equal(
      condition(odd, all),
      'or (and (eq .Values.layout "sidecar") (eq .Values.certificates "rotation") (not .Values.mutatingWebhook) (not .Values.crdPatchRestorer.enabled) (not .Values.networkPolicy.enabled)) (and (eq .Values.layout "separate-reconciler") (eq .Values.certificates "cert-manager") (not .Values.mutatingWebhook) (not .Values.crdPatchRestorer.enabled) (not .Values.networkPolicy.enabled))',
    );
  });

  it('one object the same everywhere is its text alone; variants are an if / else if chain; an object absent somewhere is under a condition', () => {
    const files = chartTemplates(
      rendered((c) => [
        deployment(c.layout === 'sidecar' ? ['a'] : ['b']),
        { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'sa', namespace: S.namespace } },
        ...(c.mutatingWebhook
          ? [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'm', namespace: 'x' } }]
          : []),
      ]),
      S,
    );
    assert.deepEqual([...files.keys()].sort(), ['configmap-m.yaml', 'deployment-d.yaml', 'serviceaccount-sa.yaml']);
    assert.doesNotMatch(files.get('serviceaccount-sa.yaml')!, /\{\{- (if|end)/);
    assert.match(files.get('serviceaccount-sa.yaml')!, /namespace: \{\{ \.Release\.Namespace \}\}\n$/);
    const d = files.get('deployment-d.yaml')!;
    assert.match(
      d,
      /\{\{- if eq \.Values\.layout "sidecar" \}\}\n[\s\S]*?- a\n\{\{- else if ne \.Values\.layout "sidecar" \}\}\n/,
    );
    assert.match(d, /image: \{\{ printf "%s:%s" \.Values\.image\.repository \.Values\.image\.tag \| quote \}\}/);
    assert.match(files.get('configmap-m.yaml')!, /\{\{- if \.Values\.mutatingWebhook \}\}[\s\S]*\{\{- end \}\}\n$/);
  });

  it("Helm's delimiters in a rendered value are escaped; a cluster-scoped object loses the namespace kustomize gave it", () => {
    const files = chartTemplates(
      rendered(() => [
        {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'ClusterRole',
          metadata: { name: 'r', namespace: S.namespace, annotations: { note: 'a {{ b }} c' } },
        },
      ]),
      S,
    );
    const text = files.get('clusterrole-r.yaml')!;
    assert.match(text, /note: a \{\{ "\{\{" \}\} b \{\{ "\}\}" \}\} c/);
    assert.doesNotMatch(text, /namespace/);
  });

  it('refuses: a kind of unknown scope, the manifests namespace left, another image, a sentinel outside its place, an object twice', () => {
    const refuse = (objects: Obj[], message: RegExp) =>
      assert.throws(
        () =>
          chartTemplates(
            rendered(() => objects),
            S,
          ),
        message,
      );
    refuse([{ kind: 'Widget', metadata: { name: 'w' } }], /kind Widget is in neither list/);
    refuse(
      [{ kind: 'Service', metadata: { name: 's', namespace: S.namespace }, spec: { x: 'a.kubeflow-system.svc' } }],
      /still names kubeflow-system/,
    );
    const other = deployment([]);
    (other as any).spec.template.spec.containers[0].image = 'busybox:1';
    refuse([other], /container c runs busybox:1, not the project's image/);
    refuse(
      [{ kind: 'ConfigMap', metadata: { name: 'c', namespace: S.namespace }, data: { a: `x ${S.imageTag}` } }],
      /sentinel tag-sentinel is left outside an image/,
    );
    const sa = { kind: 'ServiceAccount', metadata: { name: 'sa', namespace: S.namespace } };
    refuse([sa, sa], /ServiceAccount\/sa is rendered twice/);
    refuse([{ kind: 'ServiceAccount', metadata: { name: 'sa' } }], /ServiceAccount\/sa has no namespace/);
  });
});
