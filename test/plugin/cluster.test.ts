// The plugin's writes of the TrainJob as the API server receives them: a merge patch of only the
// changed fields, never the object read back (JSON.parse rounds an int64 beyond 2^53, and the CRD
// makes such fields immutable: a write of the rounded value is refused).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ApiClient, ApiRequestOptions } from '../../src/cluster/api-request.ts';
import { clusterOf } from '../../src/plugin/cluster.ts';
import { changePatch } from '../../src/plugin/progress.ts';

/** The TrainJob as the API server sends it: activeDeadlineSeconds is int64's largest. */
const STORED = `{"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"TrainJob","metadata":{"name":"t","namespace":"ns","resourceVersion":"7"},"spec":{"activeDeadlineSeconds":9223372036854775807,"suspend":false,"trainer":{"numNodes":1}}}`;

function fakeApi() {
  const calls: { path: string; options: ApiRequestOptions; sent?: string }[] = [];
  const api: ApiClient = {
    server: new URL('https://api.invalid'),
    async request(path, options) {
      calls.push({ path, options, ...(options.body === undefined ? {} : { sent: JSON.stringify(options.body) }) });
      return { status: 200, body: Buffer.from(STORED), headers: { warning: '299 - "numNodes changes"' } };
    },
    stream: () => Promise.reject(new Error('no watch here')),
  };
  return { api, calls };
}

describe('the TrainJob write', () => {
  for (const dryRun of [true, false])
    it(`is a merge patch of the changed fields and the resourceVersion${dryRun ? ' (server dry run)' : ''}`, async () => {
      const { api, calls } = fakeApi();
      const c = clusterOf(api, 'ns');
      const tj = await c.getTrainJob('t');
      const { warnings } = await c.patchTrainJob(
        't',
        changePatch(tj, { suspend: true, numNodes: 2 }, undefined),
        dryRun,
      );
      assert.deepEqual(warnings, ['numNodes changes']);
      const write = calls[1];
      assert.equal(write.options.method, 'PATCH');
      assert.equal(write.options.contentType, 'application/merge-patch+json');
      assert.equal(
        write.path,
        `/apis/trainer.kubeflow.org/v1alpha1/namespaces/ns/trainjobs/t${dryRun ? '?dryRun=All' : ''}`,
      );
      assert.deepEqual(JSON.parse(write.sent!), {
        metadata: { resourceVersion: '7', annotations: { 'trainjob-webhook.kubeflow.org/scale-progress': null } },
        spec: { suspend: true, trainer: { numNodes: 2 } },
      });
      // Nothing of the object read is sent back, so nothing of it is rounded (9223372036854775807
      // read by JSON.parse is 9223372036854775808).
      assert.doesNotMatch(write.sent!, /activeDeadlineSeconds|922337203685477/);
    });
});
