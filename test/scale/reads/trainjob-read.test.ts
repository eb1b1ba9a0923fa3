// The TrainJob read behind a scale subresource review (src/scale/reads/trainjob-read.ts): what
// forged Scale reviews can make it read is bounded. Reads of one TrainJob and version in flight at
// once are one GET; reads for callers not known to be the API server are capped per window, a
// joined read costing none; the API server's reads are not capped.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ApiClient, ApiResponse } from '../../../src/cluster/api-request.ts';
import { trainJobReader } from '../../../src/scale/reads/trainjob-read.ts';

/** An API server whose answers wait until the test lets them go. */
function slowApi() {
  const sent: string[] = [];
  const finish: (() => void)[] = [];
  const api: ApiClient = {
    server: new URL('http://127.0.0.1'),
    request: (path) =>
      new Promise<ApiResponse>((resolve) => {
        sent.push(path);
        finish.push(() => resolve({ status: 200, body: Buffer.from('{"metadata":{"uid":"u-1"}}') }));
      }),
    stream: () => Promise.reject(new Error('no watches here')),
  };
  return { api, sent, finishAll: () => finish.splice(0).forEach((f) => f()) };
}

const PATH = '/apis/trainer.kubeflow.org/v1alpha1/namespaces/ml/trainjobs/llama';

describe('the TrainJob read of a scale review', () => {
  it('shares one GET among the reads of one TrainJob and version in flight, and starts one per other version', async () => {
    const { api, sent, finishAll } = slowApi();
    const read = trainJobReader(api);
    const same = Array.from({ length: 200 }, () => read({ namespace: 'ml', name: 'llama', resourceVersion: '7' }));
    const newer = read({ namespace: 'ml', name: 'llama', resourceVersion: '8' });
    const quorum = read({ namespace: 'ml', name: 'llama' });
    assert.deepEqual(sent, [`${PATH}?resourceVersion=7`, `${PATH}?resourceVersion=8`, PATH]);
    finishAll();
    for (const r of [...same, newer, quorum]) assert.equal((await r).kind, 'found');
    // Settled reads are not kept: the next one reads afresh.
    const again = read({ namespace: 'ml', name: 'llama', resourceVersion: '7' });
    assert.equal(sent.length, 4);
    finishAll();
    await again;
  });

  it('caps the reads callers not known to be the API server start per window; joining one in flight is free; the API server is not capped', async () => {
    const { api, sent, finishAll } = slowApi();
    let t = 0;
    const read = trainJobReader(api, { unauthenticatedReadsPerWindow: 2, now: () => t });
    const a = read({ namespace: 'ml', name: 'a', resourceVersion: '1' });
    const b = read({ namespace: 'ml', name: 'b', resourceVersion: '1' });
    const joined = read({ namespace: 'ml', name: 'a', resourceVersion: '1' });
    const refused = await read({ namespace: 'ml', name: 'c', resourceVersion: '1' });
    assert.equal(refused.kind, 'failed');
    assert.match(
      (refused as { error: string }).error,
      /not started, it would pass the 2 reads per 1 s allowed to callers not known to be the API server/,
    );
    const apiServer = read({ namespace: 'ml', name: 'c', resourceVersion: '1', callerAuthenticated: true });
    assert.equal(sent.length, 3, 'a, b and the API server read c; the capped one sent nothing');
    t = 1_000;
    const nextWindow = read({ namespace: 'ml', name: 'd', resourceVersion: '1' });
    assert.equal(sent.length, 4);
    finishAll();
    for (const r of [a, b, joined, apiServer, nextWindow]) assert.equal((await r).kind, 'found');
  });
});
