// Standalone mode owns the TrainJob's status (there is no Trainer controller): the `Suspended`
// condition the way Trainer writes it, Complete, Failed and jobsStatus from the JobSet the way
// Trainer copies them (terminal-status.ts), and a condition that says why a JobSet cannot be built.
// Applied with SSA on the status subresource; conditions are a map list keyed by type, so the
// reconciler's field manager owns exactly the entries it applies. Pure.
import { TRAINJOB_API_VERSION, TRAINJOB_KIND } from '../api/names.ts';
import { type Condition, type JobSet, type TrainJob } from '../api/objects.ts';
import { isObject } from '../json/object.ts';
import { COMPLETE, FAILED, jobsStatusOf, terminalConditions, type JobStatus } from './terminal-status.ts';

export const UNBUILDABLE_CONDITION = 'JobSetCreated';

/** The condition types this reconciler applies (and so owns, under its field manager). */
export const OWNED_CONDITIONS = ['Suspended', UNBUILDABLE_CONDITION, COMPLETE, FAILED];

/** The TrainJob's readable conditions; a malformed entry is ignored (and replaced by the next apply of its type). */
function conditionsOf(trainJob: TrainJob): Condition[] {
  const conditions: unknown = trainJob.status?.conditions;
  if (!Array.isArray(conditions)) return [];
  return conditions.filter(
    (c): c is Condition =>
      isObject(c) &&
      typeof c.type === 'string' &&
      typeof c.status === 'string' &&
      typeof c.lastTransitionTime === 'string',
  );
}

function transition(
  existing: Condition | undefined,
  next: Omit<Condition, 'lastTransitionTime'>,
  now: string,
): Condition {
  // lastTransitionTime moves only when the status does: re-applying is then a no-op.
  const lastTransitionTime = existing && existing.status === next.status ? existing.lastTransitionTime : now;
  return { ...next, lastTransitionTime };
}

/**
 * True/Suspended while suspended; False/Resumed once a suspended TrainJob was resumed (a TrainJob
 * that never was suspended gets none, like Trainer).
 */
export function suspendedCondition(trainJob: TrainJob, now: string): Condition | undefined {
  const existing = conditionsOf(trainJob).find((c) => c.type === 'Suspended');
  const generation = trainJob.metadata.generation;
  const observed = generation === undefined ? {} : { observedGeneration: generation };
  if (trainJob.spec?.suspend === true) {
    return transition(
      existing,
      { type: 'Suspended', status: 'True', reason: 'Suspended', message: 'TrainJob is suspended', ...observed },
      now,
    );
  }
  if (existing)
    return transition(
      existing,
      { type: 'Suspended', status: 'False', reason: 'Resumed', message: 'TrainJob is resumed', ...observed },
      now,
    );
  return undefined;
}

/** Why no JobSet can be built: the runtime (policy, template) or the TrainJob's own count. */
export type UnbuildableReason = 'UnsupportedRuntime' | 'InvalidNumNodes';

export function unbuildableCondition(
  trainJob: TrainJob,
  message: string,
  now: string,
  reason: UnbuildableReason = 'UnsupportedRuntime',
): Condition {
  const existing = conditionsOf(trainJob).find((c) => c.type === UNBUILDABLE_CONDITION);
  return transition(existing, { type: UNBUILDABLE_CONDITION, status: 'False', reason, message }, now);
}

/** The SSA apply configuration for the status subresource (jobsStatus left out: the apply removes ours). */
export function statusApplyConfiguration(
  trainJob: TrainJob,
  conditions: Condition[],
  jobsStatus?: JobStatus[],
): Record<string, unknown> {
  return {
    apiVersion: trainJob.apiVersion ?? TRAINJOB_API_VERSION,
    kind: TRAINJOB_KIND,
    metadata: { name: trainJob.metadata.name, namespace: trainJob.metadata.namespace },
    status: { conditions, ...(jobsStatus ? { jobsStatus } : {}) },
  };
}

export interface StatusStep {
  kind: 'apply-status';
  conditions: Condition[];
  jobsStatus?: JobStatus[];
}

/**
 * The standalone status of one reconcile: Suspended, Complete, Failed and jobsStatus as the
 * installed Trainer line would write them from this JobSet (or none; `failedIsTerminal`: a Failed
 * stays, as on main), and the unbuildable condition when a JobSet cannot be built. Undefined when
 * the TrainJob's status already says all of it.
 */
export function statusStep(
  trainJob: TrainJob,
  jobSet: JobSet | undefined,
  now: string,
  failedIsTerminal: boolean,
  unbuildable?: { message: string; reason: UnbuildableReason },
): StatusStep | undefined {
  const conditions: Condition[] = [];
  const suspended = suspendedCondition(trainJob, now);
  if (suspended) conditions.push(suspended);
  conditions.push(...terminalConditions(trainJob, jobSet, now, failedIsTerminal));
  if (unbuildable) conditions.push(unbuildableCondition(trainJob, unbuildable.message, now, unbuildable.reason));
  const jobsStatus = jobsStatusOf(trainJob, jobSet);
  const changed =
    conditionsChanged(trainJob, conditions, OWNED_CONDITIONS) ||
    JSON.stringify(jobsStatus ?? []) !== JSON.stringify(jobsStatusOf(trainJob, undefined) ?? []);
  return changed ? { kind: 'apply-status', conditions, ...(jobsStatus ? { jobsStatus } : {}) } : undefined;
}

/** Whether applying `conditions` would change what the TrainJob's status already says. */
export function conditionsChanged(trainJob: TrainJob, conditions: Condition[], owned: readonly string[]): boolean {
  const current = conditionsOf(trainJob);
  for (const c of conditions) {
    const have = current.find((x) => x.type === c.type);
    if (
      !have ||
      have.status !== c.status ||
      have.reason !== c.reason ||
      have.message !== c.message ||
      have.observedGeneration !== c.observedGeneration
    )
      return true;
  }
  // A condition this reconciler owns but no longer applies is removed by the apply.
  return current.some((c) => owned.includes(c.type) && !conditions.some((x) => x.type === c.type));
}
