// The VAP covers spec.trainer fields it was not generated for: a policy's `object`/`oldObject` are
// plain maps (dyn) in the API server, so one validation iterates spec.trainer's keys, where a CRD
// rule on a typed object cannot. Here the policy's CEL runs in this project's CEL library over
// plain JSON, evaluated the way the API server evaluates a policy (variables, then validations in
// order, the first failure's messageExpression or message); test/e2e/differential.test.ts proves
// the same policy in the real API server.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { Environment } from '@marcbachmann/cel-js';
import { parseAllDocuments } from 'yaml';
import { InternPool, toCelValue } from '../../src/cel/values.ts';
import {
  CHANGED_UNKNOWN_TRAINER_FIELDS,
  changedUnknownTrainerFields,
  vapManifests,
} from '../../src/rules/generate/vap.ts';
import { TABLE_SCHEMA } from '../../src/rules/table-schema.ts';
import { projectRoot, trainJobCrdV230Object } from '../crd/fixtures.ts';
import { trainJob, variant, type TrainJob } from './fixtures.ts';

interface Policy {
  spec: {
    variables?: { name: string; expression: string }[];
    validations: { expression: string; message: string; messageExpression?: string }[];
  };
}

/** The policy as shipped (manifests/vap, generated for Trainer v2.3.0's CRD). */
const shipped = (): Policy =>
  parseAllDocuments(readFileSync(path.join(projectRoot, 'manifests/vap/trainjob-vap.yaml'), 'utf8'))
    .map((d) => d.toJSON() as Policy & { kind: string })
    .find((d) => d.kind === 'ValidatingAdmissionPolicy')!;

type Crd = { spec: { versions: { schema: { openAPIV3Schema: any } }[] } };
const schemaOf = (crd: Crd) => crd.spec.versions[0]!.schema.openAPIV3Schema;
/** Trainer v2.3.0's CRD with a spec.trainer field a later Trainer might add. */
function withNewTrainerField(): Crd {
  const crd = structuredClone(trainJobCrdV230Object()) as Crd;
  schemaOf(crd).properties.spec.properties.trainer.properties.priorityClassName = { type: 'string' };
  return crd;
}
const generatedFor = (crd: Crd): Policy => vapManifests(TABLE_SCHEMA, schemaOf(crd))[0] as Policy;

const env = new Environment({ enableOptionalTypes: true, homogeneousAggregateLiterals: false });
for (const name of ['object', 'oldObject', 'variables']) env.registerVariable(name, 'dyn');
/** Unstructured JSON as CEL sees it in the API server: integral numbers are ints. */
const unstructured = (v: unknown): unknown => toCelValue(structuredClone(v), undefined, new InternPool());

/** 'allowed', or the denial's message. A validation that fails to evaluate denies (failurePolicy: Fail). */
function decide(policy: Policy, oldObject: TrainJob, object: TrainJob): string {
  const vars: Record<string, unknown> = { object: unstructured(object), oldObject: unstructured(oldObject) };
  const variables: Record<string, unknown> = {};
  for (const v of policy.spec.variables ?? []) variables[v.name] = env.parse(v.expression)({ ...vars, variables });
  for (const v of policy.spec.validations) {
    let ok: unknown;
    try {
      ok = env.parse(v.expression)({ ...vars, variables });
    } catch (err) {
      return `error: ${(err as Error).message}`;
    }
    if (ok === true) continue;
    const message = v.messageExpression ? env.parse(v.messageExpression)({ ...vars, variables }) : undefined;
    return typeof message === 'string' ? message : v.message;
  }
  return 'allowed';
}

const base = variant(trainJob(), (o) => (o.spec.trainer.priorityClassName = 'low'));
const change = (f: (o: TrainJob) => void, from = base) => variant(from, f);

describe('VAP: spec.trainer fields the policy was not generated for stay immutable', () => {
  const table: { name: string; old?: TrainJob; new: TrainJob; shipped: string }[] = [
    {
      name: 'the added field changed',
      new: change((o) => (o.spec.trainer.priorityClassName = 'high')),
      shipped: 'spec.trainer.priorityClassName: field is immutable',
    },
    {
      name: 'the added field removed',
      new: change((o) => delete o.spec.trainer.priorityClassName),
      shipped: 'spec.trainer.priorityClassName: field is immutable',
    },
    {
      name: 'the added field added',
      old: trainJob(),
      new: base,
      shipped: 'spec.trainer.priorityClassName: field is immutable',
    },
    {
      name: 'spec.trainer removed with the added field in it',
      new: change((o) => delete o.spec.trainer),
      shipped: 'spec.trainer.image: field is immutable',
    },
    {
      name: 'an update that leaves it alone',
      new: change((o) => (o.metadata.labels = { a: 'b' })),
      shipped: 'allowed',
    },
    {
      name: 'numNodes changed while suspended, the added field kept',
      new: change((o) => (o.spec.trainer.numNodes = 4)),
      shipped: 'allowed',
    },
    {
      name: 'env reordered (a keyed list the table names), the added field kept',
      new: change((o) => o.spec.trainer.env.reverse()),
      shipped: 'allowed',
    },
    {
      name: 'an object value with its keys in another order is no change',
      old: change((o) => (o.spec.trainer.placement = { zone: 'a', rack: 1 })),
      new: change((o) => (o.spec.trainer.placement = { rack: 1, zone: 'a' })),
      shipped: 'allowed',
    },
    {
      name: 'an integer value changed',
      old: change((o) => (o.spec.trainer.maxRestarts = 3)),
      new: change((o) => (o.spec.trainer.maxRestarts = 4)),
      shipped: 'spec.trainer.maxRestarts: field is immutable',
    },
    {
      // Its schema is unknown to the policy, so a list compares in order (stricter than the webhook for a keyed list).
      name: 'a list value reordered is a change (plain ==)',
      old: change((o) => (o.spec.trainer.tolerations = [{ key: 'a' }, { key: 'b' }])),
      new: change((o) => (o.spec.trainer.tolerations = [{ key: 'b' }, { key: 'a' }])),
      shipped: 'spec.trainer.tolerations: field is immutable',
    },
    {
      name: 'several changed: the smallest name is reported, whatever the map order',
      old: change((o) => Object.assign(o.spec.trainer, { zeta: 1, alpha: 1, mid: 1 })),
      new: change((o) => Object.assign(o.spec.trainer, { zeta: 2, mid: 2, alpha: 2 })),
      shipped: 'spec.trainer.alpha: field is immutable',
    },
    {
      name: 'no spec.trainer on either side',
      old: change((o) => delete o.spec.trainer),
      new: change((o) => {
        delete o.spec.trainer;
        o.metadata.labels = { a: 'b' };
      }),
      shipped: 'allowed',
    },
  ];
  for (const row of table) {
    it(`shipped policy: ${row.name}`, () => assert.equal(decide(shipped(), row.old ?? base, row.new), row.shipped));
  }

  it('the shipped policy is the one generated for Trainer v2.3.0 (which names no other trainer field)', () => {
    assert.deepEqual(shipped().spec, generatedFor(trainJobCrdV230Object() as Crd).spec);
    assert.equal(shipped().spec.variables?.[0]?.name, CHANGED_UNKNOWN_TRAINER_FIELDS);
  });

  it('generated for a CRD that declares the field: its own validation blames it, and the iterating one leaves it out', () => {
    const policy = generatedFor(withNewTrainerField());
    assert.equal(
      decide(
        policy,
        base,
        change((o) => (o.spec.trainer.priorityClassName = 'high')),
      ),
      'spec.trainer.priorityClassName: field is immutable',
    );
    const own = policy.spec.validations.findIndex(
      (v) => v.message === 'spec.trainer.priorityClassName: field is immutable',
    );
    const iterating = policy.spec.validations.findIndex((v) => v.messageExpression !== undefined);
    assert.ok(own >= 0 && iterating > own, 'the field has a validation of its own, before the iterating one');
    const known = policy.spec.variables?.find((v) => v.name === CHANGED_UNKNOWN_TRAINER_FIELDS)?.expression ?? '';
    assert.match(known, /'priorityClassName'/);
    assert.equal(
      decide(
        policy,
        base,
        change((o) => (o.spec.trainer.queue = 'x')),
      ),
      'spec.trainer.queue: field is immutable',
      'a field it does not declare is still covered',
    );
  });

  it('the changed keys: added, removed and changed unknown keys, never a known one', () => {
    const run = (known: string[], oldTrainer: unknown, newTrainer: unknown): unknown =>
      env.parse(changedUnknownTrainerFields(known))({
        object: unstructured({ spec: newTrainer === undefined ? {} : { trainer: newTrainer } }),
        oldObject: unstructured({ spec: oldTrainer === undefined ? {} : { trainer: oldTrainer } }),
      });
    const rows: [string[], unknown, unknown, string[]][] = [
      [['image'], { image: 'a' }, { image: 'b' }, []],
      [['image'], { image: 'a', x: 1 }, { image: 'a', x: 2 }, ['x']],
      [['image'], { image: 'a' }, { image: 'a', x: 1 }, ['x']],
      [['image'], { image: 'a', x: 1 }, { image: 'a' }, ['x']],
      [['image'], { x: 1 }, undefined, ['x']],
      [['image'], undefined, { x: 1 }, ['x']],
      [['image'], undefined, undefined, []],
      [[], { x: { a: [1, 2] } }, { x: { a: [1, 2] } }, []],
      [[], { x: 1 }, { x: 1.5 }, ['x']],
    ];
    for (const [known, before, after, want] of rows)
      assert.deepEqual(run(known, before, after), want, JSON.stringify({ known, before, after }));
  });
});
