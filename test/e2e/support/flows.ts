// Helpers for the reconciler's flows in the world where pods run: the product's own step times
// (read from the sidecar's log and the objects' timestamps, apart from the stages' fixed delays)
// and a watch that proves a JobSet was never deleted while a pod of it still existed.
import type { CoreV1Api } from '@kubernetes/client-node';
import { STAGE_DELAYS } from '../../harness/index.ts';
import type { Sidecar, LogLine } from '../../reconciler/support/sidecar.ts';
import type { JobSet } from '../../../src/api/objects.ts';

export interface StepTimes {
  /** ms from the test's change to the sidecar's first reconcile of that generation. */
  seenMs?: number;
  /** ms from the change to the reconcile that deleted the stale JobSet. */
  deletedMs?: number;
  /** ms from the change to the new JobSet's creationTimestamp (a whole second on the server). */
  recreatedMs?: number;
  /** The sidecar's reconciles since the change: +ms outcome [steps]. */
  reconciles: string[];
}

type Timed = LogLine & { time?: number | string };

/** The sidecar logs pino's time as an ISO string (or epoch ms). */
const msOf = (l: Timed): number => (typeof l.time === 'string' ? Date.parse(l.time) : (l.time ?? 0));

export function stepTimes(
  sidecar: Sidecar,
  key: string,
  since: number,
  generation: number | undefined,
  recreated?: JobSet,
): StepTimes {
  const lines = (sidecar.logLines() as Timed[]).filter(
    (l) => l.msg === 'reconciled' && l.trainJob === key && msOf(l) >= since,
  );
  const at = (l: Timed | undefined) => (l === undefined ? undefined : msOf(l) - since);
  const createdAt = (recreated?.metadata as { creationTimestamp?: string | Date } | undefined)?.creationTimestamp;
  const created = createdAt
    ? Date.parse(String(createdAt instanceof Date ? createdAt.toISOString() : createdAt)) - since
    : undefined;
  return {
    seenMs: at(lines.find((l) => generation === undefined || (l.generation ?? 0) >= generation)),
    deletedMs: at(lines.find((l) => l.steps?.includes('delete-jobset'))),
    recreatedMs: created,
    reconciles: lines.map(
      (l) =>
        `+${at(l)}ms ${l.outcome} [${(l.steps ?? []).join(',')}]${l.outcome === 'waiting' ? ` (${String(l.detail ?? '').slice(0, 120)})` : ''}`,
    ),
  };
}

export function formatStepTimes(flow: string, expectedEnd: string, t: StepTimes): string {
  const ms = (v: number | undefined) => (v === undefined ? '-' : `${v} ms`);
  return [
    `flow: ${flow}`,
    `  expected end: ${expectedEnd}`,
    // creationTimestamp is truncated to the second: the re-creation happened within the next second.
    `  product: change -> seen ${ms(t.seenMs)} -> JobSet deleted ${ms(t.deletedMs)} -> re-created ${t.recreatedMs === undefined ? '-' : `${t.recreatedMs}..${t.recreatedMs + 1000} ms`} (creationTimestamp, whole seconds)`,
    `  stages (fixed, not the product): pod start ${STAGE_DELAYS.startMs} ms, initializer ${STAGE_DELAYS.initializerMs} ms, termination ${STAGE_DELAYS.terminationMs} ms unless a test asks longer`,
    ...t.reconciles.map((r) => `  ${r}`),
  ].join('\n');
}

/**
 * Polls, until stopped, whether the JobSet with this uid was gone while a pod of it still existed;
 * `violations` lists what was seen. Pods carry JobSet's jobset-uid label.
 */
export function watchNoEarlyDelete(
  core: CoreV1Api,
  namespace: string,
  jobSet: { name: string; uid: string },
  getJobSet: () => Promise<JobSet | undefined>,
) {
  const violations: string[] = [];
  let podsSeenAfterDelete = 0;
  let lastPods = Number.NaN;
  let podsGoneAt: number | undefined;
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      // The JobSet first, then its pods: a pod not yet terminal listed after the JobSet was seen
      // deleted ran (or was still terminating) when it was deleted, since no pod of a suspended or
      // finished Job starts again. Terminal pods are not counted: the garbage collector deletes
      // them after the JobSet, and a finished one never held the rebuild up. (Pods first would
      // flag a correct delete that came between the two reads.)
      const js = await getJobSet();
      const pods = (
        await core.listNamespacedPod({ namespace, labelSelector: `jobset.sigs.k8s.io/jobset-uid=${jobSet.uid}` })
      ).items;
      lastPods = pods.length;
      if (pods.length === 0 && podsGoneAt === undefined) podsGoneAt = Date.now();
      const present = js !== undefined && js.metadata.uid === jobSet.uid && !js.metadata.deletionTimestamp;
      const live = pods.filter((p) => p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed');
      if (!present && live.length > 0) {
        podsSeenAfterDelete++;
        violations.push(
          `JobSet ${jobSet.name} (${jobSet.uid}) deleted while pods ran or terminated: ${live.map((p) => `${p.metadata?.name}${p.metadata?.deletionTimestamp ? '(Terminating)' : ''}/${p.status?.phase}`).join(', ')}`,
        );
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  })();
  return {
    violations,
    get lastPodCount() {
      return lastPods;
    },
    /** When the poll first found no pod of the JobSet (epoch ms). */
    get podsGoneAt() {
      return podsGoneAt;
    },
    get podsSeenAfterDelete() {
      return podsSeenAfterDelete;
    },
    async stop() {
      stopped = true;
      await loop;
    },
  };
}
