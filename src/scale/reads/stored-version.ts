// Whether the TrainJob read is the one a review was made from: the gate before a judgment that a
// caller not known to be the API server could otherwise use as an oracle (trainjob-read.ts). Apart
// from the reader, so the admission route imports it without the cluster modules.
import { isObject } from '../../json/object.ts';
import type { Read } from '../scale-admission.ts';

type TrainJobRead = Read<Record<string, unknown>>;

/** The one reason a read again may cure: the watch cache a moment behind etcd. */
export const NOT_THE_VERSION =
  'the stored TrainJob is not the version the review was made from (it changed since, or the watch cache is a moment behind)';

/**
 * Why the TrainJob read is not the one a review was made from (`sent`: the review's oldObject
 * metadata), or undefined when it is: the same uid and the same resourceVersion. A review without
 * either is never judged: the API server always sends both.
 */
export function whyNotTheStored(
  read: TrainJobRead,
  sent: { uid?: unknown; resourceVersion?: unknown },
): string | undefined {
  if (read.kind === 'failed') return `the TrainJob could not be read (${read.error})`;
  if (read.kind === 'absent') return 'the TrainJob was not found';
  const meta = isObject(read.value.metadata) ? read.value.metadata : {};
  if (typeof sent.uid !== 'string' || !sent.uid) return 'the review names no uid';
  if (sent.uid !== meta.uid) return 'the TrainJob was replaced';
  if (typeof sent.resourceVersion !== 'string' || !sent.resourceVersion) return 'the review names no resourceVersion';
  if (sent.resourceVersion !== meta.resourceVersion) return NOT_THE_VERSION;
  return undefined;
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
 * The TrainJob read, and why it is not the one the review was made from (undefined: it is, or it has
 * the review's uid and only its version still differs after the looks again). The uid is the gate:
 * a forger cannot guess it. The version is not: the API server's oldObject is etcd's at the time
 * of its write, and a busy TrainJob (Trainer's and the reconciler's status and annotation writes
 * around a rebuild) or a watch cache under load keeps the two apart longer than the looks last.
 * A genuine write refused then would be refused for nothing: when the stored one is newer, the API
 * server's own write conflicts and is tried again, with a new call and the newer oldObject; when it
 * is older, the CRD's rules have already judged the object the write makes.
 */
export async function readTheStored(
  read: () => Promise<TrainJobRead>,
  sent: { uid?: unknown; resourceVersion?: unknown },
  pauses: number[] = REREAD_AFTER_MS,
): Promise<{ read: TrainJobRead; why: string | undefined }> {
  let got = await read();
  let why = whyNotTheStored(got, sent);
  for (const ms of pauses) {
    if (why !== NOT_THE_VERSION) break;
    await new Promise((resolve) => setTimeout(resolve, ms));
    got = await read();
    why = whyNotTheStored(got, sent);
  }
  return { read: got, why: why === NOT_THE_VERSION ? undefined : why };
}
