// Issue 26 item 4: the reconciler's widest rights confined by manifests/rbac/confine (a
// ValidatingAdmissionPolicy), proven against the real API server with the installed accounts'
// own tokens. The default install (manifests/ with the CRD patch restorer's component, as a user's
// overlay adds it) is rendered and its accounts, roles and policy applied; then, as the
// reconciler's ServiceAccount:
// - deleting a ServiceAccount is refused unless it is `<job>-cache` controlled by the TrainJob
//   `<job>`, which is allowed (src/rebuild/initializers.ts);
// - patching a PVC's labels, annotations or owners beyond the hand-over is refused; the release
//   and the hand-back src/rebuild/pvc-plan.ts plans are allowed;
// - deleting a JobSet or a PodGroup (coscheduling's, Volcano's) is refused unless the TrainJob of
//   its name controls it, which is allowed (a rebuild's deletes, src/reconciler/cluster.ts), and a
//   JobSet's while it runs (not suspended);
// - patching a TrainJob is refused unless only this project's annotations change: the report's
//   apply and the refusal fold's merge patch are allowed, a change of the spec (runtimePatches,
//   suspend), a label, an owner or another annotation refused;
// - creating a JobSet is refused but as a server-side dry run (companion mode's recreate check) of
//   one the TrainJob of its name controls; patching one is refused but for spec.suspend; with the
//   companion-jobsets binding removed (standalone mode), a real create and a whole change of such a
//   JobSet are allowed, one no TrainJob controls still refused;
// - patching the TrainJob CRD's conversion, names or schema is refused, and so is a scale
//   subresource other than the CRD patch's; the CRD patch (the restorer's write: rules, the scale
//   subresource, the status field, printer columns) is allowed, its restore (an uninstall's, which
//   removes the status field) refused;
// - a TrainJob status write that changes anything but status.trainjobWebhook is refused (companion
//   mode, every shipped layout); with the companion binding removed (standalone mode) its
//   conditions may change, nothing else of Trainer's status.
// The match is by the account's name in any namespace: the same account in another namespace is
// confined too, another account with the same roles is not.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api, CustomObjectsApi, KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import {
  controlPlaneAvailability,
  startControlPlane,
  upstreamCrds,
  upstreamDir,
  waitFor,
  type ControlPlane,
  type KubectlResult,
} from '../harness/index.ts';
import { REFUSAL_SEEN_ANNOTATION, REPORT_ANNOTATION } from '../../src/api/names.ts';
import { planPvcHandBack, planPvcRelease } from '../../src/rebuild/pvc-plan.ts';
import { reportApplyConfiguration } from '../../src/rebuild/report.ts';
import { STATUS_FIELD_SCHEMA } from '../../src/rules/generate/scale-subresource.ts';
import type { JobSet, PersistentVolumeClaim, TrainJob } from '../../src/api/objects.ts';
import {
  manifestsDir,
  renderOverlay,
  serviceAccountKubeconfig,
  toYaml,
  userOverlay,
  type Obj,
} from './support/install.ts';

const availability = controlPlaneAvailability();
const NS = 'kubeflow-system';
const TEAM = 'team';
const CRD = 'trainjobs.trainer.kubeflow.org';
const RECONCILER = 'trainjob-webhook-reconciler';
const POLICY = /ValidatingAdmissionPolicy 'trainjob-webhook-confine-reconciler'/;
/** What the policy is built from: the kinds the RBAC of an install binds. */
const RBAC_AND_POLICY = new Set([
  'ServiceAccount',
  'ClusterRole',
  'ClusterRoleBinding',
  'Role',
  'RoleBinding',
  'ValidatingAdmissionPolicy',
  'ValidatingAdmissionPolicyBinding',
]);

describe(
  'the reconciler confined to the objects a TrainJob owns (rbac/confine), against the real API server',
  {
    skip: availability.available ? false : availability.reason,
  },
  () => {
    let cp: ControlPlane;
    let asReconciler: string;
    let docs: Obj[];
    const get = async (what: string[], ns = TEAM): Promise<Obj> =>
      JSON.parse((await cp.kubectl(['get', ...what, '-n', ns, '-o', 'json'])).stdout) as Obj;
    const as = (kubeconfig: string, args: string[], input?: string): Promise<KubectlResult> =>
      cp.kubectl(args, { kubeconfig, check: false, input });
    const refused = (r: KubectlResult, what: string) => {
      assert.notEqual(r.code, 0, `${what}: allowed`);
      assert.match(r.stderr, POLICY, `${what}: refused by the policy (${r.stderr.trim()})`);
    };
    const allowed = (r: KubectlResult, what: string) => assert.equal(r.code, 0, `${what}: ${r.stderr.trim()}`);
    /** The reconciler's credentials, for a client that sends a request as the reconciler does. */
    const reconcilerConfig = () => {
      const kc = new KubeConfig();
      kc.loadFromFile(asReconciler);
      return kc;
    };
    /** A client call's outcome as a kubectl result: on a refusal, the API server's Status code and message. */
    const answer = async (call: Promise<unknown>): Promise<KubectlResult> => {
      try {
        await call;
        return { code: 0, stdout: '', stderr: '' };
      } catch (err) {
        const body = (err as { body?: unknown }).body;
        const status = (typeof body === 'string' ? JSON.parse(body) : body) as Obj | undefined;
        return { code: status?.code ?? 1, stdout: '', stderr: status?.message ?? String(err) };
      }
    };
    const owner = (o: Obj, controller: boolean) => ({
      apiVersion: o.apiVersion,
      kind: o.kind,
      name: o.metadata.name,
      uid: o.metadata.uid,
      controller,
    });

    before(async () => {
      // Trainer v2.3.0's CRD: the CRD patch is made for it.
      const trainJobCrd = path.join(upstreamDir, 'crds/trainer-v2.3.0/trainer.kubeflow.org_trainjobs.yaml');
      cp = await startControlPlane({ crds: [upstreamCrds.jobsets, trainJobCrd] });
      await cp.kubectl(['create', 'namespace', NS]);
      await cp.kubectl(['create', 'namespace', TEAM]);
      const overlay = await userOverlay(
        cp,
        'with-restorer',
        [
          'apiVersion: kustomize.config.k8s.io/v1beta1',
          'kind: Kustomization',
          'resources: [MANIFESTS]',
          'components: [MANIFESTS/components/crd-patch-restorer-separate]',
        ].join('\n'),
      );
      // The rendered objects as kustomize gives them (the policy kinds with a namespace, which the
      // API server drops); no Deployment: the accounts act through the tokens below.
      docs = (await renderOverlay(cp, overlay)).filter((d) => RBAC_AND_POLICY.has(d.kind));
      await cp.applyYaml(toYaml(docs));
      asReconciler = await serviceAccountKubeconfig(cp, NS, RECONCILER);
      // The binding takes effect asynchronously: wait until a foreign ServiceAccount's delete is refused.
      await cp.kubectl(['create', 'serviceaccount', 'probe', '-n', TEAM]);
      await waitFor('the policy in force', async () => {
        const r = await as(asReconciler, ['delete', 'serviceaccount', 'probe', '-n', TEAM, '--dry-run=server']);
        return POLICY.test(r.stderr);
      });
    });
    after(async () => {
      if (process.exitCode && cp) process.stderr.write(cp.logTails(30));
      await cp?.stop();
    });

    it('the rendered install carries the policy and its binding, unscoped by any namespace in its expressions', () => {
      const policy = docs.find((d) => d.kind === 'ValidatingAdmissionPolicy');
      assert.ok(policy, 'the policy is rendered');
      assert.ok(docs.some((d) => d.kind === 'ValidatingAdmissionPolicyBinding'));
      assert.doesNotMatch(JSON.stringify(policy.spec), new RegExp(NS), 'no namespace in the CEL');
    });

    let trainJob: Obj;
    let jobSet: Obj;
    before(async () => {
      await cp.applyYaml(
        toYaml([
          {
            apiVersion: 'trainer.kubeflow.org/v1alpha1',
            kind: 'TrainJob',
            metadata: { name: 'job', namespace: TEAM },
            spec: { runtimeRef: { name: 'torch-distributed' }, suspend: true },
          },
          {
            apiVersion: 'jobset.x-k8s.io/v1alpha2',
            kind: 'JobSet',
            metadata: { name: 'job', namespace: TEAM },
            spec: {
              suspend: true,
              replicatedJobs: [
                {
                  name: 'node',
                  template: {
                    spec: {
                      template: { spec: { restartPolicy: 'Never', containers: [{ name: 'node', image: 'busybox' }] } },
                    },
                  },
                },
              ],
            },
          },
        ]),
      );
      trainJob = await get(['trainjob', 'job']);
      jobSet = await get(['jobset', 'job']);
    });
    const trainJobNamed = async (name: string): Promise<Obj> => {
      await cp.applyYaml(
        toYaml([
          {
            apiVersion: 'trainer.kubeflow.org/v1alpha1',
            kind: 'TrainJob',
            metadata: { name, namespace: TEAM },
            spec: { runtimeRef: { name: 'torch-distributed' }, suspend: true },
          },
        ]),
      );
      return get(['trainjob', name]);
    };
    /** A JobSet like `job`'s (suspended unless said), with these owners, as an admin makes it. */
    const jobSetBody = (name: string, owners: Obj[], suspend = true): Obj => ({
      apiVersion: jobSet.apiVersion,
      kind: 'JobSet',
      metadata: { name, namespace: TEAM, ownerReferences: owners },
      spec: { ...jobSet.spec, suspend },
    });
    const jobSetNamed = (name: string, owners: Obj[], suspend = true) =>
      cp.applyYaml(toYaml([jobSetBody(name, owners, suspend)]));

    describe('ServiceAccount delete', () => {
      const sa = (name: string, owners: Obj[] = []) =>
        cp.applyYaml(
          toYaml([
            { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace: TEAM, ownerReferences: owners } },
          ]),
        );
      it("refused for an account no TrainJob owns, one whose name is not its owner's `<job>-cache`, and one the TrainJob owns but does not control", async () => {
        await sa('victim');
        await sa('other-cache', [owner(trainJob, true)]);
        await sa('held-cache', [owner(trainJob, false)]);
        for (const name of ['victim', 'other-cache', 'held-cache'])
          refused(await as(asReconciler, ['delete', 'serviceaccount', name, '-n', TEAM]), `delete ${name}`);
        assert.equal((await get(['serviceaccount', 'victim'])).metadata.name, 'victim');
      });
      it("allowed for the data cache's `<job>-cache` controlled by the TrainJob, with the reconciler's preconditions (background)", async () => {
        await sa('job-cache', [owner(trainJob, true)]);
        const live = await get(['serviceaccount', 'job-cache']);
        // What initializer-objects.ts sends: a background delete with uid and resourceVersion preconditions.
        const r = await as(
          asReconciler,
          ['delete', '--raw', `/api/v1/namespaces/${TEAM}/serviceaccounts/job-cache`, '-f', '-'],
          JSON.stringify({
            kind: 'DeleteOptions',
            apiVersion: 'v1',
            propagationPolicy: 'Background',
            preconditions: { uid: live.metadata.uid, resourceVersion: live.metadata.resourceVersion },
          }),
        );
        allowed(r, 'delete job-cache');
      });
      it('the same account name in another namespace is confined too; another account with the same roles is not', async () => {
        for (const [ns, name] of [
          [TEAM, RECONCILER],
          [NS, 'someone-else'],
        ]) {
          await cp.kubectl(['create', 'serviceaccount', name, '-n', ns]);
          await cp.kubectl([
            'create',
            'clusterrolebinding',
            `confine-test-${ns}-${name}`,
            '--clusterrole=trainjob-webhook-reconciler',
            `--serviceaccount=${ns}:${name}`,
          ]);
        }
        const elsewhere = await serviceAccountKubeconfig(cp, TEAM, RECONCILER);
        refused(
          await as(elsewhere, ['delete', 'serviceaccount', 'victim', '-n', TEAM, '--dry-run=server']),
          `${TEAM}:${RECONCILER}`,
        );
        const other = await serviceAccountKubeconfig(cp, NS, 'someone-else');
        const r = await waitFor('RBAC allows someone-else', async () => {
          const out = await as(other, ['delete', 'serviceaccount', 'victim', '-n', TEAM, '--dry-run=server']);
          return /forbidden: User .* cannot delete/.test(out.stderr) ? undefined : out;
        });
        allowed(r, `${NS}:someone-else (not the reconciler's account)`);
      });
    });

    describe('PVC patch', () => {
      const pvc = async (name: string, more: Obj[] = [], ownedByJobSet = true): Promise<Obj> => {
        await cp.applyYaml(
          toYaml([
            {
              apiVersion: 'v1',
              kind: 'PersistentVolumeClaim',
              metadata: {
                name,
                namespace: TEAM,
                labels: { team: 'a' },
                ownerReferences: [
                  ...(ownedByJobSet ? [{ ...owner(jobSet, true), blockOwnerDeletion: true }] : []),
                  ...more,
                ],
              },
              spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
            },
          ]),
        );
        return get(['pvc', name]);
      };
      // As the reconciler sends it: a JSON patch with no GET first (kubectl patch would GET, a right
      // the reconciler has not: it lists claims).
      const patch = (name: string, ops: unknown[]): Promise<KubectlResult> =>
        answer(
          reconcilerConfig()
            .makeApiClient(CoreV1Api)
            .patchNamespacedPersistentVolumeClaim(
              { name, namespace: TEAM, body: ops },
              setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
            ),
        );
      it('refused: a label, an annotation, an owner that is neither the TrainJob nor its JobSet, an owner of another name, an owner other than the TrainJob or JobSet dropped, a TrainJob or JobSet owner on a claim neither owns', async () => {
        // Another owner beside the JobSet (it exists: the garbage collector would take the claim otherwise).
        await cp.kubectl(['create', 'configmap', 'keeper', '-n', TEAM]);
        const keeper = await get(['configmap', 'keeper']);
        const claim = await pvc('work-job', [{ ...owner(keeper, false), apiVersion: 'v1', kind: 'ConfigMap' }]);
        const cases: [string, unknown[]][] = [
          ['a label', [{ op: 'add', path: '/metadata/labels/team', value: 'b' }]],
          ['an annotation', [{ op: 'add', path: '/metadata/annotations', value: { x: 'y' } }]],
          [
            'a ServiceAccount as owner',
            [
              {
                op: 'add',
                path: '/metadata/ownerReferences/-',
                value: { apiVersion: 'v1', kind: 'ServiceAccount', name: 'victim', uid: trainJob.metadata.uid },
              },
            ],
          ],
          [
            'a TrainJob of another name as owner',
            [
              {
                op: 'add',
                path: '/metadata/ownerReferences/-',
                value: { ...owner(trainJob, false), name: 'other' },
              },
            ],
          ],
          ['its other owner dropped', [{ op: 'remove', path: '/metadata/ownerReferences/1' }]],
        ];
        for (const [what, ops] of cases) refused(await patch('work-job', ops), what);
        assert.deepEqual((await get(['pvc', 'work-job'])).metadata.ownerReferences, claim.metadata.ownerReferences);
        // Another application's claim whose name merely ends like a TrainJob's (`<x>-<job>`): an owner
        // TrainJob or JobSet with a made-up uid would have the garbage collector delete it.
        const bystander = await pvc(
          'postgres-0',
          [{ ...owner(keeper, false), apiVersion: 'v1', kind: 'ConfigMap' }],
          false,
        );
        for (const kind of ['TrainJob', 'JobSet']) {
          const made = {
            ...owner(kind === 'TrainJob' ? trainJob : jobSet, false),
            name: '0',
            uid: '00000000-0000-0000-0000-000000000000',
          };
          refused(
            await patch('postgres-0', [{ op: 'add', path: '/metadata/ownerReferences/-', value: made }]),
            `a ${kind} owner on a claim no TrainJob or JobSet owns`,
          );
        }
        assert.deepEqual(
          (await get(['pvc', 'postgres-0'])).metadata.ownerReferences,
          bystander.metadata.ownerReferences,
        );
      });

      it('allowed: the release before a rebuild and the hand-back after it, as src/rebuild/pvc-plan.ts plans them', async () => {
        const claim = await pvc('data-job');
        const spec = { volumeClaimPolicies: [{ templates: [{ metadata: { name: 'data' } }] }] };
        const js = { ...jobSet, spec: { ...jobSet.spec, ...spec } } as JobSet;
        const release = planPvcRelease(trainJob as TrainJob, js, [claim as PersistentVolumeClaim]);
        assert.ok(release.ok && release.release.length === 1, 'one claim to release');
        allowed(await patch('data-job', release.release[0].ops), 'the release');
        const released = await get(['pvc', 'data-job']);
        assert.deepEqual(
          released.metadata.ownerReferences.map((o: Obj) => o.kind),
          ['TrainJob'],
        );
        const back = planPvcHandBack(trainJob as TrainJob, jobSet as JobSet, [released as PersistentVolumeClaim]);
        assert.equal(back.length, 1);
        allowed(await patch('data-job', back[0].ops), 'the hand-back');
        assert.deepEqual(
          (await get(['pvc', 'data-job'])).metadata.ownerReferences.map((o: Obj) => o.kind),
          ['JobSet'],
        );
      });
    });

    describe('JobSet and PodGroup delete', () => {
      /** The minimal CRD of a kind the test creates objects of (no controller runs here). */
      const crd = (group: string, version: string) => ({
        apiVersion: 'apiextensions.k8s.io/v1',
        kind: 'CustomResourceDefinition',
        metadata: { name: `podgroups.${group}` },
        spec: {
          group,
          scope: 'Namespaced',
          names: { plural: 'podgroups', singular: 'podgroup', kind: 'PodGroup' },
          versions: [
            {
              name: version,
              served: true,
              storage: true,
              schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
            },
          ],
        },
      });
      const GROUPS = [
        { group: 'scheduling.x-k8s.io', version: 'v1alpha1' },
        { group: 'scheduling.volcano.sh', version: 'v1beta1' },
      ];
      const podGroup = (group: string, version: string, name: string, owners: Obj[]) =>
        cp.applyYaml(
          toYaml([
            {
              apiVersion: `${group}/${version}`,
              kind: 'PodGroup',
              metadata: { name, namespace: TEAM, ownerReferences: owners },
              spec: { minMember: 2 },
            },
          ]),
        );
      /** As src/reconciler/cluster.ts sends it: uid and resourceVersion preconditions (a JobSet foreground). */
      const deleteAsReconciler = async (apiPath: string, foreground: boolean) => {
        const live = JSON.parse((await cp.kubectl(['get', '--raw', apiPath])).stdout) as Obj;
        return as(
          asReconciler,
          ['delete', '--raw', apiPath, '-f', '-'],
          JSON.stringify({
            kind: 'DeleteOptions',
            apiVersion: 'v1',
            ...(foreground ? { propagationPolicy: 'Foreground' } : {}),
            preconditions: { uid: live.metadata.uid, resourceVersion: live.metadata.resourceVersion },
          }),
        );
      };
      const jobSetPath = (name: string) => `/apis/jobset.x-k8s.io/v1alpha2/namespaces/${TEAM}/jobsets/${name}`;

      before(async () => {
        await cp.applyYaml(toYaml(GROUPS.map((g) => crd(g.group, g.version))));
        for (const g of GROUPS)
          await waitFor(`the ${g.group} PodGroup served`, async () => {
            const r = await cp.kubectl(['get', `podgroups.${g.group}`, '-n', TEAM], { check: false });
            return r.code === 0;
          });
      });

      it('JobSet: refused for one no TrainJob controls, one controlled by a TrainJob of another name, one its TrainJob owns but does not control', async () => {
        const held = await trainJobNamed('held');
        await jobSetNamed('loose', []);
        await jobSetNamed('other', [owner(trainJob, true)]);
        await jobSetNamed('held', [owner(held, false)]);
        for (const name of ['loose', 'other', 'held'])
          refused(await as(asReconciler, ['delete', 'jobset', name, '-n', TEAM]), `delete JobSet ${name}`);
        assert.equal((await get(['jobset', 'loose'])).metadata.name, 'loose');
      });

      it('JobSet: refused for the one controlled by the TrainJob of its name while it runs (not suspended)', async () => {
        const running = await trainJobNamed('running');
        await jobSetNamed('running', [owner(running, true)], false);
        refused(await deleteAsReconciler(jobSetPath('running'), true), 'delete the running JobSet');
        assert.equal((await get(['jobset', 'running'])).spec.suspend, false);
      });

      it('JobSet: allowed for the one controlled by the TrainJob of its name, as a rebuild deletes it (foreground, preconditions)', async () => {
        const rebuilt = await trainJobNamed('rebuilt');
        await jobSetNamed('rebuilt', [owner(rebuilt, true)]);
        allowed(await deleteAsReconciler(jobSetPath('rebuilt'), true), 'delete JobSet rebuilt');
      });

      for (const { group, version } of GROUPS) {
        const path = (name: string) => `/apis/${group}/${version}/namespaces/${TEAM}/podgroups/${name}`;
        it(`${group} PodGroup: refused for one no TrainJob controls and one of another name than its TrainJob; allowed for the TrainJob's own (preconditions)`, async () => {
          await podGroup(group, version, 'loose', []);
          await podGroup(group, version, 'other', [owner(trainJob, true)]);
          for (const name of ['loose', 'other'])
            refused(
              await as(asReconciler, ['delete', `podgroups.${group}`, name, '-n', TEAM]),
              `delete ${group} PodGroup ${name}`,
            );
          await podGroup(group, version, 'job', [owner(trainJob, true)]);
          allowed(await deleteAsReconciler(path('job'), false), `delete ${group} PodGroup job`);
        });
      }
    });

    describe('TrainJob patch', () => {
      // As src/reconciler/cluster.ts sends them: the report by a forced server-side apply under the
      // reconciler's field manager, the refusal fold by a merge patch that carries the resourceVersion.
      const customObjects = () => reconcilerConfig().makeApiClient(CustomObjectsApi);
      const trainJobPatch = (body: unknown, strategy: PatchStrategy, fieldManager = RECONCILER) =>
        answer(
          customObjects().patchNamespacedCustomObject(
            {
              group: 'trainer.kubeflow.org',
              version: 'v1alpha1',
              namespace: TEAM,
              plural: 'trainjobs',
              name: 'job',
              body,
              fieldManager,
              ...(strategy === PatchStrategy.ServerSideApply ? { force: true } : {}),
            },
            setHeaderOptions('Content-Type', strategy),
          ),
        );

      it('refused: a change of the spec (a suspended job resumed, its runtime patched), a label, another annotation, an owner', async () => {
        const before = await get(['trainjob', 'job']);
        const cases: [string, Obj][] = [
          ['spec.suspend', { spec: { suspend: false } }],
          [
            'spec.runtimePatches',
            {
              spec: {
                runtimePatches: [
                  {
                    manager: 'example.com/attacker',
                    trainingRuntimeSpec: { template: { metadata: { labels: { x: 'y' } } } },
                  },
                ],
              },
            },
          ],
          ['a label', { metadata: { labels: { team: 'b' } } }],
          ['an annotation not the project’s', { metadata: { annotations: { 'example.com/x': 'y' } } }],
          [
            'the report with another annotation',
            { metadata: { annotations: { [REPORT_ANNOTATION]: '{}', 'example.com/x': 'y' } } },
          ],
          ['an owner', { metadata: { ownerReferences: [owner(jobSet, false)] } }],
        ];
        for (const [what, body] of cases) refused(await trainJobPatch(body, PatchStrategy.MergePatch), what);
        const after = await get(['trainjob', 'job']);
        assert.deepEqual(after.spec, before.spec);
        assert.deepEqual(after.metadata.annotations, before.metadata.annotations);
      });

      it('allowed: the report annotation (server-side apply) and the refusal fold (merge patch), and their removal', async () => {
        const live = (await get(['trainjob', 'job'])) as TrainJob;
        const report = { state: 'Waiting' as const, numNodes: 2, reason: 'a test' };
        allowed(
          await trainJobPatch(reportApplyConfiguration(live, report), PatchStrategy.ServerSideApply),
          'the report',
        );
        const withReport = await get(['trainjob', 'job']);
        assert.ok(withReport.metadata.annotations[REPORT_ANNOTATION]);
        const fold = (value: string | null) => ({
          metadata: {
            resourceVersion: withReport.metadata.resourceVersion,
            annotations: { [REFUSAL_SEEN_ANNOTATION]: value },
          },
        });
        allowed(await trainJobPatch(fold('1'), PatchStrategy.MergePatch), 'the refusal fold');
        allowed(
          await trainJobPatch(reportApplyConfiguration(live, undefined), PatchStrategy.ServerSideApply),
          'the report removed',
        );
        const cleared = await get(['trainjob', 'job']);
        assert.equal(cleared.metadata.annotations?.[REPORT_ANNOTATION], undefined);
        assert.equal(cleared.metadata.annotations?.[REFUSAL_SEEN_ANNOTATION], '1');
        assert.deepEqual(cleared.spec, live.spec);
      });
    });

    describe('JobSet create and patch', () => {
      const COMPANION_JOBSETS = 'trainjob-webhook-confine-reconciler-companion-jobsets';
      const JOBSETS_POLICY = new RegExp(`ValidatingAdmissionPolicy '${COMPANION_JOBSETS}'`);
      const jobSetsRefused = (r: KubectlResult, what: string) => {
        assert.notEqual(r.code, 0, `${what}: allowed`);
        assert.match(r.stderr, JOBSETS_POLICY, `${what}: refused by the companion-jobsets policy (${r.stderr.trim()})`);
      };
      const collection = `/apis/jobset.x-k8s.io/v1alpha2/namespaces/${TEAM}/jobsets`;
      /** As dryRunCreate sends it: a POST, with `?dryRun=All` when `dryRun`. */
      const create = (body: Obj, dryRun: boolean) =>
        as(
          asReconciler,
          ['create', '--raw', dryRun ? `${collection}?dryRun=All` : collection, '-f', '-'],
          JSON.stringify(body),
        );
      /** As setJobSetSuspend sends it: a JSON patch that tests uid and resourceVersion. */
      const patchJobSet = async (name: string, ops: unknown[], dryRun = false) => {
        const live = await get(['jobset', name]);
        const tests = [
          { op: 'test', path: '/metadata/uid', value: live.metadata.uid },
          { op: 'test', path: '/metadata/resourceVersion', value: live.metadata.resourceVersion },
        ];
        return as(asReconciler, [
          'patch',
          'jobset',
          name,
          '-n',
          TEAM,
          '--type=json',
          '-p',
          JSON.stringify([...tests, ...ops]),
          ...(dryRun ? ['--dry-run=server'] : []),
        ]);
      };
      const image = [
        {
          op: 'replace',
          path: '/spec/replicatedJobs/0/template/spec/template/spec/containers/0/image',
          value: 'attacker/miner',
        },
      ];
      let fresh: Obj;

      before(async () => {
        fresh = await trainJobNamed('fresh');
        const mine = await trainJobNamed('mine');
        await jobSetNamed('mine', [owner(mine, true)]);
        let last = '';
        await waitFor('the companion-jobsets policy in force', async () => {
          last = (await patchJobSet('mine', image, true)).stderr;
          return JOBSETS_POLICY.test(last);
        }).catch((err: Error) => {
          throw new Error(`${err.message}; the last answer: ${last}`);
        });
      });

      it('create: refused for real (Trainer creates JobSets); allowed as a server-side dry run of a JobSet its TrainJob controls, refused as one of a JobSet no TrainJob of its name controls', async () => {
        const body = jobSetBody('fresh', [owner(fresh, true)]);
        jobSetsRefused(await create(body, false), 'a real create');
        assert.equal((await cp.kubectl(['get', 'jobset', 'fresh', '-n', TEAM], { check: false })).code, 1);
        allowed(await create(body, true), 'the dry-run create');
        refused(await create(jobSetBody('fresh', []), true), 'a dry-run create of a JobSet no TrainJob controls');
        refused(
          await create(jobSetBody('fresh', [owner(trainJob, true)]), true),
          'a dry-run create of a JobSet controlled by a TrainJob of another name',
        );
      });

      it('patch: refused for its containers, its labels, its owners; allowed for spec.suspend alone', async () => {
        const before = await get(['jobset', 'mine']);
        jobSetsRefused(await patchJobSet('mine', image), 'the image');
        jobSetsRefused(
          await patchJobSet('mine', [{ op: 'add', path: '/metadata/labels', value: { team: 'b' } }]),
          'a label',
        );
        // Both the ownership policy and the companion-jobsets one refuse it: the API server names
        // whichever it evaluated first (CI saw either).
        const ownerDropped = await patchJobSet('mine', [{ op: 'remove', path: '/metadata/ownerReferences' }]);
        assert.notEqual(ownerDropped.code, 0, 'its owner dropped: allowed');
        assert.match(
          ownerDropped.stderr,
          /ValidatingAdmissionPolicy 'trainjob-webhook-confine-reconciler(-companion-jobsets)?'/,
          `its owner dropped: refused by a confine policy (${ownerDropped.stderr.trim()})`,
        );
        assert.deepEqual((await get(['jobset', 'mine'])).spec, before.spec);
        allowed(await patchJobSet('mine', [{ op: 'add', path: '/spec/suspend', value: false }]), 'the resume');
        allowed(await patchJobSet('mine', [{ op: 'add', path: '/spec/suspend', value: true }]), 'the suspend');
        await jobSetNamed('unowned', []);
        refused(
          await patchJobSet('unowned', [{ op: 'add', path: '/spec/suspend', value: false }]),
          'a JobSet no TrainJob controls',
        );
      });

      it('standalone mode (the companion-jobsets binding removed): a create and an apply of a JobSet its TrainJob controls allowed, one of another still refused', async () => {
        await cp.kubectl(['delete', 'validatingadmissionpolicybinding', COMPANION_JOBSETS]);
        const body = jobSetBody('fresh', [owner(fresh, true)]);
        await waitFor(
          'the companion-jobsets binding out of force',
          async () => (await create(body, true)).code === 0 && (await patchJobSet('mine', image, true)).code === 0,
        );
        allowed(await create(body, false), 'the create');
        allowed(await patchJobSet('fresh', image), 'a new image');
        refused(await create(jobSetBody('stray', []), false), 'a JobSet no TrainJob controls');
      });
    });

    describe('TrainJob CRD patch (the restorer)', () => {
      const patchCrd = (type: 'json' | 'merge', body: string) =>
        as(asReconciler, ['patch', 'crd', CRD, `--type=${type}`, '-p', body]);
      const patchFile = (file: string) =>
        as(asReconciler, ['patch', 'crd', CRD, '--type=json', '--patch-file', path.join(manifestsDir, file)]);
      const crdSpec = async () => (await get(['crd', CRD], 'default')).spec;

      it("allowed: the CRD patch as the restorer writes it (rules, the scale subresource, the status field, the columns); its restore is an admin's (a status field is never removed)", async () => {
        const shipped = await crdSpec();
        allowed(await patchFile('crd-patch/trainjob-crd-patch.yaml'), 'the CRD patch');
        const version = (await crdSpec()).versions[0];
        assert.equal(version.subresources.scale.specReplicasPath, '.spec.trainer.numNodes');
        assert.ok(version.schema.openAPIV3Schema.properties.status.properties.trainjobWebhook);
        // The restorer never writes the restore (an uninstall does), and the policy keeps status fields.
        refused(await patchFile('crd-patch/trainjob-crd-restore.yaml'), 'the restore, by the reconciler');
        const restore = await cp.kubectl([
          'patch',
          'crd',
          CRD,
          '--type=json',
          '--patch-file',
          path.join(manifestsDir, 'crd-patch/trainjob-crd-restore.yaml'),
        ]);
        assert.equal(restore.code, 0, restore.stderr);
        assert.deepEqual(await crdSpec(), shipped);
      });

      it('refused: a conversion webhook, a new short name, a schema change, the version deprecated', async () => {
        const cases: [string, 'json' | 'merge', unknown][] = [
          [
            'a conversion webhook',
            'merge',
            {
              spec: {
                conversion: {
                  strategy: 'Webhook',
                  webhook: {
                    clientConfig: { url: 'https://convert.example.invalid/c' },
                    conversionReviewVersions: ['v1'],
                  },
                },
              },
            },
          ],
          ['a short name', 'json', [{ op: 'add', path: '/spec/names/shortNames', value: ['tj'] }]],
          [
            'a field made open',
            'json',
            [
              {
                op: 'add',
                path: '/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/trainer/x-kubernetes-preserve-unknown-fields',
                value: true,
              },
            ],
          ],
          [
            "a field's description",
            'json',
            [{ op: 'add', path: '/spec/versions/0/schema/openAPIV3Schema/properties/spec/description', value: 'x' }],
          ],
          ['the version deprecated', 'json', [{ op: 'add', path: '/spec/versions/0/deprecated', value: true }]],
        ];
        const before = await crdSpec();
        for (const [what, type, body] of cases) refused(await patchCrd(type, JSON.stringify(body)), what);
        assert.deepEqual(await crdSpec(), before);
      });

      it('a scale subresource: refused pointed anywhere but the CRD patch paths; allowed as the CRD patch adds it, with a printer column', async () => {
        const before = await crdSpec();
        const scale = (value: Obj) =>
          JSON.stringify([{ op: 'add', path: '/spec/versions/0/subresources/scale', value }]);
        const generated = {
          specReplicasPath: '.spec.trainer.numNodes',
          statusReplicasPath: '.status.trainjobWebhook.nodes',
          labelSelectorPath: '.status.trainjobWebhook.selector',
        };
        for (const [what, value] of [
          ['another status path', { ...generated, statusReplicasPath: '.status.numNodes' }],
          ['another spec path', { ...generated, specReplicasPath: '.spec.trainer.numProcPerNode' }],
          [
            'no label selector',
            { specReplicasPath: generated.specReplicasPath, statusReplicasPath: generated.statusReplicasPath },
          ],
        ] as const)
          refused(await patchCrd('json', scale(value)), `a scale subresource with ${what}`);
        assert.deepEqual(await crdSpec(), before);
        allowed(
          await patchCrd(
            'json',
            JSON.stringify([
              {
                op: 'add',
                path: '/spec/versions/0/additionalPrinterColumns',
                value: [{ name: 'Nodes', type: 'integer', jsonPath: '.spec.trainer.numNodes' }],
              },
              { op: 'add', path: '/spec/versions/0/subresources/scale', value: generated },
            ]),
          ),
          'printer column and the scale subresource the CRD patch adds',
        );
      });
    });

    describe('TrainJob status writes', () => {
      const STATUS_POLICY = /ValidatingAdmissionPolicy 'trainjob-webhook-confine-reconciler-(companion-)?status'/;
      const COMPANION = 'trainjob-webhook-confine-reconciler-companion-status';
      // As the reconciler sends it: a server-side apply of the status subresource with no GET first
      // (kubectl patch would GET, a right the reconciler has not), the status field under
      // `<manager>-status`, standalone mode's conditions under its main manager.
      const patchStatus = (status: Obj, dryRun = false): Promise<KubectlResult> => {
        const manager =
          'trainjobWebhook' in status ? 'trainjob-webhook-reconciler-status' : 'trainjob-webhook-reconciler';
        return answer(
          reconcilerConfig()
            .makeApiClient(CustomObjectsApi)
            .patchNamespacedCustomObjectStatus(
              {
                group: 'trainer.kubeflow.org',
                version: 'v1alpha1',
                namespace: TEAM,
                plural: 'trainjobs',
                name: 'job',
                body: {
                  apiVersion: 'trainer.kubeflow.org/v1alpha1',
                  kind: 'TrainJob',
                  metadata: { name: 'job', namespace: TEAM },
                  status,
                },
                fieldManager: manager,
                force: true,
                ...(dryRun ? { dryRun: 'All' } : {}),
              },
              setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply),
            ),
        );
      };
      const statusRefused = (r: KubectlResult, what: string) => {
        assert.notEqual(r.code, 0, `${what}: allowed`);
        assert.match(r.stderr, STATUS_POLICY, `${what}: refused by a status policy (${r.stderr.trim()})`);
      };
      const condition = (type: string) => ({
        type,
        status: 'True',
        reason: 'Forged',
        message: 'not the reconciler',
        lastTransitionTime: '2026-01-01T00:00:00Z',
      });

      before(async () => {
        // The status field in the schema, as the CRD patch adds it (written as an admin: not confined).
        await cp.kubectl([
          'patch',
          'crd',
          CRD,
          '--type=json',
          '-p',
          JSON.stringify([
            {
              op: 'add',
              path: '/spec/versions/0/schema/openAPIV3Schema/properties/status/properties/trainjobWebhook',
              value: STATUS_FIELD_SCHEMA,
            },
          ]),
        ]);
        let last = '';
        await waitFor('the status policies in force', async () => {
          last = (await patchStatus({ conditions: [condition('Complete')] }, true)).stderr;
          return STATUS_POLICY.test(last);
        }).catch((err: Error) => {
          throw new Error(`${err.message}; the last answer: ${last}`);
        });
      });

      it('companion mode: refused for conditions, jobsStatus or trainerStatus; allowed for status.trainjobWebhook', async () => {
        for (const [what, status] of [
          ['a Complete condition', { conditions: [condition('Complete')] }],
          [
            'jobsStatus',
            { jobsStatus: [{ name: 'node', active: 0, ready: 0, succeeded: 9, failed: 0, suspended: 0 }] },
          ],
          ['trainerStatus', { trainerStatus: { progressPercentage: 100, lastUpdatedTime: '2026-01-01T00:00:00Z' } }],
        ] as const)
          statusRefused(await patchStatus(status), what);
        const live = await get(['trainjob', 'job']);
        assert.equal(live.status?.conditions, undefined, 'nothing written');
        allowed(
          await patchStatus({ trainjobWebhook: { nodes: 1, selector: 'jobset.sigs.k8s.io/jobset-name=job' } }),
          'status.trainjobWebhook',
        );
        assert.equal((await get(['trainjob', 'job'])).status.trainjobWebhook.nodes, 1);
      });

      it('standalone mode (the companion binding removed): its conditions allowed, Trainer’s other status still refused', async () => {
        await cp.kubectl(['delete', 'validatingadmissionpolicybinding', COMPANION]);
        await waitFor('the companion binding out of force', async () => {
          const r = await patchStatus({ conditions: [condition('Suspended')] }, true);
          return r.code === 0;
        });
        allowed(await patchStatus({ conditions: [condition('Suspended')] }), 'a Suspended condition');
        assert.equal((await get(['trainjob', 'job'])).status.conditions[0].type, 'Suspended');
        statusRefused(
          await patchStatus({ trainerStatus: { progressPercentage: 100, lastUpdatedTime: '2026-01-01T00:00:00Z' } }),
          'trainerStatus',
        );
      });
    });
  },
);
