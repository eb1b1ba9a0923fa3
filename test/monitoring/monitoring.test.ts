// manifests/monitoring: every PromQL expression of the alerts and the dashboard reads (by a small
// tokenizer), and every series it names is one the code registers (the real registries, their
// label names included) or one of the API server's admission webhook series.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { createMetrics } from '../../src/observability/metrics.ts';
import { CONTROLLER_NAME, createReconcilerMetrics } from '../../src/reconciler/metrics.ts';
import { COMPONENT } from '../../src/reconciler/names.ts';
import { MUTATE_PATH } from '../../src/webhook/mutate.ts';
import { VALIDATE_PATH } from '../../src/webhook/validate.ts';
import { locateControlPlaneBinaries, projectRoot } from '../harness/binaries.ts';
import { selectors, tokenize } from './promql.ts';

const dir = path.join(projectRoot, 'manifests/monitoring');

/**
 * The API server's series used (k8s.io/apiserver pkg/admission/metrics), with their label names.
 * Histograms are listed by their base name.
 */
const API_SERVER_SERIES: Record<string, { labels: string[]; histogram?: boolean }> = {
  apiserver_admission_webhook_rejection_count: {
    labels: ['name', 'type', 'operation', 'error_type', 'rejection_code'],
  },
  apiserver_admission_webhook_request_total: { labels: ['name', 'type', 'operation', 'code', 'rejected'] },
  apiserver_admission_webhook_admission_duration_seconds: {
    labels: ['name', 'type', 'operation', 'rejected'],
    histogram: true,
  },
};
/** Labels Prometheus adds to every scraped series. */
const TARGET_LABELS = ['job', 'instance', 'namespace', 'pod', 'container', 'endpoint', 'service'];

/** Every series name a scrape can show, with the label names it carries. */
async function knownSeries(): Promise<Map<string, Set<string>>> {
  const known = new Map<string, Set<string>>();
  const add = (name: string, labels: string[], histogram: boolean) => {
    const set = new Set([...labels, ...TARGET_LABELS]);
    known.set(name, set);
    if (histogram) {
      known.set(`${name}_bucket`, new Set([...set, 'le']));
      known.set(`${name}_sum`, set);
      known.set(`${name}_count`, set);
    }
  };
  for (const registry of [
    createMetrics({ defaultMetrics: true }).registry,
    createReconcilerMetrics({ defaultMetrics: true }).registry,
  ]) {
    for (const metric of registry.getMetricsAsArray()) {
      const m = metric as unknown as { name: string; labelNames?: string[]; get(): Promise<{ type: unknown }> };
      const { type } = await m.get();
      add(m.name, m.labelNames ?? [], String(type) === 'histogram');
    }
  }
  for (const [name, { labels, histogram }] of Object.entries(API_SERVER_SERIES)) add(name, labels, histogram === true);
  return known;
}

/** What is wrong with an expression's series (empty when all are known). */
function unknownIn(expr: string, known: Map<string, Set<string>>): string[] {
  const problems: string[] = [];
  for (const { metric, labels } of selectors(expr)) {
    const has = known.get(metric);
    if (!has) problems.push(`${metric} is not registered by the code nor an API server series`);
    else for (const l of labels) if (!has.has(l)) problems.push(`${metric} has no label ${l}`);
  }
  return problems;
}

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

function ruleFile() {
  const docs = parseAllDocuments(readFileSync(path.join(dir, 'prometheusrule.yaml'), 'utf8')).map((d) => d.toJS());
  assert.equal(docs.length, 1);
  const doc = docs[0] as { apiVersion: string; kind: string; spec: { groups: { name: string; rules: Rule[] }[] } };
  return doc;
}

function dashboardExprs(): { title: string; expr: string }[] {
  const dashboard = JSON.parse(readFileSync(path.join(dir, 'dashboard.json'), 'utf8')) as {
    panels: { title: string; targets?: { expr: string }[] }[];
  };
  return dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => ({ title: p.title, expr: t.expr })));
}

describe('PromQL reader', () => {
  it('reads selectors, functions, groupings, ranges and strings', () => {
    assert.deepEqual(
      selectors('sum by (le, name) (rate(a_bucket{name=~"x\\\\.y",code!="200"}[5m])) / ignoring(x) b > 0.5 or c'),
      [
        {
          metric: 'a_bucket',
          labels: ['name', 'code'],
          matchers: [
            { label: 'name', op: '=~', value: 'x\\.y' },
            { label: 'code', op: '!=', value: '200' },
          ],
        },
        { metric: 'b', labels: [], matchers: [] },
        { metric: 'c', labels: [], matchers: [] },
      ],
    );
    assert.deepEqual(selectors('histogram_quantile(0.99, sum(rate(h_bucket[$__rate_interval])) by (le))'), [
      { metric: 'h_bucket', labels: [], matchers: [] },
    ]);
    assert.deepEqual(
      tokenize('x{a="q\\"r"}[1h:5m]').map((t) => t.kind),
      ['ident', 'op', 'ident', 'op', 'string', 'op', 'range'],
    );
  });

  it('refuses what it does not understand', () => {
    for (const bad of [
      'sum(rate(x[5m])',
      'x)',
      'rat(x[5m])',
      'x{a=b}',
      'x{a="1" b="2"}',
      '{a="1"}',
      'x{a=~"("}',
      'x[5 minutes]',
      'x @ 5',
      'x{a="1}',
    ]) {
      assert.throws(() => selectors(bad), Error, bad);
    }
  });

  it('reports a series the code does not register and a label it does not have', async () => {
    const known = await knownSeries();
    assert.deepEqual(unknownIn('rate(trainjob_webhook_requests_total{decision="error"}[5m])', known), []);
    assert.deepEqual(unknownIn('rate(trainjob_webhook_request_total[5m])', known), [
      'trainjob_webhook_request_total is not registered by the code nor an API server series',
    ]);
    assert.deepEqual(unknownIn('workqueue_depth{queue="x"}', known), ['workqueue_depth has no label queue']);
    assert.deepEqual(unknownIn('trainjob_webhook_request_duration_seconds_bucket{le="1"}', known), []);
    assert.deepEqual(unknownIn('trainjob_webhook_requests_total_bucket', known), [
      'trainjob_webhook_requests_total_bucket is not registered by the code nor an API server series',
    ]);
  });
});

describe('manifests/monitoring', () => {
  it('every alert expression names registered series (or API server ones) with their labels', async () => {
    const known = await knownSeries();
    const doc = ruleFile();
    assert.equal(doc.apiVersion, 'monitoring.coreos.com/v1');
    assert.equal(doc.kind, 'PrometheusRule');
    const rules = doc.spec.groups.flatMap((g) => g.rules);
    const names = rules.map((r) => r.alert);
    assert.equal(new Set(names).size, names.length, 'alert names are unique');
    for (const rule of rules) {
      assert.ok(
        rule.alert && rule.labels?.severity && rule.annotations?.summary,
        `${rule.alert}: name, severity and summary`,
      );
      assert.deepEqual(unknownIn(rule.expr, known), [], rule.alert);
    }
    // What the alerts must cover (issue 9).
    const all = rules.map((r) => r.expr).join('\n');
    for (const series of [
      'trainjob_webhook_crd_blanket_trainer_rule',
      'trainjob_webhook_crd_rules_uncompilable',
      'trainjob_webhook_crd_in_force',
      'trainjob_reconciler_reconciles_total{outcome=~"blocked',
      'controller_runtime_webhook_requests_total',
      'trainjob_webhook_request_duration_seconds_bucket',
      'apiserver_admission_webhook_rejection_count',
      'apiserver_admission_webhook_request_total',
      'apiserver_admission_webhook_admission_duration_seconds_bucket',
    ]) {
      assert.ok(all.includes(series), `an alert uses ${series}`);
    }
  });

  it("the API server's webhook names in the alerts are the webhook configurations' own", () => {
    const names = ['manifests/webhook/manifests.yaml', 'manifests/components/mutating/mutating.yaml'].flatMap((f) =>
      parseAllDocuments(readFileSync(path.join(projectRoot, f), 'utf8'))
        .map((d) => d.toJS() as { kind?: string; webhooks?: { name: string }[] })
        .filter((d) => d.kind?.endsWith('WebhookConfiguration'))
        .flatMap((d) => (d.webhooks ?? []).map((w) => w.name)),
    );
    assert.equal(names.length, 2);
    const rules = ruleFile().spec.groups.flatMap((g) => g.rules);
    const matchers = rules
      .flatMap((r) => tokenize(r.expr))
      .filter((t, i, all) => t.kind === 'string' && all[i - 2]?.text === 'name' && all[i - 1]?.text === '=~');
    assert.ok(matchers.length >= 3);
    for (const m of matchers) for (const n of names) assert.match(n, new RegExp(`^(?:${m.text})$`));
  });

  it('every dashboard query names registered series (or API server ones) with their labels', async () => {
    const known = await knownSeries();
    const exprs = dashboardExprs();
    assert.ok(exprs.length >= 20);
    for (const { title, expr } of exprs) assert.deepEqual(unknownIn(expr, known), [], `${title}: ${expr}`);
  });

  it('label values match what the code sets: the controller and queue name, the Lease, the webhook paths', () => {
    const exprs = [
      ...ruleFile()
        .spec.groups.flatMap((g) => g.rules)
        .map((r) => r.expr),
      ...dashboardExprs().map((e) => e.expr),
    ];
    let checked = 0;
    for (const { metric, matchers } of exprs.flatMap((e) => selectors(e))) {
      for (const m of matchers) {
        const matches = (value: string) =>
          m.op === '=' ? m.value === value : m.op === '=~' ? new RegExp(`^(?:${m.value})$`).test(value) : true;
        if (metric.startsWith('controller_runtime_reconcile') || metric.startsWith('workqueue_')) {
          if (m.label === 'controller' || m.label === 'name') {
            assert.ok(matches(CONTROLLER_NAME), `${metric}{${m.label}${m.op}"${m.value}"}`);
            checked++;
          }
        } else if (metric === 'leader_election_master_status' && m.label === 'name') {
          assert.ok(matches(COMPONENT), `${metric}{name${m.op}"${m.value}"} is the Lease ${COMPONENT}`);
          checked++;
        } else if (metric.startsWith('controller_runtime_webhook') && m.label === 'webhook') {
          for (const p of [VALIDATE_PATH, MUTATE_PATH])
            assert.ok(matches(p), `${metric}{webhook${m.op}"${m.value}"} matches ${p}`);
          checked++;
        }
      }
    }
    assert.ok(checked >= 10, `${checked} matchers checked`);
  });

  it('the PodMonitor scrapes every pod that serves /metrics in each layout (default: separate Deployments; sidecar), on their port names', (t) => {
    const bins = locateControlPlaneBinaries();
    if (!bins.found) return t.skip(`no kubectl (${bins.missing.join(', ')}): hack/build-binaries.sh`);
    type Doc = { kind: string; metadata: { name: string }; spec: any };
    const render = (d: string) =>
      parseAllDocuments(execFileSync(bins.paths.kubectl, ['kustomize', d], { encoding: 'utf8' })).map(
        (x) => x.toJS() as Doc,
      );
    const monitor = render(dir).find((o) => o.kind === 'PodMonitor')!;
    const endpoints = new Set<string>(monitor.spec.podMetricsEndpoints.map((e: { port: string }) => e.port));
    const selects = (labels: Record<string, string>) =>
      Object.entries(monitor.spec.selector.matchLabels ?? {}).every(([k, v]) => labels[k] === v) &&
      (monitor.spec.selector.matchExpressions ?? []).every(
        (e: { key: string; operator: string; values: string[] }) =>
          e.operator === 'In' && e.values.includes(labels[e.key]),
      );
    for (const layout of [path.join(projectRoot, 'manifests'), path.join(projectRoot, 'manifests/overlays/sidecar')]) {
      for (const d of render(layout).filter((o) => o.kind === 'Deployment')) {
        const ports: string[] = d.spec.template.spec.containers
          .flatMap((c: { ports?: { name: string }[] }) => (c.ports ?? []).map((p) => p.name))
          .filter((n: string) => n !== 'webhook');
        assert.ok(
          selects(d.spec.template.metadata.labels),
          `${path.relative(projectRoot, layout)}: Deployment/${d.metadata.name}'s pods selected`,
        );
        for (const port of ports)
          assert.ok(
            endpoints.has(port),
            `${path.relative(projectRoot, layout)}: Deployment/${d.metadata.name} port ${port} scraped`,
          );
      }
    }
  });

  it('renders with kustomize: the PodMonitor, the rule, and the dashboard ConfigMap for the Grafana sidecar', (t) => {
    const bins = locateControlPlaneBinaries();
    if (!bins.found) return t.skip(`no kubectl (${bins.missing.join(', ')}): hack/build-binaries.sh`);
    const out = execFileSync(bins.paths.kubectl, ['kustomize', dir], { encoding: 'utf8' });
    const objects = parseAllDocuments(out).map(
      (d) =>
        d.toJS() as {
          kind: string;
          metadata: { name: string; namespace?: string; labels?: Record<string, string> };
          data?: Record<string, string>;
        },
    );
    assert.deepEqual(objects.map((o) => `${o.kind}/${o.metadata.name}`).sort(), [
      'ConfigMap/trainjob-webhook-dashboard',
      'PodMonitor/trainjob-webhook',
      'PrometheusRule/trainjob-webhook',
    ]);
    for (const o of objects) assert.equal(o.metadata.namespace, 'kubeflow-system');
    const cm = objects.find((o) => o.kind === 'ConfigMap')!;
    assert.equal(cm.metadata.labels?.grafana_dashboard, '1');
    assert.equal(cm.data?.['trainjob-webhook.json'], readFileSync(path.join(dir, 'dashboard.json'), 'utf8'));
  });
});
