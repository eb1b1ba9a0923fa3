// Every error answered in-band once the review's envelope is known, as controller-runtime answers
// them: an AdmissionReview in the request's apiVersion, allowed false, code 400 BadRequest, the
// uid echoed. That includes a review nested deeper than the parser takes, its envelope read from
// the text (src/webhook/envelope-scan.ts). A body that is not an AdmissionReview (no readable
// apiVersion, kind or request.uid) still gets HTTP 400 `{error}`. Hostile texts (nesting in the
// uid's place, a million brackets, strings left open) are answered, never crash or hang.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { counterTotal } from '../../src/observability/metrics.ts';
import { scanEnvelope } from '../../src/webhook/envelope-scan.ts';
import { MUTATE, VALIDATE, fakeValidator, post, review } from './fixtures.ts';
import { testServer } from './fixtures.ts';

const objects = (levels: number, inner = '{}') => '{"a":'.repeat(levels) + inner + '}'.repeat(levels);
const arrays = (levels: number, inner = '1') => '['.repeat(levels) + inner + ']'.repeat(levels);

/** A review whose request.object holds a value nested `levels` deep (10,000 is the most Go's decoder takes). */
function deepReview(levels: number, options: Parameters<typeof review>[1] = {}): string {
  return JSON.stringify(review('CREATE', options)).replace(/"object":\{/, `"object":{"deep":${objects(levels)},`);
}
/** Deeper than the webhook parses: request.object nests 10,001 levels. */
const TOO_DEEP = 9_999;

describe('an AdmissionReview whose envelope is known: every error in-band', () => {
  const rows: { name: string; body: () => string; uid: string; apiVersion?: string; message: RegExp }[] = [
    {
      name: 'request.object nested one level deeper than the parser takes',
      body: () => deepReview(TOO_DEEP, { uid: 'u-deep' }),
      uid: 'u-deep',
      message: /^not a valid AdmissionReview: request body is not valid JSON: exceeded max depth/,
    },
    {
      name: 'the same in admission.k8s.io/v1beta1 (answered in v1beta1)',
      body: () => deepReview(TOO_DEEP, { uid: 'u-beta', apiVersion: 'admission.k8s.io/v1beta1' }),
      uid: 'u-beta',
      apiVersion: 'admission.k8s.io/v1beta1',
      message: /exceeded max depth/,
    },
    {
      name: 'a million brackets in request.options, the envelope after them',
      body: () =>
        `{"request":{"options":${arrays(1_000_000)},"operation":"CREATE","uid":"u-million"},` +
        `"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1"}`,
      uid: 'u-million',
      message: /exceeded max depth/,
    },
    {
      name: 'a uid with escapes (echoed as it was sent)',
      body: () => deepReview(TOO_DEEP, { uid: 'u-"quoted"\\-\u00e9' }),
      uid: 'u-"quoted"\\-\u00e9',
      message: /exceeded max depth/,
    },
    {
      name: 'an unknown operation',
      body: () => JSON.stringify(review('PATCH', { uid: 'u-op' })),
      uid: 'u-op',
      message:
        /^not a valid AdmissionReview: request\.operation must be one of CREATE, UPDATE, DELETE, CONNECT, got "PATCH"/,
    },
    {
      name: 'request.object not an object',
      body: () => JSON.stringify(review('CREATE', { uid: 'u-obj', object: 'x' })),
      uid: 'u-obj',
      message: /request\.object must be an object or null, got a string/,
    },
    {
      name: 'UPDATE without oldObject',
      body: () => JSON.stringify(review('UPDATE', { uid: 'u-old', oldObject: null })),
      uid: 'u-old',
      message: /request\.oldObject is required for UPDATE/,
    },
  ];
  for (const row of rows) {
    for (const path of [VALIDATE, MUTATE]) {
      it(`${row.name} (${path === VALIDATE ? 'validating' : 'mutating'})`, async () => {
        const validator = fakeValidator();
        const { app, metrics } = await testServer({ validator });
        const res = await post(app, path, row.body());
        assert.equal(res.statusCode, 200, JSON.stringify(res.json).slice(0, 300));
        assert.equal(res.json.apiVersion, row.apiVersion ?? 'admission.k8s.io/v1');
        assert.equal(res.json.kind, 'AdmissionReview');
        assert.equal(res.json.response.uid, row.uid);
        assert.equal(res.json.response.allowed, false);
        assert.equal(res.json.response.status.code, 400);
        assert.equal(res.json.response.status.reason, 'BadRequest');
        assert.match(res.json.response.status.message, row.message);
        assert.equal(validator.calls.length, 0, 'not decided');
        assert.equal(await counterTotal(metrics.rejected), 1);
      });
    }
  }

  it("rejected_requests_total's help says its code is the in-band answer's for these (their HTTP status is 200)", async () => {
    const { app, metrics } = await testServer();
    const res = await post(app, VALIDATE, deepReview(TOO_DEEP, { uid: 'u-help' }));
    assert.equal(res.statusCode, 200);
    assert.equal(await counterTotal(metrics.rejected), 1);
    const help = (await metrics.registry.metrics())
      .split('\n')
      .find((line) => line.startsWith('# HELP trainjob_webhook_rejected_requests_total '));
    assert.ok(help, 'the metric is exposed with its help');
    assert.doesNotMatch(help, /by HTTP status code\.$/, 'a code 400 answered in-band is no HTTP 400');
    assert.match(help, /in-band/);
  });

  it('10,000 levels (the most the API server sends) are still decided', async () => {
    const { app } = await testServer();
    const res = await post(app, VALIDATE, deepReview(TOO_DEEP - 1, { uid: 'u-ok' }));
    assert.equal(res.statusCode, 200);
    assert.equal(res.json.response.uid, 'u-ok');
    assert.equal(res.json.response.allowed, true);
  });
});

describe('too deep and not an AdmissionReview (no envelope to answer in): HTTP 400', () => {
  const deepTail = `"options":${arrays(20_000)}`;
  const rows: { name: string; body: string }[] = [
    { name: 'no uid', body: deepReview(TOO_DEEP, { uid: '' }) },
    {
      name: 'the uid itself nested a million deep',
      body: `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":${arrays(1_000_000, '"u"')}}}`,
    },
    {
      name: 'the uid a number',
      body: `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":7,${deepTail}}}`,
    },
    {
      name: 'kind wrong',
      body: `{"apiVersion":"admission.k8s.io/v1","kind":"TrainJob","request":{"uid":"u",${deepTail}}}`,
    },
    {
      name: 'apiVersion unknown',
      body: `{"apiVersion":"admission.k8s.io/v2","kind":"AdmissionReview","request":{"uid":"u",${deepTail}}}`,
    },
    { name: '7 MiB of [', body: '['.repeat(7 * 1024 * 1024) },
    { name: 'request an array nested deep', body: `{"kind":"AdmissionReview","request":${arrays(20_000)}}` },
    {
      name: 'a later request without a uid (the last one counts, as in JSON.parse)',
      body: `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u"},"request":{${deepTail}}}`,
    },
    {
      name: 'a string left open after the brackets',
      body: `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{${deepTail},"uid":"u`,
    },
    {
      name: 'brackets left open',
      body: `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","options":${'['.repeat(20_000)}`,
    },
  ];
  for (const row of rows) {
    it(row.name, async () => {
      const { app } = await testServer();
      const res = await post(app, VALIDATE, row.body);
      assert.equal(res.statusCode, 400, JSON.stringify(res.json).slice(0, 300));
      assert.deepEqual(Object.keys(res.json), ['error']);
      assert.match(res.json.error, /exceeded max depth/);
    });
  }
});

describe('scanEnvelope reads the envelope from text it does not parse', () => {
  it('apiVersion, kind, request.uid and request.operation, in any order, whitespace anywhere', () => {
    const text = ` { "request" : { "x" : [ { "uid" : "no" } ] , "uid" : "u-1" , "operation" : "UPDATE" } ,
      "kind" : "AdmissionReview" , "apiVersion" : "admission.k8s.io/v1" , "tail" : ${arrays(50_000)} } `;
    assert.deepEqual(scanEnvelope(text), {
      uid: 'u-1',
      operation: 'UPDATE',
      kind: 'AdmissionReview',
      apiVersion: 'admission.k8s.io/v1',
    });
  });

  it('strings holding brackets and quotes do not confuse it', () => {
    const text = `{"a":"]]}}\\"{[","request":{"b":["}\\\\"],"uid":"u\\"2"},"kind":"AdmissionReview"}`;
    assert.deepEqual({ ...scanEnvelope(text) }, { kind: 'AdmissionReview', uid: 'u"2' });
  });

  it('unreadable text gives undefined', () => {
    for (const text of ['', '[', '{', '{"a"', '{"a":', '{"a":1', '{"a":1 "b":2}', '{"a":"x', 'null', '{"a":}'])
      assert.equal(scanEnvelope(text), undefined, text);
  });
});
