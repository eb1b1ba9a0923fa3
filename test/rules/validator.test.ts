// The validator's one I/O step: an allowed numNodes change, and nothing else, is judged against the
// cluster; the judgment may refuse it for good or for now, and a judgment that fails refuses it for now.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { buildPolicy } from '../../src/rules/policy.ts';
import { createValidator, NOT_JUDGED } from '../../src/rules/validator.ts';
import type { ScaleCheck, ScaleCheckResult } from '../../src/rules/contract.ts';
import { OMIT_VALUE } from '../../src/field/errors.ts';
import { finished, trainJob, update, variant } from './fixtures.ts';
import { policyFromCrd } from '../../src/rules/crd-policy.ts';
import { trainJobCrdV230Object } from '../crd/fixtures.ts';

const policy = buildPolicy();
const old = trainJob();
const scaled = variant(old, (o) => (o.spec.trainer.numNodes = 2));
const running = variant(old, (o) => (o.spec.suspend = false));
/** Issue 8: a running job suspended and scaled in one update (what Kueue does). */
const suspendedAndScaled = variant(running, (o) => ((o.spec.suspend = true), (o.spec.trainer.numNodes = 2)));
type Call = { namespace: string; name: string; numNodes: unknown };

/** A stand-in for the cluster's judgment (src/scale/reads/scale-check.ts, tested against a real API server in e2e). */
function checker(result: ScaleCheckResult | Error): { check: ScaleCheck; calls: Call[] } {
  const calls: Call[] = [];
  return {
    calls,
    check: async ({ namespace, name, object }) => {
      calls.push({
        namespace,
        name,
        numNodes: (object as { spec: { trainer: { numNodes: unknown } } }).spec.trainer.numNodes,
      });
      if (result instanceof Error) throw result;
      return result;
    },
  };
}
const admits = (warnings: string[] = []): ScaleCheckResult => ({ causes: [], warnings });
const numNodesCause = (detail: string) => ({
  type: 'FieldValueForbidden' as const,
  field: 'spec.trainer.numNodes',
  value: OMIT_VALUE,
  detail,
  origin: 'scale-check',
});

describe('validator', () => {
  it('judges an allowed numNodes change against the cluster: the TrainJob of the same namespace and name, as it would be stored', async () => {
    const c = checker(admits());
    const d = await createValidator({ policy, scaleCheck: c.check }).validate(update(scaled, old));
    assert.deepEqual(c.calls, [{ namespace: 'team-a', name: 'llama-ft', numNodes: 2 }]);
    assert.deepEqual(d.causes, []);
  });
  it('does not judge when nothing about numNodes changes', async () => {
    const c = checker(admits());
    await createValidator({ policy, scaleCheck: c.check }).validate(
      update(
        variant(old, (o) => (o.metadata.labels = { a: 'b' })),
        old,
      ),
    );
    assert.deepEqual(c.calls, []);
  });
  it('does not judge a change the rules refuse, and the refusal carries no rebuild warning', async () => {
    const c = checker(admits());
    const d = await createValidator({ policy, scaleCheck: c.check }).validate(
      update(
        variant(running, (o) => (o.spec.trainer.numNodes = 2)),
        running,
      ),
    );
    assert.deepEqual(c.calls, []);
    assert.deepEqual(
      d.causes.map((c) => c.origin),
      ['trainer-numNodes-while-suspended'],
    );
    assert.deepEqual(d.warnings, []);
  });
  it('admitted: the rebuild warning first, then what the judgment says (the pods the rebuild waits for)', async () => {
    const pods = 'JobSet team-a/llama-ft still has 2 pods (2 pending or running; Job llama-ft-node-0: 2 active)';
    const d = await createValidator({ policy, scaleCheck: checker(admits([pods])).check }).validate(
      update(suspendedAndScaled, running),
    );
    assert.deepEqual(d.causes, []);
    assert.equal(d.warnings.length, 2, d.warnings.join('\n'));
    assert.match(
      d.warnings[0],
      /rebuilt with 2 nodes as soon as it is suspended and none of its pods runs or is terminating/,
    );
    assert.doesNotMatch(d.warnings[0], /on resume/);
    assert.equal(d.warnings[1], pods);
    assert.equal(d.transient, undefined);
  });
  it('refused for good by the judgment: its cause alone, no rebuild warning, not transient', async () => {
    const cause = numNodesCause(
      'the ML policy "foo" of ClusterTrainingRuntime x is not one whose JobSet can be rebuilt',
    );
    const d = await createValidator({ policy, scaleCheck: checker({ causes: [cause], warnings: [] }).check }).validate(
      update(scaled, old),
    );
    assert.deepEqual(d.causes, [cause]);
    assert.deepEqual(d.warnings, []);
    assert.equal(d.transient, undefined);
  });
  it('refused for now by the judgment: transient', async () => {
    const cause = numNodesCause('no reconciler leads to carry the rebuild out');
    const d = await createValidator({
      policy,
      scaleCheck: checker({ causes: [cause], warnings: [], transient: true }).check,
    }).validate(update(scaled, old));
    assert.deepEqual(d.causes, [cause]);
    assert.equal(d.transient, true);
  });
  it('a judgment that throws refuses the count change for now (transient), with the error', async () => {
    const d = await createValidator({ policy, scaleCheck: checker(new Error('connection refused')).check }).validate(
      update(scaled, old),
    );
    assert.equal(d.causes.length, 1);
    assert.equal(d.causes[0].field, 'spec.trainer.numNodes');
    assert.match(d.causes[0].detail, /could not be judged \(connection refused\).*refused for now/);
    assert.equal(d.transient, true);
  });
  it('a judgment that throws refuses nothing but count changes', async () => {
    const c = checker(new Error('connection refused'));
    const d = await createValidator({ policy, scaleCheck: c.check }).validate(
      update(
        variant(old, (o) => (o.metadata.labels = { a: 'b' })),
        old,
      ),
    );
    assert.deepEqual(d.causes, []);
  });
  it('without cluster access the change is allowed with the rebuild warning and one saying it was not judged', async () => {
    const d = await createValidator({ policy }).validate(update(scaled, old));
    assert.equal(d.causes.length, 0);
    assert.match(d.warnings[0], /^spec\.trainer\.numNodes changes from 1 to 2/);
    assert.equal(d.warnings.at(-1), NOT_JUDGED);
  });
  it('a finished job is refused by the table, whatever runs', async () => {
    const c = checker(admits());
    const done = finished(old, 'Complete');
    const d = await createValidator({ policy, scaleCheck: c.check }).validate(
      update(
        variant(done, (o) => (o.spec.trainer.numNodes = 2)),
        done,
      ),
    );
    assert.deepEqual(
      d.causes.map((c) => c.origin),
      ['trainer-numNodes-not-after-finish'],
    );
    assert.deepEqual(c.calls, []);
  });
  it('DELETE and CONNECT are allowed without evaluating anything', async () => {
    const v = createValidator({ policy });
    for (const operation of ['DELETE', 'CONNECT'] as const) {
      assert.deepEqual(await v.validate({ uid: 'u', operation, dryRun: false, object: 'garbage', oldObject: 42 }), {
        causes: [],
        warnings: [],
      });
    }
  });
});

/**
 * Trainer v2.3.0's CRD with one more rule on spec.trainer.image, `self.lowerAscii() == self`. cel-go's
 * lowerAscii lowers ASCII letters only, so the API server admits an image with an upper-case É; this
 * port's lowers every letter and refuses it: a rule where the two really differ.
 */
function crdWithLowerAsciiImageRule(): unknown {
  const crd = trainJobCrdV230Object() as { spec: { versions: { schema: { openAPIV3Schema: any } }[] } };
  const image = crd.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.trainer.properties.image;
  image['x-kubernetes-validations'] = [{ rule: 'self.lowerAscii() == self', message: 'image must be lower case' }];
  return crd;
}

describe('what the validator checks: the whole object offline, the table alone in the cluster', () => {
  const crdPolicy = policyFromCrd(crdWithLowerAsciiImageRule());
  const accented = variant(old, (o) => (o.spec.trainer.image = 'ghcr.io/acme/trainÉ:1'));
  const create = (object: unknown) => ({ ...update(object, undefined), operation: 'CREATE' as const });
  const counting = (scope?: 'table' | 'whole-object') => {
    const counted = { n: 0 };
    const validator = createValidator({ policy: crdPolicy, scope, onWholeObjectCheck: () => counted.n++ });
    return { validator, counted };
  };

  it('offline (the default) a create the CRD refuses (its managedBy rule) is refused; counted', async () => {
    const { validator, counted } = counting();
    const d = await validator.validate(create(variant(old, (o) => (o.spec.managedBy = 'example.com/other'))));
    assert.deepEqual(
      d.causes.map((c) => c.field),
      ['spec.managedBy'],
    );
    assert.equal(counted.n, 1);
  });
  it('in the cluster that create is admitted: the API server has refused it before, or admitted it; nothing counted', async () => {
    const { validator, counted } = counting('table');
    const d = await validator.validate(create(variant(old, (o) => (o.spec.managedBy = 'example.com/other'))));
    assert.deepEqual(d.causes, []);
    assert.equal(counted.n, 0);
  });
  it("where this port's CEL differs from the API server's (lowerAscii of É), offline refuses and the cluster path admits as the API server does", async () => {
    const offline = counting();
    const refused = await offline.validator.validate(create(accented));
    assert.deepEqual(
      refused.causes.map((c) => `${c.field}: ${c.detail}`),
      ['spec.trainer.image: image must be lower case'],
    );
    const inCluster = counting('table');
    assert.deepEqual((await inCluster.validator.validate(create(accented))).causes, []);
    const relabelled = variant(accented, (o) => (o.spec.suspend = false));
    assert.deepEqual((await inCluster.validator.validate(update(relabelled, accented))).causes, []);
    assert.equal(inCluster.counted.n, 0);
  });
  it('in the cluster the table still refuses what it refuses (an image change), without counting a whole-object check', async () => {
    const { validator, counted } = counting('table');
    const d = await validator.validate(
      update(
        variant(old, (o) => (o.spec.trainer.image = 'x:2')),
        old,
      ),
    );
    assert.deepEqual(
      d.causes.map((c) => c.origin),
      ['trainer-image-immutable'],
    );
    assert.equal(counted.n, 0);
  });
  it('the start-up line says which: the whole object offline, the schema and rules left to the API server in the cluster', () => {
    assert.match(counting().validator.describe(), /: schema, \d+ CRD rules and \d+ table rules/);
    assert.match(
      createValidator({ policy: crdPolicy, scope: 'table', crdSource: 'the API server' }).describe(),
      /^CRD: the API server: its schema locates the \d+ table rules; the schema and the CRD's own rules are the API server's to check/,
    );
  });
});
