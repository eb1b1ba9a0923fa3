// The curl examples under examples/ stay well-formed AdmissionReviews for TrainJobs.
import assert from 'node:assert/strict';
import { readFile, readdir } from 'node:fs/promises';
import { describe, it } from 'node:test';
import { parseJsonLossless } from '../../src/json/lossless.ts';
import { parseAdmissionReview, wrongKind } from '../../src/webhooks/envelope.ts';
import { MUTATE, post, testServer } from './fixtures.ts';

const dir = new URL('../../examples/', import.meta.url);
const files = (await readdir(dir)).filter((f) => f.endsWith('.json')).sort();

describe('examples/', () => {
  it('has the documented files', () => {
    assert.deepEqual(files, [
      'allowed-create.json',
      'allowed-numnodes-suspended.json',
      'denied-create-invalid.json',
      'denied-image-change.json',
      'denied-numnodes-running.json',
      'mutate-create-runtimepatch.json',
    ]);
  });

  for (const file of files) {
    it(`${file} is an AdmissionReview for a TrainJob`, async () => {
      const req = parseAdmissionReview(parseJsonLossless(await readFile(new URL(file, dir), 'utf8')));
      assert.equal(wrongKind(req), undefined);
      assert.equal(req.name, 'llama-finetune');
      assert.equal(req.namespace, 'ml-team');
      const meta = req.object?.metadata as Record<string, unknown>;
      assert.equal(meta.managedFields, undefined);
    });
  }

  it('the UPDATE examples change what their names say', async () => {
    const load = async (f: string) => parseAdmissionReview(JSON.parse(await readFile(new URL(f, dir), 'utf8')));
    const spec = (o: unknown) => (o as { spec: { suspend: boolean; trainer: { numNodes: number; image: string } } }).spec;
    const allowed = await load('allowed-numnodes-suspended.json');
    assert.deepEqual([spec(allowed.oldObject).trainer.numNodes, spec(allowed.object).trainer.numNodes, spec(allowed.object).suspend], [1, 2, true]);
    const image = await load('denied-image-change.json');
    assert.notEqual(spec(image.oldObject).trainer.image, spec(image.object).trainer.image);
    const running = await load('denied-numnodes-running.json');
    assert.deepEqual([spec(running.oldObject).suspend, spec(running.object).suspend], [false, false]);
    assert.notEqual(spec(running.oldObject).trainer.numNodes, spec(running.object).trainer.numNodes);
  });

  it('mutate-create-runtimepatch.json gets its time stamped', async () => {
    const { app } = await testServer({ now: () => new Date('2026-11-30T08:00:00Z') });
    const res = await post(app, MUTATE, await readFile(new URL('mutate-create-runtimepatch.json', dir), 'utf8'));
    const patch = JSON.parse(Buffer.from(res.json.response.patch, 'base64').toString());
    assert.deepEqual(patch, [{ op: 'add', path: '/spec/runtimePatches/0/time', value: '2026-11-30T08:00:00Z' }]);
  });
});
