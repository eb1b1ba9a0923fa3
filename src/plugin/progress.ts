// What `kubectl trainjob scale` records on the TrainJob while it works: one annotation with the
// count it scales to, the step it last took, and whether the job was paused before it began (a job
// it found paused stays paused). Written in the same patch as each of its own writes (no extra
// write), so that after Ctrl-C or a lost connection the next run continues from there; removed
// when the scale is done. A scale with --no-resume keeps it as the mark that the pause is the
// plugin's, so that a later scale resumes the job. Pure.
import type { TrainJob } from '../api/objects.ts';
import { isObject } from '../json/object.ts';

export const PROGRESS_ANNOTATION = 'trainjob-webhook.kubeflow.org/scale-progress';

/** The plugin's own steps that write the TrainJob, and the end of a --no-resume scale. */
export type ProgressStep = 'paused' | 'scaled' | 'resumed' | 'held';

export interface ProgressRecord {
  /** The numNodes the scale sets. */
  nodes: number;
  /** The last write the plugin made. */
  step: ProgressStep;
  /** The job was suspended before the first run began: it is not resumed. */
  pausedBefore: boolean;
}

const STEPS: readonly ProgressStep[] = ['paused', 'scaled', 'resumed', 'held'];

/** The record on the TrainJob, or undefined (none, or one edited into something else). */
export function progressOf(trainJob: TrainJob): ProgressRecord | undefined {
  const raw = trainJob.metadata.annotations?.[PROGRESS_ANNOTATION];
  if (!raw) return undefined;
  try {
    const v: unknown = JSON.parse(raw);
    if (
      !isObject(v) ||
      !Number.isSafeInteger(v.nodes) ||
      (v.nodes as number) < 0 ||
      !STEPS.includes(v.step as ProgressStep) ||
      typeof v.pausedBefore !== 'boolean'
    )
      return undefined;
    return { nodes: v.nodes as number, step: v.step as ProgressStep, pausedBefore: v.pausedBefore };
  } catch {
    return undefined;
  }
}

export function encodeProgress(r: ProgressRecord): string {
  return JSON.stringify({ nodes: r.nodes, step: r.step, pausedBefore: r.pausedBefore });
}

/**
 * The record a run starts from: the one on the job (its pausedBefore kept, whatever count it was
 * for), or a new one in which the job's pause now is the one it had before: its spec.suspend, or
 * what the caller says is its pause (under Kueue, an inactive Workload: Kueue's own suspension of
 * a queued or preempted job is no pause).
 */
export function startingRecord(
  trainJob: TrainJob,
  nodes: number,
  pausedNow = trainJob.spec?.suspend === true,
): ProgressRecord {
  const found = progressOf(trainJob);
  if (found) return { ...found, nodes };
  return { nodes, step: 'paused', pausedBefore: pausedNow };
}

/** A JSON merge patch (RFC 7386) of a TrainJob: only what the plugin changes. */
export interface TrainJobPatch {
  metadata: { resourceVersion?: string; annotations: Record<string, string | null> };
  spec?: { suspend?: boolean; trainer?: { numNodes: number } };
}

/**
 * The merge patch that makes these spec changes and sets the record (or removes it: `record`
 * undefined), with the resourceVersion read, so that the API server refuses it (409) when someone
 * else wrote the TrainJob meanwhile, as an update would be. Only the changed fields are sent: the
 * rest of the object is never parsed and written back (an int64 beyond 2^53 would be rounded).
 */
export function changePatch(
  trainJob: TrainJob,
  change: { suspend?: boolean; numNodes?: number },
  record: ProgressRecord | undefined,
): TrainJobPatch {
  const spec = {
    ...(change.suspend === undefined ? {} : { suspend: change.suspend }),
    ...(change.numNodes === undefined ? {} : { trainer: { numNodes: change.numNodes } }),
  };
  const rv = trainJob.metadata.resourceVersion;
  return {
    metadata: {
      ...(rv ? { resourceVersion: rv } : {}),
      annotations: { [PROGRESS_ANNOTATION]: record ? encodeProgress(record) : null },
    },
    ...(Object.keys(spec).length ? { spec } : {}),
  };
}
