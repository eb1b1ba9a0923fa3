// The TrainJob read behind a scale subresource review and behind the check that a count change
// from a caller not known to be the API server was made from the stored TrainJob
// (src/scale/reads/trainjob-read.ts, stored-version.ts). It reads the watch cache as it is
// (resourceVersion=0), never a version the review names: the API server's cacher waits up to 3 s
// for a version it has not seen, so a forged far-future one held a read slot for the whole
// timeout. Reads of one TrainJob in flight at once are one GET. The review is judged only when the
// stored uid is its own; another resourceVersion only makes it read again.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ApiClient, ApiResponse } from '../../../src/cluster/api-request.ts';
import { trainJobReader } from '../../../src/scale/reads/trainjob-read.ts';
import { isTheSentVersion, whyNotTheStored } from '../../../src/scale/reads/stored-version.ts';

/** An API server whose answers wait until the test lets them go. */
function slowApi() {
  const sent: string[] = [];
  const finish: (() => void)[] = [];
  const api: ApiClient = {
    server: new URL('http://127.0.0.1'),
    request: (path) =>
      new Promise<ApiResponse>((resolve) => {
        sent.push(path);
        finish.push(() =>
          resolve({ status: 200, body: Buffer.from('{"metadata":{"uid":"u-1","resourceVersion":"7"}}') }),
        );
      }),
    stream: () => Promise.reject(new Error('no watches here')),
  };
  return { api, sent, finishAll: () => finish.splice(0).forEach((f) => f()) };
}

const PATH = '/apis/trainer.kubeflow.org/v1alpha1/namespaces/ml/trainjobs/llama';

describe('the TrainJob read of a review', () => {
  it('reads the watch cache (resourceVersion=0), one GET per TrainJob in flight, and nothing is kept once settled', async () => {
    const { api, sent, finishAll } = slowApi();
    const read = trainJobReader(api);
    const same = Array.from({ length: 200 }, () => read({ namespace: 'ml', name: 'llama' }));
    const other = read({ namespace: 'ml', name: 'other' });
    assert.deepEqual(sent, [
      `${PATH}?resourceVersion=0`,
      '/apis/trainer.kubeflow.org/v1alpha1/namespaces/ml/trainjobs/other?resourceVersion=0',
    ]);
    finishAll();
    for (const r of [...same, other]) assert.equal((await r).kind, 'found');
    const again = read({ namespace: 'ml', name: 'llama' });
    assert.equal(sent.length, 3, 'a settled read is not kept: the next one reads afresh');
    finishAll();
    await again;
  });

  it('is not capped per window: what bounds it is its slots, the budget and one read per TrainJob', async () => {
    const { api, sent, finishAll } = slowApi();
    const read = trainJobReader(api);
    const reads = Array.from({ length: 50 }, (_, i) => read({ namespace: 'ml', name: `j${i}` }));
    assert.equal(sent.length, 50);
    finishAll();
    for (const r of reads) assert.equal((await r).kind, 'found');
  });

  it('judges only the stored TrainJob: its uid and resourceVersion, both sent', () => {
    const found = { kind: 'found' as const, value: { metadata: { uid: 'u-1', resourceVersion: '7' } } };
    assert.equal(whyNotTheStored(found, { uid: 'u-1', resourceVersion: '7' }), undefined);
    // Another version of the same uid is the stored TrainJob, read again before it is judged.
    assert.equal(isTheSentVersion(found, { uid: 'u-1', resourceVersion: '7' }), true);
    assert.equal(isTheSentVersion(found, { uid: 'u-1', resourceVersion: '99999999999' }), false);
    assert.equal(isTheSentVersion(found, { uid: 'u-1', resourceVersion: '6' }), false);
    assert.match(whyNotTheStored(found, { uid: 'u-2', resourceVersion: '7' }) ?? '', /replaced/);
    assert.match(whyNotTheStored(found, { resourceVersion: '7' }) ?? '', /names no uid/);
    assert.match(whyNotTheStored(found, { uid: 'u-1' }) ?? '', /names no resourceVersion/);
    assert.match(whyNotTheStored({ kind: 'absent' }, { uid: 'u-1', resourceVersion: '7' }) ?? '', /not found/);
    assert.match(
      whyNotTheStored({ kind: 'failed', error: 'boom' }, { uid: 'u-1', resourceVersion: '7' }) ?? '',
      /could not be read \(boom\)/,
    );
  });
});
