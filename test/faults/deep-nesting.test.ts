// Deep nesting at every level of a review, as an attacker on the cluster network could send it.
// The API server's decoder (Go's encoding/json) accepts objects nested 10,000 levels, so the
// webhook must decide anything up to that depth, and refuse deeper text: in-band (code 400, uid
// echoed) when the review's envelope can be read, else with an HTTP 400.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { review, trainJob } from '../webhook/fixtures.ts';
import { assertWellFormedAnswer, crdServer } from './support.ts';

type Server = Awaited<ReturnType<typeof crdServer>>;

const arrays = (levels: number, inner = '1') => '['.repeat(levels) + inner + ']'.repeat(levels);
const objects = (levels: number, inner = '1') => '{"a":'.repeat(levels) + inner + '}'.repeat(levels);
const HOLE = '"__HOLE__"';

/** A review's JSON with `nested` put where the marker string is. */
function withHole(body: unknown, nested: string): string {
  const text = JSON.stringify(body);
  assert.ok(text.includes(HOLE));
  return text.replace(HOLE, nested);
}

describe('deeply nested envelope fields', () => {
  let server: Server;
  before(async () => {
    server = await crdServer();
  });

  for (const field of ['kind', 'apiVersion']) {
    it(`${field} nested 10,000 arrays deep: a 400 naming the type, not an HTTP 500`, async () => {
      const body = review('CREATE') as Record<string, any>;
      body[field] = '__HOLE__';
      const answer = await server.validate(withHole(body, arrays(9_990)));
      assert.equal(answer.statusCode, 400, answer.body);
      assert.match(answer.json!.error, /got an array$/);
    });
  }

  it('operation nested 10,000 arrays deep (the uid known): an in-band 400 naming the type', async () => {
    const body = review('CREATE', { uid: 'op-deep' }) as Record<string, any>;
    body.request.operation = '__HOLE__';
    const answer = await server.validate(withHole(body, arrays(9_990)));
    assert.equal(answer.statusCode, 200, answer.body.slice(0, 300));
    assert.equal(answer.json!.response.uid, 'op-deep');
    assert.equal(answer.json!.response.allowed, false);
    assert.equal(answer.json!.response.status.code, 400);
    assert.match(answer.json!.response.status.message, /got an array$/);
  });
});

describe('reviews nested as deep as the API server allows', () => {
  let server: Server;
  before(async () => {
    server = await crdServer();
  });

  it('3,000 and 9,990 levels in request.options with a 16-digit run elsewhere are decided, not refused as 400 "not valid JSON"', async () => {
    for (const levels of [3_000, 9_990]) {
      const body = review('CREATE', {
        object: trainJob({}, { annotations: { 'example.com/id': '1234567890123456' } }),
      }) as Record<string, any>;
      body.request.options = '__HOLE__';
      for (const send of [server.validate, server.mutate]) {
        const answer = await send(withHole(body, objects(levels)));
        assert.equal(answer.statusCode, 200, answer.body.slice(0, 300));
        assert.equal(answer.json!.response.allowed, true);
      }
    }
  });

  it('an object nested 10,000 levels is answered; one level more gets an in-band 400 "exceeded max depth"', async () => {
    // request.object is two levels down: the body is then 10,002 levels deep.
    for (const long of ['', '"x":12345678901234567,']) {
      const ok = JSON.stringify(review('CREATE')).replace(
        /"object":\{/,
        `"object":{${long}"deep":${objects(9_998, '{}')},`,
      );
      assertWellFormedAnswer(await server.validate(ok), 'depth 10,000');
      const tooDeep = JSON.stringify(review('CREATE')).replace(
        /"object":\{/,
        `"object":{${long}"deep":${objects(9_999, '{}')},`,
      );
      const answer = await server.validate(tooDeep);
      assert.equal(answer.statusCode, 200, answer.body.slice(0, 300));
      assert.equal(answer.json!.response.allowed, false);
      assert.equal(answer.json!.response.status.code, 400);
      assert.match(
        answer.json!.response.status.message,
        /^not a valid AdmissionReview: request body is not valid JSON: exceeded max depth/,
      );
    }
  });

  it('1,000,000 levels are refused in-band with a 400, not a crash', async () => {
    const answer = await server.validate(
      JSON.stringify(review('CREATE')).replace('"options":null', `"options":${arrays(1_000_000)}`),
    );
    assert.equal(answer.statusCode, 200, answer.body.slice(0, 300));
    assert.equal(answer.json!.response.status.code, 400);
    assert.match(answer.json!.response.status.message, /exceeded max depth/);
  });
});

describe('deep values inside object and oldObject', () => {
  let server: Server;
  before(async () => {
    server = await crdServer();
  });

  // Wrong types where the schema ends (metadata, typed fields), unknown fields, status.
  const places: Record<string, (hole: string) => Record<string, unknown>> = {
    'metadata.annotations': (hole) => trainJob({}, { annotations: hole }),
    'an annotation value': (hole) => trainJob({}, { annotations: { a: hole } }),
    'metadata.labels': (hole) => trainJob({}, { labels: hole }),
    'metadata.finalizers': (hole) => trainJob({}, { finalizers: hole }),
    'metadata.name': (hole) => trainJob({}, { name: hole }),
    'metadata.managedFields[0].fieldsV1': (hole) =>
      trainJob({}, { managedFields: [{ manager: 'm', operation: 'Update', fieldsType: 'FieldsV1', fieldsV1: hole }] }),
    'spec.trainer.command': (hole) =>
      trainJob({ trainer: { image: 'ghcr.io/acme/train:1.0', numNodes: 1, command: hole } }),
    'spec.trainer.env[0].value': (hole) =>
      trainJob({ trainer: { image: 'ghcr.io/acme/train:1.0', numNodes: 1, env: [{ name: 'A', value: hole }] } }),
    'spec.runtimePatches[0] (unknown field)': (hole) =>
      trainJob({ runtimePatches: [{ manager: 'example.com/m', extra: hole }] }),
    'spec.runtimePatches[0].manager': (hole) => trainJob({ runtimePatches: [{ manager: hole }] }),
    status: (hole) => ({ ...trainJob(), status: hole }),
  };

  for (const [place, build] of Object.entries(places)) {
    for (const [shape, nest] of [
      ['arrays', arrays],
      ['objects', objects],
    ] as const) {
      it(`${place}: ${shape} 9,990 deep, CREATE and UPDATE, both webhooks`, async () => {
        const deep = nest(9_990);
        const create = withHole(review('CREATE', { object: build('__HOLE__') }), deep);
        const updateNew = withHole(review('UPDATE', { object: build('__HOLE__'), oldObject: trainJob() }), deep);
        const updateOld = withHole(review('UPDATE', { object: trainJob(), oldObject: build('__HOLE__') }), deep);
        for (const [what, body] of [
          ['CREATE', create],
          ['UPDATE (new)', updateNew],
          ['UPDATE (old)', updateOld],
        ]) {
          assertWellFormedAnswer(await server.validate(body), `validate ${what}`);
          assertWellFormedAnswer(await server.mutate(body), `mutate ${what}`);
        }
      });
    }
  }

  it('an unchanged deep runtimePatches entry: the defaulting compares old and new without recursing', async () => {
    const patches = '[{"manager":"example.com/m","trainer":' + objects(9_990) + '}]';
    const body = JSON.stringify(
      review('UPDATE', {
        object: trainJob({ runtimePatches: '__A__' }),
        oldObject: trainJob({ runtimePatches: '__B__' }),
      }),
    )
      .replace('"__A__"', patches)
      .replace('"__B__"', patches);
    const answer = await server.mutate(body);
    assertWellFormedAnswer(answer, 'mutate');
    assert.equal(answer.json!.response.allowed, true);
  });
});

describe('values the mutating webhook would copy into its patch', () => {
  let server: Server;
  before(async () => {
    server = await crdServer();
  });

  // An old runtimePatches time beyond int64 would make the patch unserialisable (HTTP 500), and a
  // deep one would overflow JSON.stringify: such a time is not copied.
  for (const [what, time] of [
    ['an integer beyond int64', '9223372036854775808'],
    ['an array 9,990 deep', arrays(9_990)],
    ['an object', '{"a":1}'],
  ]) {
    it(`an old time that is ${what} is not copied: an in-band answer without a patch for it`, async () => {
      const body = JSON.stringify(
        review('UPDATE', {
          object: trainJob({ runtimePatches: [{ manager: 'example.com/tuner' }] }),
          oldObject: trainJob({ runtimePatches: [{ manager: 'example.com/tuner', time: '__HOLE__' }] }),
        }),
      ).replace(HOLE, time);
      const answer = await server.mutate(body);
      assertWellFormedAnswer(answer, 'mutate');
      assert.equal(answer.json!.response.allowed, true);
      assert.equal(answer.json!.response.patch, undefined);
    });
  }
});

describe('deep values a denial names', () => {
  let server: Server;
  before(async () => {
    server = await crdServer();
  });

  // A list-type map item nested 9,990 deep is a bad value the denial renders; rendering it must
  // not overflow (JSON.stringify would: an in-band internal error).
  it('spec.runtimePatches[0] nested 9,990 arrays deep is denied with the schema errors', async () => {
    const body = JSON.stringify(review('CREATE', { object: trainJob({ runtimePatches: '__HOLE__' }) })).replace(
      HOLE,
      arrays(9_990),
    );
    const answer = await server.validate(body);
    assertWellFormedAnswer(answer, 'validate');
    assert.equal(answer.json!.response.allowed, false);
    assert.equal(answer.json!.response.status.code, 422);
    assert.match(answer.json!.response.status.message, /spec\.runtimePatches\[0\]: Invalid value: \[\[\[\[/);
  });
});

describe('deep values the decision names in a warning', () => {
  let server: Server;
  before(async () => {
    server = await crdServer();
  });

  // The numNodes-change warning writes the old value; String() would recurse through a deep
  // array (an in-band internal error).
  it('an old numNodes nested 9,990 arrays deep, changed to 4', async () => {
    const body = JSON.stringify(
      review('UPDATE', {
        object: trainJob({ trainer: { image: 'ghcr.io/acme/train:1.0', numNodes: 4 } }),
        oldObject: trainJob({ trainer: { image: 'ghcr.io/acme/train:1.0', numNodes: '__HOLE__' } }),
      }),
    ).replace(HOLE, arrays(9_990));
    assertWellFormedAnswer(await server.validate(body), 'validate');
  });
});

describe('deep untyped values reaching a CEL rule', () => {
  let server: Server;
  before(async () => {
    server = await crdServer();
  });

  // An old spec.runtimeRef nested 9,990 arrays deep (the old object is not validated) reaches
  // `self == oldSelf`, and the CEL library's type check would recurse through it: "Maximum call
  // stack size exceeded evaluating rule". Deeper than 1,000 levels, an untyped value is opaque to
  // rules; the rule fails to evaluate, as in the API server (where a value of the wrong type is
  // "invalid data").
  for (const field of ['runtimeRef', 'managedBy']) {
    it(`an old spec.${field} nested 9,990 arrays deep: the rule reports a value too deep`, async () => {
      const body = JSON.stringify(
        review('UPDATE', { object: trainJob(), oldObject: trainJob({ [field]: '__HOLE__' }) }),
      ).replace(HOLE, arrays(9_990));
      const answer = await server.validate(body);
      assertWellFormedAnswer(answer, 'validate');
      assert.equal(answer.json!.response.allowed, false);
      assert.match(
        answer.json!.response.status.message,
        /Unsupported type: a value nested deeper than 1000 levels evaluating rule: self == oldSelf/,
      );
    });
  }
});
