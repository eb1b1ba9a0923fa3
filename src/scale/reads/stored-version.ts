// Whether the TrainJob read is the one a review was made from: the gate before a judgment that a
// caller not known to be the API server could otherwise use as an oracle (trainjob-read.ts). Apart
// from the reader, so the admission route imports it without the cluster modules.
import { isObject } from '../../json/object.ts';
import type { Read } from '../scale-admission.ts';

type TrainJobRead = Read<Record<string, unknown>>;
type Sent = { uid?: unknown; resourceVersion?: unknown };

const metadataOf = (value: Record<string, unknown>) => (isObject(value.metadata) ? value.metadata : {});

/**
 * Why the TrainJob read is not the one a review was made from (`sent`: the review's oldObject
 * metadata), or undefined when it is: the same uid, which a forger cannot guess. A review without
 * a uid or a resourceVersion is never judged: the API server always sends both.
 */
export function whyNotTheStored(read: TrainJobRead, sent: Sent): string | undefined {
  if (read.kind === 'failed') return `the TrainJob could not be read (${read.error})`;
  if (read.kind === 'absent') return 'the TrainJob was not found';
  if (typeof sent.uid !== 'string' || !sent.uid) return 'the review names no uid';
  if (sent.uid !== metadataOf(read.value).uid) return 'the TrainJob was replaced';
  if (typeof sent.resourceVersion !== 'string' || !sent.resourceVersion) return 'the review names no resourceVersion';
  return undefined;
}

/** Whether the TrainJob read has the review's resourceVersion: when not, it is read again (REREAD_AFTER_MS). */
export function isTheSentVersion(read: TrainJobRead, sent: Sent): boolean {
  return read.kind === 'found' && metadataOf(read.value).resourceVersion === sent.resourceVersion;
}

/**
 * Pauses before reading the watch cache again when the uid matched but the version did not (ms).
 * The API server takes a write's oldObject from etcd when it retries after a conflict, and its
 * watch cache follows etcd within milliseconds: a genuine write that raced a status write (Trainer's,
 * the reconciler's) finds its version on a second look. Only a review with the stored uid, which a
 * forger cannot guess, gets these looks: at most about 350 ms, holding no connection while it waits.
 */
export const REREAD_AFTER_MS = [50, 100, 200];

/**
 * The stored TrainJob, or why it is not the one the review was made from. The uid is the gate: a
 * forger cannot guess it. The version only makes it look again: the API server's oldObject is
 * etcd's at the time of its write, and a busy TrainJob (Trainer's and the reconciler's status and
 * annotation writes around a rebuild) or a watch cache under load keeps the two apart longer than
 * the looks last. A genuine write refused then would be refused for nothing: when the stored one
 * is newer, the API server's own write conflicts and is tried again, with a new call and the newer
 * oldObject; when it is older, the CRD's rules have already judged the object the write makes.
 */
export async function readTheStored(
  read: () => Promise<TrainJobRead>,
  sent: Sent,
  pauses: number[] = REREAD_AFTER_MS,
): Promise<{ stored: Record<string, unknown> } | { why: string }> {
  let got = await read();
  for (const ms of pauses) {
    if (whyNotTheStored(got, sent) !== undefined || isTheSentVersion(got, sent)) break;
    await new Promise((resolve) => setTimeout(resolve, ms));
    got = await read();
  }
  const why = whyNotTheStored(got, sent);
  // No reason only for a read that found the TrainJob.
  return why === undefined ? { stored: (got as { value: Record<string, unknown> }).value } : { why };
}
