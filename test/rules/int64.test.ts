// int64 fields beyond 2^53 (activeDeadlineSeconds) are compared exactly from the request body on:
// a plain JSON.parse would round 2^53+1 to 2^53 and let this change through.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseJsonLossless } from '../../src/json/lossless.ts';
import { buildPolicy } from '../../src/rules/policy.ts';
import { decideUpdate } from '../../src/rules/decide.ts';

const body = (seconds: string) =>
  `{"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"TrainJob","metadata":{"name":"a"},"spec":{"runtimeRef":{"name":"torch-distributed"},"suspend":true,"activeDeadlineSeconds":${seconds}}}`;

describe('int64 beyond 2^53', () => {
  it('plain JSON.parse cannot tell the two values apart (why the lossless parse exists)', () => {
    assert.equal(
      JSON.parse(body('9007199254740993')).spec.activeDeadlineSeconds,
      JSON.parse(body('9007199254740992')).spec.activeDeadlineSeconds,
    );
  });
  it('a change from 2^53 to 2^53+1 is refused as a change of an immutable field', () => {
    const v = decideUpdate(
      buildPolicy(),
      parseJsonLossless(body('9007199254740993')),
      parseJsonLossless(body('9007199254740992')),
    );
    assert.deepEqual(
      v.causes.map((c) => c.field),
      ['spec.activeDeadlineSeconds'],
    );
    assert.match(String(v.causes[0].value), /^9007199254740993$/);
  });
  it('the same large value on both sides is no change', () => {
    const v = decideUpdate(
      buildPolicy(),
      parseJsonLossless(body('9223372036854775807')),
      parseJsonLossless(body('9223372036854775807')),
    );
    assert.deepEqual(v.causes, []);
  });
});
