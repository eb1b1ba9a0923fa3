// Tests' handles on the world's pods and nodes (world.ts, kwok/stages.yaml): wait for pods to run,
// say a training has ended, keep a pod Terminating longer, lose a node.
import { CoreV1Api, type V1Pod } from '@kubernetes/client-node';
import type { ControlPlane } from './controlplane.ts';
import { waitFor } from './wait.ts';

/** Set by a test on a running pod: the stage pod-training-ends moves it to that phase at once. */
export const TRAINING_ANNOTATION = 'world.trainjob-webhook.test/training';
/** Seconds a deleted pod stays Terminating before its containers stop (default 2). */
export const TERMINATION_ANNOTATION = 'world.trainjob-webhook.test/termination-seconds';
/**
 * The stages' fixed delays (kwok/stages.yaml; stages.test.ts keeps them equal), for tests that
 * print the product's times apart from them.
 */
export const STAGE_DELAYS = { startMs: 1_000, initializerMs: 2_000, terminationMs: 2_000 } as const;

export type TrainingEnd = 'Succeeded' | 'Failed';

export const isRunningReady = (p: V1Pod) =>
  p.status?.phase === 'Running' &&
  !p.metadata?.deletionTimestamp &&
  !!p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
export const isTerminating = (p: V1Pod) => !!p.metadata?.deletionTimestamp;

export function pods(cp: ControlPlane) {
  const core = cp.kubeConfig.makeApiClient(CoreV1Api);
  const list = async (namespace: string, labelSelector: string) =>
    (await core.listNamespacedPod({ namespace, labelSelector })).items;
  const annotate = (namespace: string, name: string, annotations: Record<string, string>) =>
    cp.kubectl([
      'annotate',
      'pod',
      name,
      '-n',
      namespace,
      '--overwrite',
      ...Object.entries(annotations).map(([k, v]) => `${k}=${v}`),
    ]);
  const jobSetSelector = (jobSet: string, replicatedJob?: string) =>
    `jobset.sigs.k8s.io/jobset-name=${jobSet}${replicatedJob ? `,jobset.sigs.k8s.io/replicatedjob-name=${replicatedJob}` : ''}`;

  /** Waits until exactly `count` pods match, all Running and Ready (none Terminating). */
  const waitRunning = (namespace: string, labelSelector: string, count: number, timeoutMs = 60_000) =>
    waitFor(
      `${count} running pods (${namespace}, ${labelSelector})`,
      async () => {
        const items = (await list(namespace, labelSelector)).filter(
          (p) => !['Succeeded', 'Failed'].includes(p.status?.phase ?? ''),
        );
        return items.length === count && items.every(isRunningReady) ? items : undefined;
      },
      { timeoutMs },
    );

  return {
    core,
    list,
    waitRunning,
    ofJobSet: (namespace: string, jobSet: string, replicatedJob?: string) =>
      list(namespace, jobSetSelector(jobSet, replicatedJob)),
    /** The JobSet's pods (of one replicated job, if named) once `count` of them run. */
    waitJobSetRunning: (namespace: string, jobSet: string, count: number, replicatedJob?: string, timeoutMs?: number) =>
      waitRunning(namespace, jobSetSelector(jobSet, replicatedJob), count, timeoutMs),
    /** Says the training in these pods has ended: they reach that phase (exit 0 or 1). */
    endTraining: async (namespace: string, names: string[], end: TrainingEnd) => {
      for (const name of names) await annotate(namespace, name, { [TRAINING_ANNOTATION]: end });
    },
    /** Ends the training of every running pod of a JobSet (or of one of its replicated jobs). */
    endJobSetTraining: async (namespace: string, jobSet: string, end: TrainingEnd, replicatedJob?: string) => {
      const running = (await list(namespace, jobSetSelector(jobSet, replicatedJob))).filter(isRunningReady);
      for (const p of running) await annotate(namespace, p.metadata!.name!, { [TRAINING_ANNOTATION]: end });
      return running.map((p) => p.metadata!.name!);
    },
    /** Keeps these pods Terminating for `seconds` after their deletion (set before deleting). */
    terminationSeconds: async (namespace: string, names: string[], seconds: number) => {
      for (const name of names) await annotate(namespace, name, { [TERMINATION_ANNOTATION]: String(seconds) });
    },
    waitGone: (namespace: string, name: string, timeoutMs = 60_000) =>
      waitFor(
        `pod ${namespace}/${name} gone`,
        async () => {
          try {
            await core.readNamespacedPod({ namespace, name });
            return false;
          } catch (err) {
            if ((err as { code?: number }).code === 404) return true;
            throw err;
          }
        },
        { timeoutMs },
      ),
    waitPhase: (namespace: string, name: string, phases: string[], timeoutMs = 60_000) =>
      waitFor(
        `pod ${namespace}/${name} in ${phases.join('/')}`,
        async () => {
          const p = await core.readNamespacedPod({ namespace, name });
          return phases.includes(p.status?.phase ?? '') ? p : undefined;
        },
        { timeoutMs },
      ),
    /**
     * A lost node: the Node object is deleted (KWOK stops playing its kubelet); kube-controller-
     * manager's pod GC marks its pods Failed after its 40 s quarantine and deletes them.
     */
    deleteNode: (name: string) => cp.kubectl(['delete', 'node', name, '--wait=false']),
  };
}
