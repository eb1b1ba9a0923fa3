// Reads the TrainJob a review is about, from the API server's watch cache, and tells whether it is
// the one the review was made from: the gate before a judgment that a caller not known to be the
// API server could otherwise use as an oracle (issue 26).
//   - A write to the scale subresource (src/webhook/scale-subresource.ts): the API server sends an
//     autoscaling/v1 Scale, without spec.suspend, the runtime or anything else the judgment needs,
//     so the webhook reads the TrainJob itself.
//   - A count change from a caller not known to be the API server (scale-check.ts): judged only
//     when its oldObject is the stored TrainJob, so a forged review learns nothing about a JobSet
//     (whether one of that name exists, the count it was built for) without the TrainJob's uid and
//     resourceVersion, which such a caller cannot guess.
// One GET, bounded in time (well below the webhook's timeoutSeconds) and size, parsed losslessly
// (int64 fields such as activeDeadlineSeconds stay exact), like the request bodies.
//
// Which version: always `resourceVersion=0`, the watch cache as it is now, which the API server
// answers at once. Not `resourceVersion=<the review's>`: for a version ahead of the watch cache the
// API server's cacher waits up to 3 s for it (apiserver pkg/storage/cacher/watch_cache.go, "too
// large resource version"), so a forged review naming a far-future version held a read slot for
// the whole read timeout. The review is judged only when the stored TrainJob has the uid of the
// review's oldObject, which a forger cannot guess (stored-version.ts); a different resourceVersion
// only makes it look at the cache again a few times (a genuine write that raced a status write, or
// a cache a moment behind), then the stored one is judged.
import { TRAINJOB } from '../../api/names.ts';
import type { ApiClient } from '../../cluster/api-request.ts';
import { parseJsonLossless } from '../../json/lossless.ts';
import { isObject } from '../../json/object.ts';
import type { Read } from '../scale-admission.ts';
import { Coalesced } from './coalesced.ts';
import { describeAnswer, JOBSET_READ_TIMEOUT_MS } from './jobset-read.ts';

/** A TrainJob is at most etcd's 1.5 MiB object; JSON of it is not much larger. */
const TRAINJOB_MAX_BYTES = 4 * 1024 * 1024;

/**
 * The API connections the TrainJob reads may hold at once, apart from the count change's
 * (COUNT_CHANGE_READ_SLOTS): a watch-cache read takes about a millisecond, so two serve hundreds
 * of reviews a second, and a flood of them cannot hold the JobSet's, the runtime's or the Lease's.
 */
export const TRAINJOB_READ_SLOTS = 2;

/** Which TrainJob. */
export interface TrainJobReadTarget {
  namespace: string;
  name: string;
}

/** What a read of the TrainJob found. */
export type TrainJobRead = Read<Record<string, unknown>>;

export type TrainJobReader = (target: TrainJobReadTarget) => Promise<TrainJobRead>;

export interface TrainJobReadOptions {
  timeoutMs?: number;
}

const seg = encodeURIComponent;

export function trainJobReader(api: ApiClient, options: TrainJobReadOptions = {}): TrainJobReader {
  const timeoutMs = options.timeoutMs ?? JOBSET_READ_TIMEOUT_MS;
  const coalesced = new Coalesced();
  return ({ namespace, name }) =>
    // A name may hold any character in a forged review: a key no two targets share.
    coalesced.run(JSON.stringify([namespace, name]), () => getTrainJob(api, namespace, name, timeoutMs));
}

/** One GET of the TrainJob: 404 is absent, any other failure (status, transport, timeout, not JSON) failed. */
async function getTrainJob(
  api: ApiClient,
  namespace: string,
  name: string,
  timeoutMs: number,
): Promise<Read<Record<string, unknown>>> {
  const { group, version, plural } = TRAINJOB;
  const path = `/apis/${group}/${version}/namespaces/${seg(namespace)}/${plural}/${seg(name)}`;
  const signal = AbortSignal.timeout(timeoutMs);
  try {
    // resourceVersion=0: the watch cache as it is, never waiting for a version (see the header).
    const res = await api.request(`${path}?resourceVersion=0`, { signal, maxBytes: TRAINJOB_MAX_BYTES });
    if (res.status === 404) return { kind: 'absent' };
    if (res.status !== 200)
      return { kind: 'failed', error: `reading the TrainJob: ${describeAnswer(res.status, res.body)}` };
    const value = parseJsonLossless(res.body.toString('utf8'));
    if (!isObject(value)) return { kind: 'failed', error: 'reading the TrainJob: the answer is not an object' };
    return { kind: 'found', value };
  } catch (err) {
    const text = signal.aborted
      ? `timed out after ${timeoutMs} ms`
      : (err instanceof Error ? err.message : String(err)).split('\n')[0].slice(0, 300);
    return { kind: 'failed', error: `reading the TrainJob: ${text}` };
  }
}
