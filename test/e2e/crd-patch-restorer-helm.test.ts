// Trainer's `helm upgrade` rewrites the TrainJob CRD (a chart template since v2.3.0) and removes
// this project's patch; `reconcile --restore-crd-patch` puts it back within seconds, under rights
// on that one CRD, without ever making Trainer's next `helm upgrade` fail. Beside the real API
// server, with the real Helm 3 and Helm 4 and Trainer's own charts (v2.3.0 from its module, main
// vendored; only their CRDs applied, through a post-renderer: support/crds-only-post-renderer.ts):
// installed with Helm 3 and patched as docs/install.md says, the restorer started with the component's
// rights, then upgraded to the same version, to main, rolled back, upgraded with Helm 4 by
// server-side apply (same version, then to main). Each upgrade must succeed; the versions of the
// CRD seen by a watch must show Helm's write (the blanket rule back, none of ours: never both) and
// then exactly the patch manifests/crd-patch/ gives for that chart's CRD, with `.spec.versions`
// owned by nobody; a numNodes change of a suspended TrainJob is then admitted by the CRD's rules.
// Last, the restorer stopped: a `kubectl patch` (another field manager that keeps what it wrote)
// makes Helm 4's next upgrade fail on a conflict: what the restorer's hand-back prevents.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Watch } from '@kubernetes/client-node';
import fastJsonPatch, { type Operation } from 'fast-json-patch';
import {
  controlPlaneAvailability,
  freePorts,
  httpGet,
  startControlPlane,
  upstreamCrds,
  waitFor,
  type ControlPlane,
  type TrackedProcess,
} from '../harness/index.ts';
import { projectRoot } from '../harness/binaries.ts';
import { ensureHelmBinaries, helmSkipReason } from '../harness/helm.ts';
import { jsonEqual } from '../../src/rules/crd-patch-restore.ts';
import { BLANKET_TRAINER_RULE, crdPatchOps, crdRestoreOps } from '../../src/rules/generate/crd-patch.ts';
import { rulesFor } from '../../src/rules/table.ts';
import { detectTrainerLine } from '../../src/api/trainer-line-detect.ts';
import { isGeneratedRule } from '../../src/rules/marker.ts';
import { helmFor, prepareTrainerCharts, chartTrainJobCrd, type Helm } from './support/trainer-chart.ts';

type Obj = Record<string, any>;
const CRD = 'trainjobs.trainer.kubeflow.org';
const RESTORER_USER = 'system:serviceaccount:kubeflow-system:trainjob-webhook';
const RELEASE = 'kubeflow-trainer';

const avail = controlPlaneAvailability();
const skip = !avail.available ? avail.reason : helmSkipReason();

const schemaOf = (crd: Obj): Obj => crd.spec.versions[0].schema.openAPIV3Schema;
const trainerRules = (crd: Obj): Obj[] =>
  schemaOf(crd).properties.spec.properties.trainer['x-kubernetes-validations'] ?? [];
const ourRules = (crd: Obj): number =>
  [schemaOf(crd), schemaOf(crd).properties.spec]
    .flatMap((n) => n['x-kubernetes-validations'] ?? [])
    .filter((r: Obj) => isGeneratedRule(r.rule)).length;
/** The managers whose managed fields hold `.spec.versions`. */
const versionsOwners = (crd: Obj): string[] =>
  (crd.metadata.managedFields ?? [])
    .filter((e: Obj) => e.fieldsV1?.['f:spec']?.['f:versions'] !== undefined)
    .map((e: Obj) => `${e.manager}/${e.operation}`);

/** The version has exactly the patch of that chart's CRD, and nobody owns `.spec.versions`. */
const restoredTo = (v: Seen, chart: 'v230' | 'main', patched: Record<'v230' | 'main', Obj>): boolean =>
  jsonEqual(schemaOf(v.crd), patched[chart]) && versionsOwners(v.crd).length === 0;

interface Seen {
  at: number;
  crd: Obj;
  blanket: boolean;
  ours: number;
}

describe("the CRD patch restorer across Trainer's helm upgrades (Helm 3, then Helm 4)", { skip }, () => {
  let cp: ControlPlane;
  let h3: Helm;
  let h4: Helm;
  let charts: { v230: string; main: string };
  /** The patched schema per chart: what manifests/crd-patch/'s generator gives for that chart's CRD. */
  const patched: Record<'v230' | 'main', Obj> = { v230: {}, main: {} };
  let restorer: TrackedProcess;
  let opsPort = 0;
  const seen: Seen[] = [];
  let watch: AbortController | undefined;
  let stopped = false;
  let numNodes = 1;

  const latest = () => seen.at(-1)?.crd;
  const scale = async () => {
    numNodes++;
    return cp.kubectl(
      ['patch', 'trainjob', 'scale-me', '--type=merge', '-p', JSON.stringify({ spec: { trainer: { numNodes } } })],
      { check: false },
    );
  };

  before(async () => {
    const bins = await ensureHelmBinaries();
    cp = await startControlPlane({ crds: [upstreamCrds.jobsets], controllerManager: false, world: false });
    const dir = await cp.tempDir('helm');
    charts = await prepareTrainerCharts(dir);
    h3 = await helmFor('helm3', bins.helm3, dir, cp.childEnv());
    h4 = await helmFor('helm4', bins.helm4, dir, cp.childEnv());
    for (const key of ['v230', 'main'] as const) {
      const crd = await chartTrainJobCrd(charts[key]);
      patched[key] = schemaOf(
        fastJsonPatch.applyPatch(
          crd,
          crdPatchOps(schemaOf(crd), rulesFor(detectTrainerLine(crd).line)) as Operation[],
          true,
          false,
        ).newDocument,
      );
    }
    // Every version of the CRD, as a watch sees it (started again whenever it ends: a new API
    // server answers 429 while its storage for a new kind initializes).
    const follow = async (): Promise<void> => {
      if (stopped) return;
      watch = await new Watch(cp.kubeConfig)
        .watch(
          '/apis/apiextensions.k8s.io/v1/customresourcedefinitions',
          // From the last version seen, so that a restart misses none.
          { fieldSelector: `metadata.name=${CRD}`, resourceVersion: seen.at(-1)?.crd.metadata.resourceVersion },
          (type, obj: Obj) => {
            if (type !== 'ADDED' && type !== 'MODIFIED') return;
            const rv = obj.metadata?.resourceVersion;
            if (seen.some((v) => v.crd.metadata.resourceVersion === rv)) return;
            const blanket = trainerRules(obj).some((r) => jsonEqual(r, BLANKET_TRAINER_RULE));
            seen.push({ at: performance.now(), crd: obj, blanket, ours: ourRules(obj) });
          },
          () => void setTimeout(() => void follow(), 200),
        )
        .catch(() => {
          setTimeout(() => void follow(), 200);
          return undefined;
        });
    };
    await follow();
    // The restorer's rights: the reconciler's roles and the opt-in component's, bound to the webhook's account.
    await cp.kubectl(['create', 'namespace', 'kubeflow-system']);
    for (const k of ['manifests/rbac/reconciler', 'manifests/rbac/crd-patch-restorer'])
      await cp.applyYaml((await cp.kubectl(['kustomize', path.join(projectRoot, k)])).stdout);
  });

  after(async () => {
    stopped = true;
    watch?.abort();
    await cp?.stop();
  });

  it('Helm 3 installs the v2.3.0 chart: its CRD, with the blanket rule that refuses a scale', async () => {
    await h3.run(['install', RELEASE, charts.v230, '-n', 'kubeflow-system', ...h3.postRender]);
    // Helm does not wait for a CRD it creates to be served: a TrainJob applied at once can find no kind.
    await cp.kubectl(['wait', '--for=condition=Established', '--timeout=60s', `crd/${CRD}`]);
    const kinds = (await cp.kubectl(['get', 'crd', '-o', 'name'])).stdout;
    assert.match(kinds, /trainjobs\.trainer\.kubeflow\.org/);
    assert.doesNotMatch(
      (await cp.kubectl(['get', 'deployments,validatingwebhookconfigurations', '-A', '-o', 'name'])).stdout,
      /trainer/,
      'the post-renderer kept only the CRDs',
    );
    await cp.applyYaml(
      JSON.stringify({
        apiVersion: 'trainer.kubeflow.org/v1alpha1',
        kind: 'TrainJob',
        metadata: { name: 'scale-me', namespace: 'default' },
        spec: { runtimeRef: { name: 'torch-distributed' }, suspend: true, trainer: { numNodes: 1 } },
      }),
    );
    const refused = await scale();
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /spec\.trainer: Invalid value: .*field is immutable/);
    numNodes--;
  });

  it('the patch applied as docs/install.md says; the restorer starts with only its rights and leaves it', async (t) => {
    await cp.kubectl([
      'patch',
      'crd',
      CRD,
      '--type=json',
      '--patch-file',
      path.join(projectRoot, 'manifests/crd-patch/trainjob-crd-patch.yaml'),
    ]);
    const user = await cp.makeUserKubeconfig(RESTORER_USER);
    for (const denied of [
      ['list', 'customresourcedefinitions'],
      ['patch', 'customresourcedefinitions/jobsets.jobset.x-k8s.io'],
      ['update', `customresourcedefinitions/${CRD}`],
    ])
      assert.equal(
        (await cp.kubectl(['auth', 'can-i', ...denied, `--as=${RESTORER_USER}`], { check: false })).stdout.trim(),
        'no',
        denied.join(' '),
      );
    const [handoff, ops] = await freePorts(2);
    opsPort = ops;
    restorer = cp.startProcess('reconciler', process.execPath, [
      path.join(projectRoot, 'bin/trainjob-webhook.js'),
      'reconcile',
      '--kubeconfig',
      user.path,
      '--restore-crd-patch',
      '--no-leader-election',
      '--handoff-port',
      String(handoff),
      '--ops-port',
      String(ops),
      '--ops-host',
      '127.0.0.1',
    ]);
    await waitFor('the restorer decided', () => /the patch is in force/.test(restorer.logTail(200)), {
      process: restorer,
      timeoutMs: 30_000,
      intervalMs: 100,
    });
    assert.ok(jsonEqual(schemaOf(latest()!), patched.v230));
    assert.equal((await scale()).code, 0, 'a scale is admitted by the patched CRD');
    t.diagnostic(`owners of .spec.versions after kubectl patch: ${versionsOwners(latest()!).join(', ')}`);
  });

  const steps: { name: string; helm: () => Helm; args: () => string[]; chart: 'v230' | 'main' }[] = [
    {
      name: 'Helm 3, the same version',
      helm: () => h3,
      args: () => ['upgrade', RELEASE, charts.v230, '-n', 'kubeflow-system', ...h3.postRender],
      chart: 'v230',
    },
    {
      name: "Helm 3, to main's chart",
      helm: () => h3,
      args: () => ['upgrade', RELEASE, charts.main, '-n', 'kubeflow-system', ...h3.postRender],
      chart: 'main',
    },
    {
      name: 'Helm 3, rolled back to v2.3.0',
      helm: () => h3,
      args: () => ['rollback', RELEASE, '1', '-n', 'kubeflow-system'],
      chart: 'v230',
    },
    {
      name: 'Helm 4, the same version, server-side apply (from a Helm 3 release)',
      helm: () => h4,
      args: () => ['upgrade', RELEASE, charts.v230, '-n', 'kubeflow-system', '--server-side=true', ...h4.postRender],
      chart: 'v230',
    },
    {
      name: "Helm 4, to main's chart (server-side apply, as the release now is)",
      helm: () => h4,
      args: () => ['upgrade', RELEASE, charts.main, '-n', 'kubeflow-system', ...h4.postRender],
      chart: 'main',
    },
  ];
  for (const step of steps) {
    it(`${step.name}: the upgrade succeeds, the patch is back within seconds, nothing left owning .spec.versions`, async (t) => {
      const mark = seen.length;
      const t0 = performance.now();
      await step.helm().run(step.args());
      const helmDone = performance.now();
      const back = await waitFor(
        'the patch back and .spec.versions given back',
        () => {
          const last = seen.at(-1);
          return seen.length > mark && last && restoredTo(last, step.chart, patched) && last;
        },
        { process: restorer, timeoutMs: 20_000, intervalMs: 25 },
      ).catch((err: Error) => {
        const last = seen.at(-1);
        const diff = last ? fastJsonPatch.compare(schemaOf(last.crd), patched[step.chart]).slice(0, 3) : [];
        throw new Error(
          `${err.message}\nlast version seen: rv ${last?.crd.metadata.resourceVersion}, blanket ${last?.blanket}, ours ${last?.ours}, owners of .spec.versions [${last ? versionsOwners(last.crd).join(', ') : ''}], differences from the patched chart CRD: ${JSON.stringify(diff).slice(0, 600)}`,
          { cause: err },
        );
      });
      const since = seen.slice(mark);
      const written = since.find((v) => v.blanket);
      assert.ok(written, "a version with Helm's write (the blanket rule back) was seen");
      assert.equal(written.ours, 0, "Helm wrote the chart's CRD whole: not the blanket rule and ours both");
      assert.ok(!since.some((v) => v.blanket && v.ours > 0), 'no version had both the blanket rule and ours');
      assert.equal((await scale()).code, 0, 'a scale of the suspended TrainJob is admitted');
      t.diagnostic(
        `${step.name}: ${step.helm().name} took ${Math.round(helmDone - t0)} ms; the patch was back ${Math.round(back.at - written.at)} ms after Helm's write was seen (${Math.round(back.at - helmDone)} ms after helm exited); ${since.length} versions seen`,
      );
    });
  }

  it('the restorer said what it did: a log line, an Event on the CRD and its metrics', async () => {
    assert.equal(restorer.logTail(400).match(/the CRD patch was put back/g)?.length, steps.length);
    const events = await cp.kubectl([
      'get',
      'events',
      '-n',
      'default',
      '--field-selector',
      'reason=CRDPatchRestored',
      '-o',
      'name',
    ]);
    assert.equal(events.stdout.trim().split('\n').length, steps.length);
    const metrics = (await httpGet(`http://127.0.0.1:${opsPort}/metrics`)).body;
    assert.match(
      metrics,
      new RegExp(`trainjob_reconciler_crd_patch_restores_total\\{result="restored"\\} ${steps.length}\\b`),
    );
    assert.match(metrics, /trainjob_reconciler_crd_patch_in_force 1\b/);
    assert.doesNotMatch(metrics, /trainjob_reconciler_crd_patch_restores_total\{result="(failed|refused)"\}/);
  });

  it("without the restorer, a kubectl patch makes Helm 4's next upgrade fail on .spec.versions (what the hand-back prevents)", async () => {
    await restorer.stop();
    // Main's CRD as its chart has it, then patched docs/versions.md's way (its patch generated for that
    // CRD), both by kubectl: the manager kubectl-patch keeps .spec.versions.
    const chartCrd = await chartTrainJobCrd(charts.main);
    const patch = (ops: unknown[]) => cp.kubectl(['patch', 'crd', CRD, '--type=json', '-p', JSON.stringify(ops)]);
    const mark = seen.length;
    const rules = rulesFor(detectTrainerLine(chartCrd).line);
    await patch(crdRestoreOps(schemaOf(chartCrd), rules));
    await patch(crdPatchOps(schemaOf(chartCrd), rules));
    await waitFor('both kubectl patches seen', () => {
      const since = seen.slice(mark);
      return since.some((v) => v.blanket) && since.at(-1)?.ours;
    });
    assert.deepEqual(versionsOwners(latest()!), ['kubectl-patch/Update']);
    const failed = await h4.run(['upgrade', RELEASE, charts.main, '-n', 'kubeflow-system', ...h4.postRender], {
      check: false,
    });
    assert.notEqual(failed.code, 0);
    assert.match(failed.stderr, /conflict/i);
    assert.match(failed.stderr, /kubectl-patch/);
    assert.match(failed.stderr, /\.spec\.versions/);
  });
});
