// Issue 9: the install layouts and modes proven with the installed accounts' own rights, in the
// world where pods run, beside the real Trainer v2.3.0 and JobSet v0.12.0 managers. Each overlay
// (the sidecar, the default with the reconciler's own Deployment, vap) is rendered with `kubectl
// kustomize` and server-side applied; its Deployments' pods land on KWOK nodes, and the containers
// of one pod per Deployment (`serve`, `reconcile`) run as processes with the rendered containers'
// args, environment and mounts and their ServiceAccounts' tokens (TokenRequest); the webhook
// configurations call `serve` by URL on 127.0.0.1 (no Service endpoints on loopback). Then a
// TrainJob runs, is suspended, scaled several times and resumed: each JobSet is rebuilt with the
// new count, and the last one's pods run. The time from each scaling write to the new JobSet's
// creation (seen by a watch) is printed per layout.
//
// The sidecar's and the default overlay's objects, their replicas one per node and their
// PodDisruptionBudgets are checked here too (install-manifests.test.ts checks the other overlays'
// objects, the matchConditions, and cert-manager's overlay, which needs no running process).
//
// The rights: the API server's audit log (level Metadata, this namespace's ServiceAccounts) records
// every request the processes made; each must have been allowed by a rule the manifests bind to
// the account, and every right granted must have been used or be listed below with why the flow
// does not use it; `kubectl auth can-i --list` for each account must show exactly the rendered
// rights. Uninstall (docs/operations.md's steps) leaves no webhook configuration or policy behind, puts
// upstream's blanket rule back, and TrainJob writes go through.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it, type TestContext } from 'node:test';
import { CustomObjectsApi, PatchStrategy, setHeaderOptions, Watch } from '@kubernetes/client-node';
import {
  controlPlaneAvailability,
  freePort,
  pods,
  startControlPlane,
  startUpstreamControllers,
  upstreamControllersAvailability,
  upstreamCrds,
  upstreamDir,
  waitFor,
  type ControlPlane,
  type UpstreamControllers,
  skipUnless,
} from '../harness/index.ts';
import {
  byKind,
  manifestsDir,
  pointAtLoopback,
  renderOverlay,
  runPod,
  serviceAccountKubeconfig,
  toYaml,
  type Obj,
  type PodContainerProcess,
} from './support/install.ts';
import {
  auditedRequests,
  auditFlags,
  canIList,
  allows,
  grantedRights,
  showAsCanI,
  showRequest,
  showRight,
  type Right,
} from './support/install-rights.ts';
import { trainJobs } from './support/trainjobs.ts';

const skip = skipUnless(controlPlaneAvailability(), upstreamControllersAvailability());

const NS = 'kubeflow-system';
const CRD = 'trainjobs.trainer.kubeflow.org';
const JOBSET = { group: 'jobset.x-k8s.io', version: 'v1alpha2', plural: 'jobsets' } as const;
const TRAINJOB = { group: 'trainer.kubeflow.org', version: 'v1alpha1', plural: 'trainjobs' } as const;
/** numNodes after each scaling write, made while the job is suspended (it ran 1 node before). */
const COUNTS = [2, 3, 2];
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

/**
 * Rights granted that the scale flow (companion mode, a ClusterTrainingRuntime without workspace
 * PVCs, no mutating configuration) does not use, each with why it is needed. A right missing from
 * both the requests and this list fails the test: no right is granted for nothing.
 */
const UNUSED_BY_THE_FLOW: Record<string, string> = {
  'get trainjobs.trainer.kubeflow.org':
    'the webhook, for a write to trainjobs/scale (kubectl scale, an autoscaler): it reads the TrainJob the Scale is for (test/e2e/scale-subresource.test.ts)',
  'patch trainjobs.trainer.kubeflow.org/status':
    'status.trainjobWebhook, written when it changes; standalone mode (--mode standalone) also reports through a condition',
  'create jobsets.jobset.x-k8s.io':
    "a dry-run create before deleting a JobSet whose workspace claims survive it (would JobSet's webhook admit it again beside them?); standalone mode's apply that creates a JobSet needs create as well as patch",
  'get jobsets.jobset.x-k8s.io':
    'a live read while the watches have not listed yet (start-up); afterwards reconciles read the cache',
  'patch jobsets.jobset.x-k8s.io':
    'suspending a stale JobSet Trainer has not suspended yet (suspend and scale in one update); standalone mode applies JobSets',
  'get clustertrainingruntimes.trainer.kubeflow.org':
    "a TrainJob without Trainer's runtime snapshot ConfigMap (Trainer v2.3.0 writes one at the first reconcile; the reconciler reads that)",
  'get trainingruntimes.trainer.kubeflow.org':
    'a TrainJob whose runtimeRef names a namespaced TrainingRuntime, without a runtime snapshot',
  'update trainjobs.trainer.kubeflow.org/finalizers':
    'checked, not requested: the OwnerReferencesPermissionEnforcement admission plugin asks for it when standalone mode creates a JobSet owned by the TrainJob with blockOwnerDeletion',
  'update jobsets.jobset.x-k8s.io/finalizers':
    'checked, not requested: the OwnerReferencesPermissionEnforcement admission plugin asks for it when a workspace PVC is handed back with blockOwnerDeletion',
  'get podgroups.scheduling.x-k8s.io':
    "gang-scheduled runtimes (podGroupPolicy.coscheduling): the TrainJob's PodGroup read before a rebuild (test/e2e/gang-scheduling.test.ts)",
  'delete podgroups.scheduling.x-k8s.io':
    'gang-scheduled runtimes: a PodGroup whose minMember is the old count deleted, so Trainer re-creates it from the new one',
  'get podgroups.scheduling.volcano.sh':
    "runtimes with podGroupPolicy.volcano: the TrainJob's Volcano PodGroup read before a rebuild",
  'delete podgroups.scheduling.volcano.sh': 'runtimes with podGroupPolicy.volcano: a stale Volcano PodGroup deleted',
  'list events':
    "a resumed TrainJob whose JobSet stays suspended: Trainer's refusal Events say whether its apply is refused for an immutable part (test/e2e/upgrade-strands-nothing.test.ts)",
  'patch persistentvolumeclaims':
    'runtimes with volumeClaimPolicies (workspace PVCs handed back to the re-created JobSet)',
  'get leaderworkersets.leaderworkerset.x-k8s.io':
    "a stale JobSet whose dataset initializer is Trainer's data cache: its LeaderWorkerSet is read before the rebuild (test/e2e/reconciler-cache-initializer.test.ts)",
  'delete leaderworkersets.leaderworkerset.x-k8s.io':
    "the data cache's LeaderWorkerSet, deleted before the rebuild so that the initializer's second run creates it anew",
  'get serviceaccounts':
    "the data cache's ServiceAccount, read before the rebuild of a JobSet whose dataset initializer is the cache",
  'delete serviceaccounts':
    "the data cache's ServiceAccount, deleted before the rebuild so that the initializer's second run creates it anew",
  'get leases.coordination.k8s.io[trainjob-webhook-reconciler]':
    "the webhook's count change judgment GETs the reconciler's Lease only while no watch on it runs or the watch brought nothing for 10 s (serve --watch-reconciler-lease); the reconciler's account uses it",
  'update mutatingwebhookconfigurations.admissionregistration.k8s.io[trainjob-webhook-mutating]':
    'overlays/mutating only (the rotation keeps its caBundle current; here it does not exist)',
};

interface Layout {
  overlay: string;
  /** The containers of one pod per Deployment, run as processes. */
  processes: PodContainerProcess[];
  docs: Obj[];
  since: number;
  until?: number;
  rebuildMs: number[];
  /** `kubectl auth can-i --list` per account, taken before uninstall. */
  canI: Map<string, Awaited<ReturnType<typeof canIList>>>;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

describe(
  "install layouts and modes with the installed accounts' own rights, in the world where pods run",
  { skip },
  () => {
    let cp: ControlPlane;
    let upstream: UpstreamControllers;
    let auditLog: string;
    let scratch: string;
    let objects: CustomObjectsApi;
    let originalCrdSpec: Obj;
    const layouts = new Map<string, Layout>();

    const crdSpec = async () => (JSON.parse((await cp.kubectl(['get', 'crd', CRD, '-o', 'json'])).stdout) as Obj).spec;
    const blanketRule = (spec: Obj) =>
      spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.trainer['x-kubernetes-validations'];
    const kubectlPatchCrd = (file: string) =>
      cp.kubectl(['patch', 'crd', CRD, '--type=json', '--patch-file', path.join(manifestsDir, file)]);

    /** Installs the overlay as docs/install.md says and runs its pods' containers with their accounts' tokens. */
    async function install(overlay: string): Promise<Layout> {
      const since = Date.now();
      const docs = await renderOverlay(cp, path.join(manifestsDir, overlay));
      const configs = docs.filter((d) => /WebhookConfiguration$/.test(d.kind));
      const webhookPort = await freePort();
      // The configurations as rendered, but by URL at the serve process (no caBundle: the rotation injects it).
      await cp.applyYaml(
        toYaml([...docs.filter((d) => !configs.includes(d)), ...pointAtLoopback(configs, webhookPort)]),
      );
      const deployments = byKind(docs, 'Deployment');
      // The pods land on KWOK nodes and run there (as far as KWOK's kubelets go): spread one per
      // node where the Deployment requires it, each Deployment's budget allowing one disruption.
      for (const d of deployments) {
        const app = d.spec.selector.matchLabels['app.kubernetes.io/name'];
        const running = await waitFor(`${d.metadata.name}: ${d.spec.replicas} pods running on nodes`, async () => {
          const out = JSON.parse(
            (await cp.kubectl(['get', 'pods', '-n', NS, '-l', `app.kubernetes.io/name=${app}`, '-o', 'json'])).stdout,
          ) as { items: Obj[] };
          const items = out.items.filter(
            (p) => p.status?.phase === 'Running' && p.spec.nodeName && !p.metadata.deletionTimestamp,
          );
          return items.length === d.spec.replicas ? items : undefined;
        });
        const oneper = (d.spec.template.spec.topologySpreadConstraints ?? []).some(
          (c: Obj) => c.topologyKey === 'kubernetes.io/hostname' && c.whenUnsatisfiable === 'DoNotSchedule',
        );
        if (oneper)
          assert.equal(
            new Set(running.map((p) => p.spec.nodeName)).size,
            running.length,
            `${d.metadata.name}: one pod per node`,
          );
        const [pdb] = docs.filter(
          (x) => x.kind === 'PodDisruptionBudget' && x.spec.selector.matchLabels['app.kubernetes.io/name'] === app,
        );
        assert.ok(pdb, `${d.metadata.name} has a PodDisruptionBudget`);
        await waitFor(`${pdb.metadata.name}: the budget counts every pod and allows one disruption`, async () => {
          const status = (
            JSON.parse((await cp.kubectl(['get', 'pdb', pdb.metadata.name, '-n', NS, '-o', 'json'])).stdout) as Obj
          ).status;
          return status?.currentHealthy === d.spec.replicas && status?.disruptionsAllowed === 1;
        });
      }
      const accounts = [...new Set(deployments.map((d) => d.spec.template.spec.serviceAccountName as string))];
      const kubeconfigs = Object.fromEntries(
        await Promise.all(accounts.map(async (sa) => [sa, await serviceAccountKubeconfig(cp, NS, sa)] as const)),
      );
      const processes: PodContainerProcess[] = [];
      for (const d of deployments) {
        // What a pod has that a process here does not: its own IP (serve binds loopback, and its
        // certificate names 127.0.0.1, where the configurations call it) and the namespace file of
        // its ServiceAccount (reconcile's default Lease namespace).
        // A reconciler with no --handoff-port listens on 8082 (its pod's own): a free one here.
        const reconciler = d.spec.template.spec.containers.find((c: Obj) => c.name === 'reconciler');
        const handoff =
          reconciler && !reconciler.args.includes('--handoff-port') ? ['--handoff-port', String(await freePort())] : [];
        const extraArgs: Record<string, string[]> = {
          webhook: ['--host', '127.0.0.1', '--service-dns', '127.0.0.1'],
          reconciler: ['--lease-namespace', NS, '--ops-host', '127.0.0.1', '--log-level', 'debug', ...handoff],
        };
        processes.push(...(await runPod(cp, d, { kubeconfigs, extraArgs, fixedPorts: { 9443: webhookPort } })));
      }
      if (configs.length) {
        // The rotation injects the caBundle; the API server takes the configurations in asynchronously.
        await waitFor('the caBundle injected', async () => {
          const live = JSON.parse(
            (
              await cp.kubectl([
                'get',
                ...configs.map((c) => `${c.kind.toLowerCase()}/${c.metadata.name}`),
                '-o',
                'json',
              ])
            ).stdout,
          ) as Obj;
          return ((live.items ?? [live]) as Obj[]).every((c) => c.webhooks.every((w: Obj) => w.clientConfig.caBundle));
        });
        const probe = {
          apiVersion: 'trainer.kubeflow.org/v1alpha1',
          kind: 'TrainJob',
          metadata: { name: 'probe', namespace: NS },
          spec: { runtimeRef: { name: 'torch-distributed' }, suspend: true },
        };
        await waitFor(
          'the webhook called with the injected CA',
          async () => (await trainJobs(cp.kubeConfig).create(probe, 'All')).allowed,
        );
      }
      const layout: Layout = { overlay, processes, docs, since, rebuildMs: [], canI: new Map() };
      layouts.set(overlay, layout);
      return layout;
    }

    /** docs/operations.md's uninstall: delete what the overlay applied (and the Lease the reconciler made). */
    async function uninstall(layout: Layout): Promise<void> {
      // What the accounts may do, while they exist: compared with the requests by checkRights.
      for (const account of new Set(
        byKind(layout.docs, 'Deployment').map((d) => d.spec.template.spec.serviceAccountName as string),
      ))
        layout.canI.set(account, await canIList(cp, NS, account));
      for (const p of layout.processes) await p.proc.stop();
      layout.until = Date.now();
      await cp.kubectl(['delete', '-f', '-', '--ignore-not-found', '--wait=true'], { input: toYaml(layout.docs) });
      await cp.kubectl(['delete', 'lease', 'trainjob-webhook-reconciler', '-n', NS, '--ignore-not-found']);
    }

    /**
     * The scale flow: a TrainJob runs 1 node; suspended (its pod gone), its numNodes is changed
     * COUNTS.length times (each a single merge patch, timed to the new JobSet's ADDED event), then
     * it is resumed and the last count's pods run.
     */
    async function scaleFlow(t: TestContext, layout: Layout, ns: string): Promise<void> {
      const p = pods(cp);
      await cp.kubectl(['create', 'namespace', ns]);
      const name = 'scaled';
      const body = {
        apiVersion: 'trainer.kubeflow.org/v1alpha1',
        kind: 'TrainJob',
        metadata: { name, namespace: ns },
        spec: {
          runtimeRef: { name: 'torch-distributed' },
          suspend: false,
          trainer: { numNodes: 1, image: 'ghcr.io/acme/train:1', command: ['torchrun', 'train.py'] },
        },
      };
      await objects.createNamespacedCustomObject({ ...TRAINJOB, namespace: ns, body });
      await p.waitJobSetRunning(ns, name, 1, 'node');
      await objects.patchNamespacedCustomObject(
        { ...TRAINJOB, namespace: ns, name, body: { spec: { suspend: true } } },
        mergePatch,
      );
      await waitFor('the node pod gone', async () => (await p.ofJobSet(ns, name, 'node')).length === 0);

      // Every JobSet of the namespace as it is added, with the local time it was seen.
      const added = new Map<string, { at: number; jobSet: Obj }>();
      const watch = await new Watch(cp.kubeConfig).watch(
        `/apis/${JOBSET.group}/${JOBSET.version}/namespaces/${ns}/jobsets`,
        {},
        (phase, obj: Obj) => {
          if (phase === 'ADDED' && !added.has(obj.metadata.uid))
            added.set(obj.metadata.uid, { at: Date.now(), jobSet: obj });
        },
        () => undefined,
      );
      try {
        for (const numNodes of COUNTS) {
          const before = (await objects.getNamespacedCustomObject({ ...JOBSET, namespace: ns, name })) as Obj;
          const at = Date.now();
          await objects.patchNamespacedCustomObject(
            { ...TRAINJOB, namespace: ns, name, body: { spec: { trainer: { numNodes } } } },
            mergePatch,
          );
          const rebuilt = await waitFor(
            `JobSet rebuilt with ${numNodes} nodes`,
            () =>
              [...added.values()].find(
                (a) =>
                  a.jobSet.metadata.uid !== before.metadata.uid &&
                  a.at >= at &&
                  a.jobSet.spec.replicatedJobs.find((r: Obj) => r.name === 'node')?.template.spec.parallelism ===
                    numNodes,
              ),
            { timeoutMs: 120_000, intervalMs: 50 },
          );
          layout.rebuildMs.push(rebuilt.at - at);
        }
      } finally {
        watch.abort();
      }
      const last = COUNTS.at(-1)!;
      await objects.patchNamespacedCustomObject(
        { ...TRAINJOB, namespace: ns, name, body: { spec: { suspend: false } } },
        mergePatch,
      );
      await p.waitJobSetRunning(ns, name, last, 'node', 120_000);
      t.diagnostic(
        `${layout.overlay || 'manifests/ (default)'}: scaling write -> new JobSet seen: ${layout.rebuildMs.map((ms) => `${ms} ms`).join(', ')} (median ${median(layout.rebuildMs)} ms); ${last} node pods run after resume`,
      );
    }

    /**
     * (a) every request of the account allowed by the manifests' rules, (b) every right used or
     * listed, (c) can-i --list shows exactly them.
     */
    async function checkRights(t: TestContext, layout: Layout, account: string) {
      const rights = grantedRights(layout.docs, NS, account);
      const requests = auditedRequests(auditLog, `system:serviceaccount:${NS}:${account}`, layout.since, layout.until);
      assert.ok(requests.length > 0, `${account}: no request recorded`);
      const refused = requests.filter((q) => q.decision !== 'allow');
      assert.deepEqual(refused.map(showRequest), [], `${account}: requests the API server refused`);
      const unmatched = requests.filter((q) => !rights.some((r) => allows(r, q)));
      assert.deepEqual(
        unmatched.map(showRequest),
        [],
        `${account}: requests allowed by something other than the manifests' rules`,
      );
      const unused = rights.filter((r) => !requests.some((q) => allows(r, q)));
      const unexplained = unused.filter((r) => !(showAsCanI(r) in UNUSED_BY_THE_FLOW));
      assert.deepEqual(
        unexplained.map(showRight),
        [],
        `${account}: rights granted but neither used nor listed with a reason`,
      );
      const canI = layout.canI.get(account);
      assert.ok(canI, `${account}: can-i --list was taken`);
      assert.deepEqual(
        canI.rights,
        [...new Set(rights.map(showAsCanI))].sort(),
        `${account}: kubectl auth can-i --list`,
      );
      const verbs = (q: Right | { verb: string; resource: string; group: string }) =>
        `${q.verb} ${q.resource}${q.group ? `.${q.group}` : ''}`;
      t.diagnostic(
        `${layout.overlay || 'manifests/ (default)'}, ${account}: ${requests.length} requests, all allowed by its rules (${[...new Set(requests.map(verbs))].sort().join('; ')}); ` +
          `granted and not used by the flow: ${unused.length ? unused.map((r) => `${showAsCanI(r)} (${UNUSED_BY_THE_FLOW[showAsCanI(r)]})`).join('; ') : 'none'}`,
      );
    }

    before(async () => {
      scratch = await mkdtemp(path.join(tmpdir(), 'tjw-install-layouts-'));
      const audit = await auditFlags(scratch, NS);
      auditLog = audit.logFile;
      // Trainer v2.3.0's own CRD (the Trainer running here), patched below the way docs/install.md says.
      const trainJobCrd = path.join(upstreamDir, 'crds/trainer-v2.3.0/trainer.kubeflow.org_trainjobs.yaml');
      cp = await startControlPlane({
        crds: [upstreamCrds.jobsets, trainJobCrd, upstreamCrds.trainingRuntimes, upstreamCrds.clusterTrainingRuntimes],
        apiServerArgs: audit.args,
      });
      upstream = await startUpstreamControllers(cp, { trainer: true });
      await cp.applyYaml(path.join(upstreamDir, 'runtimes/torch_distributed.yaml'));
      await cp.kubectl(['create', 'namespace', NS]);
      objects = cp.kubeConfig.makeApiClient(CustomObjectsApi);
      originalCrdSpec = await crdSpec();
    });
    after(async () => {
      if (process.exitCode && cp) process.stderr.write(cp.logTails(30));
      await upstream?.stop();
      await cp?.stop();
      if (scratch) await rm(scratch, { recursive: true, force: true });
    });

    describe('webhook + CRD patch (the default mode)', () => {
      it('the CRD patch lifts the blanket rule and carries the table', async () => {
        await kubectlPatchCrd('crd-patch/trainjob-crd-patch.yaml');
        assert.equal(blanketRule(await crdSpec()), undefined);
      });

      it('the sidecar layout (overlays/sidecar): one pod, the webhook and the reconciler sidecar, one account; the reconciler has no readiness probe; the scale flow passes with its rights', async (t) => {
        const layout = await install('overlays/sidecar');
        assert.deepEqual(layout.docs.map((d) => `${d.kind}/${d.metadata.name}`).sort(), [
          'ClusterRole/trainjob-webhook',
          'ClusterRole/trainjob-webhook-cert',
          'ClusterRole/trainjob-webhook-reconciler',
          'ClusterRoleBinding/trainjob-webhook',
          'ClusterRoleBinding/trainjob-webhook-cert',
          'ClusterRoleBinding/trainjob-webhook-reconciler',
          'Deployment/trainjob-webhook',
          'PodDisruptionBudget/trainjob-webhook',
          'Role/trainjob-webhook-cert',
          'Role/trainjob-webhook-reconciler-lease',
          'Role/trainjob-webhook-reconciler-lease-reader',
          'RoleBinding/trainjob-webhook-cert',
          'RoleBinding/trainjob-webhook-reconciler-lease',
          'RoleBinding/trainjob-webhook-reconciler-lease-reader',
          'Secret/trainjob-webhook-cert',
          'Service/trainjob-webhook',
          'ServiceAccount/trainjob-webhook',
          'ValidatingAdmissionPolicy/trainjob-webhook-confine-reconciler',
          'ValidatingAdmissionPolicy/trainjob-webhook-confine-reconciler-companion-jobsets',
          'ValidatingAdmissionPolicy/trainjob-webhook-confine-reconciler-companion-status',
          'ValidatingAdmissionPolicy/trainjob-webhook-confine-reconciler-status',
          'ValidatingAdmissionPolicyBinding/trainjob-webhook-confine-reconciler',
          'ValidatingAdmissionPolicyBinding/trainjob-webhook-confine-reconciler-companion-jobsets',
          'ValidatingAdmissionPolicyBinding/trainjob-webhook-confine-reconciler-companion-status',
          'ValidatingAdmissionPolicyBinding/trainjob-webhook-confine-reconciler-status',
          'ValidatingWebhookConfiguration/trainjob-webhook-validating',
        ]);
        const [deployment] = byKind(layout.docs, 'Deployment');
        const [webhook, sidecar] = deployment.spec.template.spec.containers;
        assert.deepEqual([webhook.name, sidecar.name], ['webhook', 'reconciler']);
        assert.ok(webhook.readinessProbe, 'the webhook has a readiness probe');
        assert.equal(sidecar.readinessProbe, undefined, 'the reconciler never makes the pod NotReady');
        assert.ok(webhook.args.includes('--handoff'), 'hints over loopback');
        try {
          await scaleFlow(t, layout, 'layout-sidecar');
          const hints = await layout.processes
            .find((p) => p.name === 'reconciler')!
            .metric('trainjob_reconciler_handoff_hints_total', /result="persisted"/);
          assert.ok(hints >= COUNTS.length, `the webhook handed its hints on (${hints})`);
        } finally {
          await uninstall(layout);
        }
        await checkRights(t, layout, 'trainjob-webhook');
      });

      it("the default layout (manifests/): two Deployments, two accounts, no sidecar and no hints; the scale flow passes with each account's rights", async (t) => {
        const layout = await install('');
        const webhookPod = byKind(layout.docs, 'Deployment', 'trainjob-webhook')[0].spec.template.spec;
        const reconcilerPod = byKind(layout.docs, 'Deployment', 'trainjob-webhook-reconciler')[0].spec.template.spec;
        assert.deepEqual(
          webhookPod.containers.map((c: Obj) => c.name),
          ['webhook'],
        );
        assert.ok(!webhookPod.containers[0].args.includes('--handoff'), 'no hints');
        assert.deepEqual(
          [webhookPod.serviceAccountName, reconcilerPod.serviceAccountName],
          ['trainjob-webhook', 'trainjob-webhook-reconciler'],
        );
        assert.ok(reconcilerPod.containers[0].readinessProbe, 'its own readiness (watches synced)');
        assert.equal(byKind(layout.docs, 'PodDisruptionBudget', 'trainjob-webhook-reconciler').length, 1);
        try {
          await scaleFlow(t, layout, 'layout-default');
          assert.equal(
            await layout.processes
              .find((p) => p.name === 'reconciler')!
              .metric('trainjob_reconciler_handoff_hints_total'),
            0,
            'no hints: the watches alone',
          );
        } finally {
          await uninstall(layout);
        }
        await checkRights(t, layout, 'trainjob-webhook');
        await checkRights(t, layout, 'trainjob-webhook-reconciler');
        const sidecar = layouts.get('overlays/sidecar')!;
        t.diagnostic(
          `time from the scaling write to the new JobSet, median of ${COUNTS.length}: sidecar with hints ${median(sidecar.rebuildMs)} ms, separate Deployment from its watches ${median(layout.rebuildMs)} ms`,
        );
      });

      it("uninstall: the restore patch puts upstream's blanket rule back (the CRD's spec as Trainer shipped it), no webhook configuration is left, and TrainJob writes go through", async () => {
        await kubectlPatchCrd('crd-patch/trainjob-crd-restore.yaml');
        assert.deepEqual(await crdSpec(), originalCrdSpec);
        await assertNothingBlocks('after-default');
      });
    });

    describe('VAP mode: the policy carries the table, the CRD only lifts the blanket rule, the reconciler runs as its own Deployment', () => {
      it("the lift patch, the policy and the reconciler: the policy refuses what the table refuses, and the scale flow passes with the reconciler's rights", async (t) => {
        await kubectlPatchCrd('vap/trainjob-crd-lift.yaml');
        const spec = await crdSpec();
        assert.equal(blanketRule(spec), undefined);
        assert.equal(
          spec.versions[0].schema.openAPIV3Schema.properties.spec['x-kubernetes-validations'],
          undefined,
          "none of the table's rules in the CRD: the policy alone carries them",
        );
        const layout = await install('overlays/vap');
        assert.deepEqual(
          byKind(layout.docs, 'Deployment').map((d) => d.metadata.name),
          ['trainjob-webhook-reconciler'],
        );
        assert.deepEqual(
          layout.docs.filter((d) => /WebhookConfiguration$/.test(d.kind)),
          [],
        );
        const ns = 'layout-vap';
        try {
          await scaleFlow(t, layout, ns);
          // The policy is in force (its binding takes effect asynchronously): an image change is refused.
          const tj = trainJobs(cp.kubeConfig);
          const refused = await waitFor('the policy refuses an image change', async () => {
            const out = await tj.update(ns, 'scaled', (o) => (o.spec.trainer.image = 'ghcr.io/acme/train:2'), 'All');
            return out.allowed || out.refusal.code === 409 ? undefined : out.refusal;
          });
          assert.match(
            refused.message,
            /ValidatingAdmissionPolicy 'trainjob-webhook\.trainer\.kubeflow\.org'.*spec\.trainer\.image: field is immutable/,
          );
          // The scale subresource (the lift adds it): its own policy refuses a `kubectl scale` that
          // changes the count (it sees the Scale alone, not the TrainJob: the lift carries no numNodes
          // rule that would judge it), and admits one that keeps it.
          const scale = (replicas: number, ...more: string[]) =>
            cp.kubectl(['scale', 'trainjob/scaled', '-n', ns, '--replicas', String(replicas), ...more], {
              check: false,
            });
          await waitFor('the scale policy in force', async () =>
            /ValidatingAdmissionPolicy 'trainjob-webhook-scale\.trainer\.kubeflow\.org'/.test(
              (await scale(3, '--dry-run=server')).stderr,
            ),
          );
          const changed = await scale(3);
          assert.equal(changed.code, 1, changed.stdout);
          assert.match(
            changed.stderr,
            /ValidatingAdmissionPolicy 'trainjob-webhook-scale\.trainer\.kubeflow\.org' with binding '[^']+' denied request: spec\.trainer\.numNodes: in VAP mode the scale subresource \(kubectl scale, autoscalers\) cannot change numNodes: .*Suspend and change numNodes in one update instead: kubectl patch trainjob NAME --type=merge -p '\{"spec":\{"suspend":true,"trainer":\{"numNodes":N\}\}\}'/,
          );
          const kept = await scale(2);
          assert.equal(kept.code, 0, kept.stderr);
          assert.match(kept.stdout, /^trainjob\.trainer\.kubeflow\.org\/scaled scaled$/m);
          const numNodes = await cp.kubectl([
            'get',
            'trainjob',
            'scaled',
            '-n',
            ns,
            '-o',
            'jsonpath={.spec.trainer.numNodes}',
          ]);
          assert.equal(numNodes.stdout, '2');
        } finally {
          await uninstall(layout);
        }
        await checkRights(t, layout, 'trainjob-webhook-reconciler');
        t.diagnostic(
          `time from the scaling write to the new JobSet in VAP mode, median of ${COUNTS.length}: ${median(layout.rebuildMs)} ms`,
        );
      });

      it('every right listed as unused by the flow is one the layouts grant (no stale entry)', () => {
        const granted = new Set([...layouts.values()].flatMap((l) => [...l.canI.values()].flatMap((c) => c.rights)));
        assert.deepEqual(
          Object.keys(UNUSED_BY_THE_FLOW).filter((r) => !granted.has(r)),
          [],
        );
      });

      it("uninstall: the lift undone, no policy left, upstream's CRD as shipped, and TrainJob writes go through", async () => {
        await kubectlPatchCrd('vap/trainjob-crd-lift-restore.yaml');
        assert.deepEqual(await crdSpec(), originalCrdSpec);
        assert.equal(
          (
            await cp.kubectl(['get', 'validatingadmissionpolicies,validatingadmissionpolicybindings', '-o', 'name'])
          ).stdout.trim(),
          '',
        );
        await assertNothingBlocks('after-vap');
      });
    });

    /**
     * Nothing of ours is left in the way: no configuration of ours, TrainJob creates and updates go
     * through, and a numNodes change is refused by upstream's blanket rule again.
     */
    async function assertNothingBlocks(ns: string): Promise<void> {
      const configs = (
        await cp.kubectl(['get', 'validatingwebhookconfigurations,mutatingwebhookconfigurations', '-o', 'name'])
      ).stdout
        .split('\n')
        .filter((l) => l.includes('trainjob-webhook'));
      assert.deepEqual(configs, []);
      await cp.kubectl(['create', 'namespace', ns]);
      const tj = trainJobs(cp.kubeConfig);
      const body = {
        apiVersion: 'trainer.kubeflow.org/v1alpha1',
        kind: 'TrainJob',
        metadata: { name: 'free', namespace: ns },
        spec: { runtimeRef: { name: 'torch-distributed' }, suspend: true, trainer: { numNodes: 1 } },
      };
      const created = await waitFor('a TrainJob create goes through', async () => {
        const out = await tj.create(body);
        return out.allowed ? out : undefined;
      });
      assert.ok(created.allowed);
      // (Trainer writes the new TrainJob's status meanwhile: a conflict is tried again.)
      const labelled = await waitFor('a label change', async () => {
        const out = await tj.update(ns, 'free', (o) => (o.metadata.labels = { team: 'a' }));
        return out.allowed || out.refusal.code !== 409 ? out : undefined;
      });
      assert.equal(labelled.allowed, true, labelled.allowed ? '' : labelled.refusal.message);
      const scaled = await waitFor("upstream's blanket rule in force again", async () => {
        const out = await tj.update(ns, 'free', (o) => (o.spec.trainer.numNodes = 2), 'All');
        return out.allowed || out.refusal.code === 409 ? undefined : out.refusal;
      });
      assert.match(scaled.message, /spec\.trainer: Invalid value: field is immutable$/);
    }
  },
);
