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
import { TRAINJOB } from '../../api/names.ts';
import type { ApiClient } from '../../cluster/api-request.ts';
import { parseJsonLossless } from '../../json/lossless.ts';
import { isObject } from '../../json/object.ts';
import type { Read } from '../scale-admission.ts';
import { describeAnswer, JOBSET_READ_TIMEOUT_MS } from './jobset-read.ts';

/** A TrainJob is at most etcd's 1.5 MiB object; JSON of it is not much larger. */
const TRAINJOB_MAX_BYTES = 4 * 1024 * 1024;

/** The TrainJob `namespace/name`, not older than `resourceVersion` when given (else a quorum read). */
export type TrainJobReader = (
  namespace: string,
  name: string,
  resourceVersion?: string,
) => Promise<Read<Record<string, unknown>>>;

const seg = encodeURIComponent;

export function trainJobReader(api: ApiClient, timeoutMs = JOBSET_READ_TIMEOUT_MS): TrainJobReader {
  return async (namespace, name, resourceVersion) => {
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
  };
}
