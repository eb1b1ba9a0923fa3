// The curl examples under examples/ stay well-formed AdmissionReviews for TrainJobs.
import assert from 'node:assert/strict';
import { readFile, readdir } from 'node:fs/promises';
import { describe, it } from 'node:test';
import { parseJsonLossless } from '../../src/json/lossless.ts';
import { parseAdmissionReview, wrongKind } from '../../src/webhook/envelope.ts';
import { loadEmbeddedPolicy } from '../../src/rules/crd-policy.ts';
import { createValidator } from '../../src/rules/validator.ts';
import { MUTATE, post, testServer, VALIDATE } from './fixtures.ts';

const dir = new URL('../../examples/', import.meta.url);
const files = (await readdir(dir)).filter((f) => f.endsWith('.json')).sort();

describe('examples/', () => {
  it('has the documented files', () => {
    assert.deepEqual(files, [
      'allowed-create.json',
      'allowed-numnodes-suspended.json',
      'denied-create-invalid.json',
      'denied-image-change.json',
      'denied-numnodes-finished.json',
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
    const spec = (o: unknown) =>
      (o as { spec: { suspend: boolean; trainer: { numNodes: number; image: string } } }).spec;
    const allowed = await load('allowed-numnodes-suspended.json');
    assert.deepEqual(
      [spec(allowed.oldObject).trainer.numNodes, spec(allowed.object).trainer.numNodes, spec(allowed.object).suspend],
      [1, 2, true],
    );
    const image = await load('denied-image-change.json');
    assert.notEqual(spec(image.oldObject).trainer.image, spec(image.object).trainer.image);
    const running = await load('denied-numnodes-running.json');
    assert.deepEqual([spec(running.oldObject).suspend, spec(running.object).suspend], [false, false]);
    assert.notEqual(spec(running.oldObject).trainer.numNodes, spec(running.object).trainer.numNodes);
    const done = await load('denied-numnodes-finished.json');
    assert.deepEqual(
      [
        spec(done.oldObject).suspend,
        spec(done.object).suspend,
        spec(done.oldObject).trainer.numNodes,
        spec(done.object).trainer.numNodes,
      ],
      [false, true, 1, 2],
    );
  });

  it("the numNodes examples get the answers examples/README.md documents (serve's default CRD, offline)", async () => {
    const { app } = await testServer({ validator: createValidator({ policy: await loadEmbeddedPolicy() }) });
    const answer = async (f: string) =>
      (await post(app, VALIDATE, await readFile(new URL(f, dir), 'utf8'))).json.response;
    const allowed = await answer('allowed-numnodes-suspended.json');
    assert.equal(allowed.allowed, true);
    assert.match(
      allowed.warnings.join('\n'),
      /the JobSet is rebuilt with 2 nodes as soon as it is suspended and none of its pods runs or is terminating/,
    );
    assert.match(allowed.warnings.join('\n'), /was not judged against the cluster/);
    const running = await answer('denied-numnodes-running.json');
    assert.deepEqual([running.allowed, running.status.code, running.warnings], [false, 403, undefined]);
    assert.match(running.status.message, /numNodes may only change while the TrainJob is suspended/);
    const done = await answer('denied-numnodes-finished.json');
    assert.deepEqual([done.allowed, done.status.code, done.warnings], [false, 403, undefined]);
    assert.match(done.status.message, /numNodes may not change once the TrainJob has finished/);
  });

  it('mutate-create-runtimepatch.json gets its time stamped', async () => {
    const { app } = await testServer({ now: () => new Date('2026-11-30T08:00:00Z') });
    const res = await post(app, MUTATE, await readFile(new URL('mutate-create-runtimepatch.json', dir), 'utf8'));
    const patch = JSON.parse(Buffer.from(res.json.response.patch, 'base64').toString());
    assert.deepEqual(patch, [{ op: 'add', path: '/spec/runtimePatches/0/time', value: '2026-11-30T08:00:00Z' }]);
  });
});
