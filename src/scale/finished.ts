// Will the TrainJob never be reconciled again? Then a deleted JobSet would never come back, so the
// reconciler never deletes (nor builds) one for it. Pure.
//
// Trainer v2.3.0 (github.com/kubeflow/trainer/v2@v2.3.0/pkg/controller/trainjob_controller.go):
// `Reconcile` first drops a Failed condition unless its reason is DeadlineExceeded
// (`removeFailedCondition`, :246-252), then builds and applies the JobSet only when
// `!IsTrainJobFinished` (:107; pkg/util/trainjob/trainjob.go:32: Complete or Failed is True). So a
// Complete TrainJob, and one Failed with DeadlineExceeded (whose JobSet Trainer deleted itself,
// `reconcileDeadline`, :174-180), are never built again; any other Failed one is (its condition
// is dropped, the JobSet re-applied, and the status taken from the new JobSet). A JobSet whose
// `Completed` condition is True makes its TrainJob Complete on Trainer's next pass (the jobset
// plugin's `Status`, pkg/runtime/framework/plugins/jobset/jobset.go:450-453), so it counts too.
// Trainer's main line (kubeflow/trainer#3891) dropped `removeFailedCondition`: every Failed stays,
// and `!IsTrainJobFinished` never builds its JobSet again (upstream/trainer-main-8c0f5059/pkg/
// controller/trainjob_controller.go:101-113), so there any Failed TrainJob is finished for good;
// so it is under an unknown line (the careful rule). See src/api/trainer-line.ts.
// Standalone mode follows the same rule, as it stands in for Trainer's controller.
import { type JobSet, type TrainJob } from '../api/objects.ts';
import type { TrainerLine } from '../api/trainer-line.ts';
import { isObject } from '../json/object.ts';

/** Trainer v2.3.0's reason on the Failed condition of a TrainJob past its activeDeadlineSeconds. */
export const DEADLINE_EXCEEDED = 'DeadlineExceeded';

function trueCondition(status: unknown, type: string): Record<string, unknown> | undefined {
  const conditions: unknown = isObject(status) ? status.conditions : undefined;
  if (!Array.isArray(conditions)) return undefined;
  return conditions.find((c): c is Record<string, unknown> => isObject(c) && c.type === type && c.status === 'True');
}

const itsJobSet = (jobSet: JobSet | undefined, named: boolean): string =>
  named && jobSet ? `its JobSet ${jobSet.metadata.name}` : 'its JobSet';

/**
 * Why the TrainJob will never be reconciled again by `trainer`'s line, or undefined when it will.
 * `named` false: the JobSet is "its JobSet", unnamed (an answer to a caller not known to be the
 * API server names no object but the request's TrainJob: scale-admission.ts).
 */
export function neverReconciledAgain(
  trainJob: TrainJob,
  jobSet: JobSet | undefined,
  trainer: Pick<TrainerLine, 'failedIsTerminal' | 'label'>,
  named = true,
): string | undefined {
  const its = itsJobSet(jobSet, named);
  if (trueCondition(trainJob.status, 'Complete')) return 'the TrainJob is Complete';
  const failed = trueCondition(trainJob.status, 'Failed');
  if (failed?.reason === DEADLINE_EXCEEDED) return `the TrainJob failed with ${DEADLINE_EXCEEDED}`;
  if (failed && trainer.failedIsTerminal)
    return `the TrainJob is Failed${typeof failed.reason === 'string' && failed.reason ? ` (${failed.reason})` : ''}, which is final under ${trainer.label}`;
  if (jobSet && trueCondition(jobSet.status, 'Completed'))
    return `${its} is Completed (the TrainJob is Complete from it)`;
  // Where Failed is final, a Failed JobSet already is: Trainer writes the TrainJob's Failed from it
  // on its next pass (main's plugins/jobset/jobset.go), and a rebuild in between would restart it.
  if (jobSet && trainer.failedIsTerminal && trueCondition(jobSet.status, 'Failed'))
    return `${its} is Failed, which is final under ${trainer.label} (the TrainJob is Failed from it)`;
  return undefined;
}
