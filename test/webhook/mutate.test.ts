import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MUTATE, fakeValidator, post, review, testServer, trainJob } from './fixtures.ts';

const NOW = new Date('2026-03-04T05:06:07.891Z');
const now = () => NOW;

function decodePatch(response: Record<string, any>) {
  return JSON.parse(Buffer.from(response.patch, 'base64').toString());
}
const runtimePatch = (manager: string, time?: string) => ({
  manager,
  ...(time ? { time } : {}),
  trainingRuntimeSpec: { template: { metadata: { labels: { 'kueue.x-k8s.io/queue-name': 'q' } } } },
});

describe('mutating webhook', () => {
  it('CREATE: stamps patches without a time, as a JSONPatch', async () => {
    const validator = fakeValidator();
    const { app } = await testServer({ now, validator });
    const object = trainJob({ runtimePatches: [runtimePatch('kueue'), runtimePatch('user', '2026-01-01T00:00:00Z')] });
    const res = await post(app, MUTATE, review('CREATE', { object, uid: 'm1' }));
    assert.equal(res.statusCode, 200);
    const r = res.json.response;
    assert.equal(r.uid, 'm1');
    assert.equal(r.allowed, true);
    assert.equal(r.patchType, 'JSONPatch');
    assert.deepEqual(decodePatch(r), [
      { op: 'add', path: '/spec/runtimePatches/0/time', value: '2026-03-04T05:06:07Z' },
    ]);
    assert.equal(validator.calls.length, 0, 'the mutating webhook never validates');
  });

  it('UPDATE: keeps the old time of an unchanged patch, stamps a changed one', async () => {
    const { app } = await testServer({ now });
    const oldObject = trainJob({
      runtimePatches: [runtimePatch('kueue', '2025-12-01T10:00:00Z'), runtimePatch('user', '2025-12-02T10:00:00Z')],
    });
    const changed = {
      ...runtimePatch('user'),
      trainingRuntimeSpec: { template: { metadata: { labels: { team: 'b' } } } },
    };
    const object = trainJob({ runtimePatches: [runtimePatch('kueue'), changed] });
    const res = await post(app, MUTATE, review('UPDATE', { object, oldObject }));
    assert.deepEqual(decodePatch(res.json.response), [
      { op: 'add', path: '/spec/runtimePatches/0/time', value: '2025-12-01T10:00:00Z' },
      { op: 'add', path: '/spec/runtimePatches/1/time', value: '2026-03-04T05:06:07Z' },
    ]);
  });

  it('nothing to default: allowed with no patch at all', async () => {
    const { app } = await testServer({ now });
    const res = await post(app, MUTATE, review('UPDATE'));
    assert.deepEqual(res.json.response, { uid: '705ab4f5-6393-11e8-b7cc-42010a800002', allowed: true });
  });

  it('v1beta1 and dry run: answered the same way', async () => {
    const { app } = await testServer({ now });
    const object = trainJob({ runtimePatches: [runtimePatch('kueue')] });
    const res = await post(
      app,
      MUTATE,
      review('CREATE', { object, apiVersion: 'admission.k8s.io/v1beta1', dryRun: true }),
    );
    assert.equal(res.json.apiVersion, 'admission.k8s.io/v1beta1');
    assert.equal(decodePatch(res.json.response).length, 1);
  });

  it('DELETE is allowed without a patch', async () => {
    const { app } = await testServer({ now });
    const res = await post(
      app,
      MUTATE,
      review('DELETE', { object: null, oldObject: trainJob({ runtimePatches: [runtimePatch('kueue')] }) }),
    );
    assert.deepEqual(res.json.response, { uid: '705ab4f5-6393-11e8-b7cc-42010a800002', allowed: true });
  });

  it('malformed envelope: HTTP 400', async () => {
    const { app } = await testServer({ now });
    const res = await post(app, MUTATE, { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview' });
    assert.equal(res.statusCode, 400);
    assert.match(res.json.error, /request is missing/);
  });
});
