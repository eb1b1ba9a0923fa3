// The cluster the reconciler's end-to-end suites run in: the real control plane with the project's
// TrainJob CRD patch, the real JobSet manager (and Trainer's, in companion suites), the upstream
// runtimes plus two variants of the torchtune workspace policy, the project's own RBAC for the
// reconciler's identity, and (optionally) the real webhook handing hints on to the sidecar.
import { rulesFor } from '../../../src/rules/table.ts';
import { detectTrainerLine } from '../../../src/api/trainer-line-detect.ts';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  BatchV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type V1PersistentVolumeClaim,
  type V1Pod,
} from '@kubernetes/client-node';
import { parse, stringify } from 'yaml';
import {
  COSCHEDULING_SCHEDULER,
  currentCell,
  ensureCoschedulingBinaries,
  freePorts,
  kueueCrds,
  startCoscheduler,
  projectRoot,
  startControlPlane,
  startUpstreamControllers,
  ensureControllerBinaries,
  upstreamCrdsOf,
  upstreamDir,
  waitFor,
  type ControlPlane,
  type UpstreamControllers,
  type TrainerClientConnection,
  type TrainerLine,
  type UserKubeconfig,
} from '../../harness/index.ts';
import { crdPatchOps } from '../../../src/rules/generate/crd-patch.ts';
import { patchedCrd, trainJobs, upstreamTrainJobCrd } from '../../e2e/support/trainjobs.ts';
import { registerWebhook, startWebhook, unregisterWebhook, type WebhookProcess } from '../../e2e/support/webhook.ts';
import type { JobSet, TrainJob } from '../../../src/api/objects.ts';
import { startSidecar, type Sidecar } from './sidecar.ts';

export const JOBSET = { group: 'jobset.x-k8s.io', version: 'v1alpha2', plural: 'jobsets' } as const;
export const REPORT = 'trainjob-webhook.kubeflow.org/jobset-rebuild';
/**
 * The reconciler runs as the ServiceAccount of manifests/rbac (the default layout's account), with
 * exactly that RBAC.
 */
export const RECONCILER_SA = { namespace: 'kubeflow-system', name: 'trainjob-webhook' };
/**
 * serve's flags: the sidecars' Lease (startSidecar's leaseNamespace), followed by a watch, and the
 * runtimes from watches, as the shipped Deployment runs it.
 */
const WEBHOOK_ARGS = [
  '--reconciler-lease',
  `${RECONCILER_SA.namespace}/trainjob-webhook-reconciler`,
  '--watch-reconciler-lease',
  '--watch-runtimes',
];

export interface World {
  cp: ControlPlane;
  upstream: UpstreamControllers;
  webhook?: WebhookProcess;
  /** The reconciler's identity (the project's ServiceAccount and ClusterRole). */
  reconcilerKubeconfig: UserKubeconfig;
  /** The port the webhook hands hints to: give it to the first sidecar. */
  handoffPort: number;
  tj: ReturnType<typeof trainJobs>;
  stop(): Promise<void>;
}

export interface WorldOptions {
  trainer: boolean;
  webhook: boolean;
  /** Kueue's manager (its CRDs, the TrainJob integration only) beside Trainer and JobSet (default false). */
  kueue?: boolean;
  /** More kube-apiserver flags (e.g. admission plugins). */
  apiServerArgs?: string[];
  /** More etcd flags (bench/scale.bench.ts: a larger quota). */
  etcdArgs?: string[];
  /** Trainer's client QPS and burst (default: Trainer's, 50/s and 100). */
  trainerClientConnection?: TrainerClientConnection;
  /**
   * Gang scheduling (default false): the PodGroup CRDs of scheduler-plugins (Coscheduling) and of
   * Volcano installed before Trainer starts (its plugins need the kinds at start), scheduler-plugins'
   * scheduler running beside the default one, and the gang runtimes (`GANG_RUNTIMES`).
   */
  gang?: boolean;
  /**
   * Another Trainer line than the cell's (default: the cell's): its managers (with its JobSet's),
   * its CRDs (the TrainJob CRD with the patch generated for it) and its runtimes (v2.2.1: the
   * vendored torch and DeepSpeed ones of upstream/runtimes/v2.2.1, with the world's others left out).
   */
  line?: TrainerLine;
}

/** The vendored Volcano PodGroup CRD (upstream/SOURCES.md). */
export const VOLCANO_POD_GROUP_CRD = path.join(upstreamDir, 'volcano/scheduling.volcano.sh_podgroups.yaml');

/** torch-distributed with a podGroupPolicy: gang-scheduled by Coscheduling (its scheduler), or Volcano (by value). */
export const GANG_RUNTIMES = { coscheduling: 'torch-distributed-coscheduling', volcano: 'torch-distributed-volcano' };

function gangRuntimes(): string[] {
  const base = () => parse(readFileSync(path.join(upstreamDir, 'runtimes/torch_distributed.yaml'), 'utf8'));
  const cosched = base();
  cosched.metadata.name = GANG_RUNTIMES.coscheduling;
  cosched.spec.podGroupPolicy = { coscheduling: { scheduleTimeoutSeconds: 60 } };
  cosched.spec.template.spec.replicatedJobs[0].template.spec.template.spec.schedulerName = COSCHEDULING_SCHEDULER;
  const volcano = base();
  volcano.metadata.name = GANG_RUNTIMES.volcano;
  volcano.spec.podGroupPolicy = { volcano: {} };
  return [stringify(cosched), stringify(volcano)];
}

/** Upstream torchtune runtime with its workspace policy changed (name suffix, retentionPolicy, template spec). */
export function torchtuneVariant(
  suffix: string,
  whenDeleted?: 'Delete' | 'Retain',
  templateSpec: Record<string, unknown> = {},
): string {
  const doc = parse(readFileSync(path.join(upstreamDir, 'runtimes/torchtune_llama3_2_1B.yaml'), 'utf8'));
  doc.metadata.name = `torchtune-llama3.2-1b-${suffix}`;
  const policy = doc.spec.template.spec.volumeClaimPolicies[0];
  if (whenDeleted) policy.retentionPolicy = { whenDeleted };
  Object.assign(policy.templates[0].spec, templateSpec);
  return stringify(doc);
}

/**
 * A Trainer line's stock runtimes (upstream/SOURCES.md): v2.3.0's six for v2.3.0 and the main line
 * (the same files at its commit), v2.2.1's own torch and deepspeed runtimes for v2.2.1.
 */
export function stockRuntimes(line: TrainerLine): string[] {
  const files =
    line === 'v2.2.1'
      ? ['v2.2.1/torch_distributed.yaml', 'v2.2.1/deepspeed_distributed.yaml']
      : [
          'torch_distributed.yaml',
          'deepspeed_distributed.yaml',
          'torchtune_llama3_2_1B.yaml',
          'jax_distributed.yaml',
          'xgboost_distributed.yaml',
          'mlx_distributed.yaml',
        ];
  return files.map((f) => readFileSync(path.join(upstreamDir, 'runtimes', f), 'utf8'));
}

/** The CRD with the patch generated for the Trainer line it is (the file docs/versions.md names for that line). */
function patchedForItsLine(crd: ReturnType<typeof upstreamTrainJobCrd>) {
  return patchedCrd(crd, crdPatchFor(crd));
}

/** This project's CRD patch generated for an upstream TrainJob CRD (for the line it is), as JSON6902 ops. */
export function crdPatchFor(upstream: Record<string, any>): unknown[] {
  return crdPatchOps(upstream.spec.versions[0].schema.openAPIV3Schema, rulesFor(detectTrainerLine(upstream).line));
}

export async function startWorld(opts: WorldOptions): Promise<World> {
  const scratch = await mkdtemp(path.join(tmpdir(), 'tjw-reconciler-'));
  // The CRDs of the Trainer line whose managers run here (the default cell too: v2.3.0's beside
  // v2.3.0's manager, whatever CRD the admission-only suites install), or of the line asked for.
  const line = opts.line ?? currentCell().trainer;
  const crds = upstreamCrdsOf(line);
  const binaries = opts.line ? await ensureControllerBinaries(process.env, opts.line) : undefined;
  const upstream = upstreamTrainJobCrd(line);
  const crdFile = path.join(scratch, 'trainjobs-patched.yaml');
  await writeFile(crdFile, stringify(patchedForItsLine(upstream)));
  // Kueue's eleven CRDs as one file: one apply and one wait instead of eleven of each.
  const kueueFile = path.join(scratch, 'kueue-crds.yaml');
  if (opts.kueue)
    await writeFile(kueueFile, (await Promise.all((await kueueCrds()).map((f) => readFile(f, 'utf8')))).join('---\n'));
  const gang = opts.gang ? await ensureCoschedulingBinaries() : undefined;
  const cp = await startControlPlane({
    crds: [
      ...(gang ? [gang.podGroupCrd, VOLCANO_POD_GROUP_CRD] : []),
      crds.jobsets,
      crdFile,
      crds.trainingRuntimes,
      crds.clusterTrainingRuntimes,
      ...(opts.kueue ? [kueueFile] : []),
    ],
    apiServerArgs: opts.apiServerArgs,
    etcdArgs: opts.etcdArgs,
  });
  await rm(scratch, { recursive: true, force: true });
  try {
    const [handoffPort] = await freePorts(1);
    // serve starts beside the upstream managers (it needs only the CRD); registered further down.
    const [controllers, , webhook] = await Promise.all([
      startUpstreamControllers(cp, {
        trainer: opts.trainer,
        kueue: opts.kueue,
        binaries,
        trainerClientConnection: opts.trainerClientConnection,
      }),
      gang ? startCoscheduler(cp, gang) : undefined,
      opts.webhook
        ? startWebhook(cp, {
            name: 'webhook',
            handoff: `http://127.0.0.1:${handoffPort}/hints`,
            extraArgs: WEBHOOK_ARGS,
          })
        : undefined,
    ]);
    // The runtimes in one apply (a kubectl run costs about half a second): the Trainer line's.
    await cp.applyYaml(
      [
        ...stockRuntimes(line),
        ...(line === 'v2.2.1'
          ? []
          : [torchtuneVariant('delete', 'Delete'), torchtuneVariant('retain', 'Retain', { volumeMode: 'Filesystem' })]),
        ...(gang ? gangRuntimes() : []),
      ].join('\n---\n'),
    );

    await cp.kubectl(['create', 'namespace', RECONCILER_SA.namespace]);
    // The default layout's account: the webhook's roles and the reconciler's (manifests/rbac).
    await cp.applyYaml((await cp.kubectl(['kustomize', path.join(projectRoot, 'manifests/rbac')])).stdout);
    const reconcilerKubeconfig = await cp.makeUserKubeconfig(
      `system:serviceaccount:${RECONCILER_SA.namespace}:${RECONCILER_SA.name}`,
      ['system:serviceaccounts', `system:serviceaccounts:${RECONCILER_SA.namespace}`],
    );

    if (webhook) await registerWebhook(cp, webhook);
    const world: World = {
      cp,
      upstream: controllers,
      webhook,
      reconcilerKubeconfig,
      handoffPort,
      tj: trainJobs(cp.kubeConfig),
      async stop() {
        // The managers in force (an upgrade test replaces them).
        await world.upstream.stop();
        await cp.stop();
      },
    };
    return world;
  } catch (err) {
    await cp.stop();
    throw err;
  }
}

export function api(cp: ControlPlane) {
  const objects = cp.kubeConfig.makeApiClient(CustomObjectsApi);
  const core = cp.kubeConfig.makeApiClient(CoreV1Api);
  const batch = cp.kubeConfig.makeApiClient(BatchV1Api);
  const getJobSet = async (namespace: string, name: string): Promise<JobSet | undefined> => {
    try {
      return (await objects.getNamespacedCustomObject({ ...JOBSET, namespace, name })) as JobSet;
    } catch (err) {
      if ((err as { code?: number }).code === 404) return undefined;
      throw err;
    }
  };
  return {
    objects,
    core,
    batch,
    getJobSet,
    /** Waits for the JobSet to satisfy `pred` (it may not exist for a while). */
    waitJobSet: (namespace: string, name: string, what: string, pred: (js: JobSet) => boolean, timeoutMs = 60_000) =>
      waitFor(
        `JobSet ${namespace}/${name}: ${what}`,
        async () => {
          const js = await getJobSet(namespace, name);
          return js && !js.metadata.deletionTimestamp && pred(js) ? js : undefined;
        },
        { timeoutMs },
      ),
    pods: async (namespace: string, jobSet: string): Promise<V1Pod[]> =>
      (await core.listNamespacedPod({ namespace, labelSelector: `jobset.sigs.k8s.io/jobset-name=${jobSet}` })).items,
    pvc: (namespace: string, name: string): Promise<V1PersistentVolumeClaim> =>
      core.readNamespacedPersistentVolumeClaim({ namespace, name }),
    events: async (namespace: string, name: string) =>
      (await core.listNamespacedEvent({ namespace, fieldSelector: `involvedObject.name=${name}` })).items,
    mergePatchTrainJob: (namespace: string, name: string, patch: object) =>
      cp.kubectl(['patch', 'trainjob', name, '-n', namespace, '--type', 'merge', '-p', JSON.stringify(patch)]),
    report: (t: TrainJob) => {
      const raw = t.metadata.annotations?.[REPORT];
      return raw ? (JSON.parse(raw) as Record<string, any>) : undefined;
    },
    /**
     * Keeps the first pod of a JobSet with a finalizer, so that once deleted it stays Terminating
     * (with no nodes, pods vanish as soon as a JobSet is suspended); `release` lets it go.
     */
    holdFirstPod: async (
      namespace: string,
      jobSet: string,
    ): Promise<{ podName: string; release(): Promise<unknown> }> => {
      const [held] = await waitFor(`a pod of ${jobSet}`, async () => {
        const p = (
          await core.listNamespacedPod({ namespace, labelSelector: `jobset.sigs.k8s.io/jobset-name=${jobSet}` })
        ).items;
        return p.length ? p : undefined;
      });
      const podName = held.metadata?.name ?? '';
      await cp.kubectl([
        'patch',
        'pod',
        podName,
        '-n',
        namespace,
        '--type',
        'merge',
        '-p',
        '{"metadata":{"finalizers":["e2e.trainjob-webhook/hold"]}}',
      ]);
      return {
        podName,
        release: () =>
          cp.kubectl([
            'patch',
            'pod',
            podName,
            '-n',
            namespace,
            '--type',
            'json',
            '-p',
            '[{"op":"remove","path":"/metadata/finalizers"}]',
          ]),
      };
    },
  };
}

export const rJob = (js: JobSet | undefined, name = 'node') => js?.spec?.replicatedJobs?.find((r) => r.name === name);
export const parallelism = (js: JobSet | undefined, name = 'node') => rJob(js, name)?.template?.spec?.parallelism;
export const envValue = (js: JobSet | undefined, env: string) =>
  rJob(js)
    ?.template?.spec?.template?.spec?.containers?.find((c) => c.name === 'node')
    ?.env?.find((e) => e.name === env)?.value;

export function torchTrainJob(name: string, namespace: string, spec: Record<string, unknown> = {}): TrainJob {
  return {
    apiVersion: 'trainer.kubeflow.org/v1alpha1',
    kind: 'TrainJob',
    metadata: { name, namespace },
    spec: {
      runtimeRef: { name: 'torch-distributed' },
      suspend: true,
      trainer: { numNodes: 1, image: 'ghcr.io/acme/train:1', command: ['torchrun', 'train.py'] },
      ...spec,
    },
  };
}

/**
 * A suite's TrainJob helpers for one namespace. The world is read at call time, since suites
 * start it in before().
 */
export function inNamespace(ns: string, world: () => World) {
  const getTj = (name: string) => world().tj.get(ns, name) as Promise<TrainJob>;
  return {
    key: (name: string) => `${ns}/${name}`,
    getTj,
    /** Creates the TrainJob through the API server (and so the webhook); it must be admitted. */
    create: async (t: TrainJob) => {
      const out = await world().tj.create(t as Record<string, any>);
      assert.ok(out.allowed, JSON.stringify(out));
      return out.object as TrainJob;
    },
    patch: (name: string, p: object) => api(world().cp).mergePatchTrainJob(ns, name, p),
  };
}

/**
 * Runs `fn` with the webhook configurations removed, as in a cluster where the change reached the
 * object without this webhook (before it was installed, the VAP layout, an uninstall): what the
 * webhook refuses can then be stored, so the reconciler's backstop can be tried. `fn` should retry
 * its write (the API server drops a configuration within about a second). The webhook is
 * registered again afterwards, and waited for.
 */
export async function withoutWebhook<T>(w: World, fn: () => Promise<T>): Promise<T> {
  const webhook = w.webhook;
  if (!webhook) return fn();
  await unregisterWebhook(w.cp);
  try {
    return await fn();
  } finally {
    await registerWebhook(w.cp, webhook);
    const calls = () => webhook.counter('trainjob_webhook_requests_total', /webhook="validate"/);
    const before = await calls();
    const probe = torchTrainJob('webhook-probe', 'default');
    await waitFor('the API server calls the webhook again', async () => {
      await w.tj.create(probe as Record<string, any>, 'All');
      return (await calls()) > before;
    });
  }
}

/** A write retried until it is admitted (a configuration just removed may still be called for a moment). */
export const untilAdmitted = (what: string, write: () => Promise<unknown>) =>
  waitFor(what, async () => {
    try {
      await write();
      return true;
    } catch {
      return undefined;
    }
  });

/** The reconciler in companion mode beside the world's webhook: its Lease, its hand-off port. */
export function startWorldReconciler(w: World, name = 'reconciler'): Promise<Sidecar> {
  return startSidecar(w.cp, {
    name,
    mode: 'companion',
    kubeconfig: w.reconcilerKubeconfig.path,
    leaseNamespace: RECONCILER_SA.namespace,
    handoffPort: w.handoffPort,
  });
}
