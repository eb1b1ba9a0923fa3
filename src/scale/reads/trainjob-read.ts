// Reads the TrainJob a write to its scale subresource changes (src/webhook/scale-subresource.ts):
// the API server sends the webhook an autoscaling/v1 Scale, without spec.suspend, the runtime or
// anything else the judgment needs, so the webhook reads the TrainJob itself. One GET, bounded in
// time (well below the webhook's timeoutSeconds) and size, parsed losslessly (int64 fields such as
// activeDeadlineSeconds stay exact), like the request bodies.
//
// Which version: the Scale carries the resourceVersion of the TrainJob the API server is about to
// update (the conflict check runs before validating admission). A GET with `resourceVersion=<that>`
// is served from the API server's watch cache once it has caught up with that version (not older
// than it), so the answer is that TrainJob or a newer one. A newer one means the stored TrainJob
// changed meanwhile: the API server's write of this attempt then fails its precondition and is
// retried on the new TrainJob, which calls the webhook again; so judging the newer one is right
// either way (see scale-subresource.ts).
//
// Any pod that reaches the webhook's port can send a Scale review (without `serve --client-ca`),
// so what such reviews can make the webhook read is bounded like the count change's reads
// (scale-check.ts): one read in flight per TrainJob and version, shared by the reviews that need
// it (`Coalesced`: a read of `resourceVersion=X` started a moment earlier answers X or newer, as
// one started now would); and reads for callers not known to be the API server capped per window
// (UNAUTHENTICATED_TRAINJOB_READS), since reviews naming other TrainJobs or versions each start
// one. Past the cap such a read is not started and fails (the scale is refused for now).
import { TRAINJOB } from '../../api/names.ts';
import type { ApiClient } from '../../cluster/api-request.ts';
import { parseJsonLossless } from '../../json/lossless.ts';
import { isObject } from '../../json/object.ts';
import type { Read } from '../scale-admission.ts';
import { Coalesced } from './coalesced.ts';
import { describeAnswer, JOBSET_READ_TIMEOUT_MS } from './jobset-read.ts';
import { WindowCap } from './window-cap.ts';

/** A TrainJob is at most etcd's 1.5 MiB object; JSON of it is not much larger. */
const TRAINJOB_MAX_BYTES = 4 * 1024 * 1024;

/**
 * TrainJob reads that reviews from callers not known to be the API server may start per
 * TRAINJOB_READ_WINDOW_MS (a read joined while in flight costs none). As many as the quorum reads
 * such callers may cause (scale-check.ts UNAUTHENTICATED_QUORUM_READS): a genuine `kubectl scale`
 * is one read, so a cluster whose API server is not authenticated meets it only under a flood.
 */
export const UNAUTHENTICATED_TRAINJOB_READS = 20;
export const TRAINJOB_READ_WINDOW_MS = 1_000;

/** Which TrainJob, not older than `resourceVersion` when given (else a quorum read), and for whom. */
export interface TrainJobReadTarget {
  namespace: string;
  name: string;
  resourceVersion?: string;
  /** The caller is the API server, proved by its client certificate: its reads are not capped. */
  callerAuthenticated?: boolean;
}

/** What a read of the TrainJob found. */
export type TrainJobRead = Read<Record<string, unknown>>;

export type TrainJobReader = (target: TrainJobReadTarget) => Promise<TrainJobRead>;

export interface TrainJobReadOptions {
  timeoutMs?: number;
  /** UNAUTHENTICATED_TRAINJOB_READS unless given (tests). */
  unauthenticatedReadsPerWindow?: number;
  now?: () => number;
}

const seg = encodeURIComponent;

export function trainJobReader(api: ApiClient, options: TrainJobReadOptions = {}): TrainJobReader {
  const timeoutMs = options.timeoutMs ?? JOBSET_READ_TIMEOUT_MS;
  const coalesced = new Coalesced();
  const cap = new WindowCap(
    options.unauthenticatedReadsPerWindow ?? UNAUTHENTICATED_TRAINJOB_READS,
    TRAINJOB_READ_WINDOW_MS,
    options.now,
  );
  const capped: Read<Record<string, unknown>> = {
    kind: 'failed',
    error: `reading the TrainJob: not started, it would pass the ${cap.limit} reads per ${TRAINJOB_READ_WINDOW_MS / 1000} s allowed to callers not known to be the API server`,
  };
  return ({ namespace, name, resourceVersion, callerAuthenticated }) => {
    // A name or version may hold any character in a forged review: a key no two targets share.
    const key = JSON.stringify([namespace, name, resourceVersion ?? null]);
    const shared = coalesced.inFlight<Read<Record<string, unknown>>>(key);
    if (shared) return shared;
    if (!callerAuthenticated && !cap.take()) return Promise.resolve(capped);
    return coalesced.run(key, () => getTrainJob(api, namespace, name, resourceVersion, timeoutMs));
  };
}

/** One GET of the TrainJob: 404 is absent, any other failure (status, transport, timeout, not JSON) failed. */
async function getTrainJob(
  api: ApiClient,
  namespace: string,
  name: string,
  resourceVersion: string | undefined,
  timeoutMs: number,
): Promise<Read<Record<string, unknown>>> {
  const { group, version, plural } = TRAINJOB;
  const path = `/apis/${group}/${version}/namespaces/${seg(namespace)}/${plural}/${seg(name)}`;
  const query = resourceVersion ? `?resourceVersion=${seg(resourceVersion)}` : '';
  const signal = AbortSignal.timeout(timeoutMs);
  try {
    const res = await api.request(`${path}${query}`, { signal, maxBytes: TRAINJOB_MAX_BYTES });
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
