// The write of this project's status field, status.trainjobWebhook (its content:
// src/rebuild/status-field.ts), after each reconcile that decided something: an SSA apply on the
// TrainJob's status subresource, only when the stored field differs (so a reconcile that finds
// nothing new writes nothing).
//
// Under a field manager of its own, `<--field-manager>-status`: standalone mode applies the
// TrainJob's conditions on the same subresource under the reconciler's manager, and an apply
// removes what its manager applied before and left out, so one manager for both would have each
// apply remove the other's fields.
//
// A failed write is logged, not thrown: the field is for display (kubectl get, kubectl scale,
// autoscalers), and the steps before it are done. It reports the failure, and the reconcile asks
// to look again soon (reconcile.ts, RETRY.blockedMs): the resync is hours apart, and a TrainJob at
// rest gets no watch event, so waiting for "the next reconcile" could leave the field stale.
import { TRAINJOB } from '../api/names.ts';
import type { TrainJob } from '../api/objects.ts';
import { jsonApi } from '../cluster/api-json.ts';
import type { ApiClient } from '../cluster/api-request.ts';
import { describeError } from '../cluster/errors.ts';
import { resourcePath } from '../cluster/resource-path.ts';
import type { Logger } from '../observability/logger.ts';
import type { Observation } from '../rebuild/decision.ts';
import type { RebuildReport } from '../rebuild/report.ts';
import {
  sameStatusField,
  statusFieldApplyConfiguration,
  statusFieldOf,
  type StatusField,
} from '../rebuild/status-field.ts';

/** The status field's field manager: the reconciler's, suffixed (128 characters at most, like any). */
const statusFieldManager = (fieldManager: string): string => `${fieldManager.slice(0, 121)}-status`;

export type StatusFieldApply = (trainJob: TrainJob, field: StatusField) => Promise<void>;

export function statusFieldApplier(client: ApiClient, fieldManager: string): StatusFieldApply {
  const api = jsonApi(client);
  const options = { fieldManager: statusFieldManager(fieldManager), force: true };
  return async (trainJob, field) => {
    const { namespace = '', name = '' } = trainJob.metadata;
    const path = resourcePath(TRAINJOB, { namespace, name, subresource: 'status' });
    await api.apply(path, statusFieldApplyConfiguration(trainJob, field), options);
  };
}

/**
 * Writes the field for what this reconcile observed and the report now in force (the one it wrote,
 * else the one on record), when it differs from the stored one. `mayWrite`: false once this
 * replica no longer leads. False when the write failed (logged): the caller looks again soon.
 */
export async function publishStatusField(
  o: Observation,
  report: RebuildReport | undefined,
  apply: StatusFieldApply,
  mayWrite: () => boolean,
  log: Logger,
): Promise<boolean> {
  const field = statusFieldOf({ trainJob: o.trainJob, jobSet: o.jobSet, runtime: o.runtime, report });
  if (sameStatusField(o.trainJob, field) || !mayWrite()) return true;
  try {
    await apply(o.trainJob, field);
    log.debug({ statusField: field }, 'status field written');
    return true;
  } catch (err) {
    log.warn(
      { error: describeError(err) },
      'the status field (status.trainjobWebhook: kubectl get columns, the scale subresource) could not be written; the TrainJob is looked at again soon',
    );
    return false;
  }
}
