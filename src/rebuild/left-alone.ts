// Every TrainJob the reconciler leaves alone before it judges anything, and why, in the words its
// log line gives (reconcile.ts logs each once per change at info; skip-memo.ts remembers what was
// said). These are the only skips: nothing is read beyond the TrainJob and its JobSet, and nothing
// is written, not even a report (a TrainJob another controller manages is hands off). Every other
// TrainJob the reconciler does not rebuild says why in its report (report.ts) and an Event.
// Checked in this order; the first that applies is the reason. Pure.
import { TRAINER_MANAGED_BY } from '../api/names.ts';
import { isDeleting, show, type JobSet, type TrainJob } from '../api/objects.ts';
import { malformedMetadata } from '../api/wellformed.ts';

/** Why the reconciler leaves this TrainJob alone, and what to do about it; undefined: it does not. */
export function leftAlone(tj: TrainJob, js: JobSet | undefined): string | undefined {
  const unreadable = malformedMetadata('TrainJob', tj) ?? (js ? malformedMetadata('JobSet', js) : undefined);
  if (unreadable)
    return `${unreadable}: left alone, as metadata that cannot be read is never acted on (nothing is judged or written); correct that field to have the TrainJob reconciled`;
  const managedBy = tj.spec?.managedBy;
  if (managedBy && managedBy !== TRAINER_MANAGED_BY)
    return `spec.managedBy is ${show(managedBy)}, not ${TRAINER_MANAGED_BY}: that controller runs this TrainJob, so its JobSet is neither rebuilt nor created here and nothing is written to it; managedBy cannot be changed, so for numNodes changes carried out by this reconciler, create the TrainJob without spec.managedBy`;
  if (isDeleting(tj.metadata))
    return 'the TrainJob is being deleted (metadata.deletionTimestamp is set): its JobSet is neither rebuilt nor created; to train again, create a new TrainJob';
  return undefined;
}
