// Whether the TrainJob read is the one a review was made from: the gate before a judgment that a
// caller not known to be the API server could otherwise use as an oracle (trainjob-read.ts). Pure
// and apart from the reader, so the admission route imports it without the cluster modules.
import { isObject } from '../../json/object.ts';
import type { Read } from '../scale-admission.ts';

/**
 * Why the TrainJob read is not the one a review was made from (`sent`: the review's oldObject
 * metadata), or undefined when it is: the same uid and the same resourceVersion. A review without
 * either is never judged: the API server always sends both.
 */
export function whyNotTheStored(
  read: Read<Record<string, unknown>>,
  sent: { uid?: unknown; resourceVersion?: unknown },
): string | undefined {
  if (read.kind === 'failed') return `the TrainJob could not be read (${read.error})`;
  if (read.kind === 'absent') return 'the TrainJob was not found';
  const meta = isObject(read.value.metadata) ? read.value.metadata : {};
  if (typeof sent.uid !== 'string' || !sent.uid) return 'the review names no uid';
  if (sent.uid !== meta.uid) return 'the TrainJob was replaced';
  if (typeof sent.resourceVersion !== 'string' || !sent.resourceVersion) return 'the review names no resourceVersion';
  if (sent.resourceVersion !== meta.resourceVersion)
    return 'the stored TrainJob is not the version the review was made from (it changed since, or the watch cache is a moment behind)';
  return undefined;
}
