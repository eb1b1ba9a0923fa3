// A CRD rule this engine cannot compile (a CEL library it lacks) is left out and reported by its
// location; a messageExpression that does not compile keeps its rule, which then fails with its
// static message. Never the whole CRD lost.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { policyFromCrd } from '../../src/rules/crd-policy.ts';
import { decideCreate } from '../../src/rules/decide.ts';
import { trainJobCrdV230Object } from './fixtures.ts';

type Rule = { rule: string; message?: string; messageExpression?: string };

/** Trainer v2.3.0's CRD with extra rules at spec. */
function crdWith(...rules: Rule[]): unknown {
  const crd = structuredClone(trainJobCrdV230Object()) as any;
  const spec = crd.spec.versions[0].schema.openAPIV3Schema.properties.spec;
  spec['x-kubernetes-validations'] = [...(spec['x-kubernetes-validations'] ?? []), ...rules];
  return crd;
}

const job = (managedBy: string) => ({
  apiVersion: 'trainer.kubeflow.org/v1alpha1',
  kind: 'TrainJob',
  metadata: { name: 'x', namespace: 'ns' },
  spec: { runtimeRef: { name: 'torch-distributed' }, managedBy },
});

describe('CRD rules the engine cannot compile', () => {
  const base = policyFromCrd(trainJobCrdV230Object());

  it('the vendored CRD compiles whole', () => {
    assert.deepEqual(base.crd?.uncompilable, []);
  });

  const cases: { name: string; rules: Rule[]; uncompilable: { part: string; error: RegExp }[]; extraRules: number }[] =
    [
      {
        name: 'a rule using a missing library is left out, named by its location',
        rules: [{ rule: "isURL('https://x')" }],
        uncompilable: [
          { part: 'rule', error: /^CRD rule at spec x-kubernetes-validations\[\d+\] \("isURL\('https:\/\/x'\)"\): / },
        ],
        extraRules: 0,
      },
      {
        name: 'a syntax error is reported the same way',
        rules: [{ rule: 'self.managedBy ==' }],
        uncompilable: [{ part: 'rule', error: /compilation failed|Unexpected|syntax/i }],
        extraRules: 0,
      },
      {
        name: 'an uncompilable messageExpression keeps its rule',
        rules: [
          {
            rule: "self.managedBy != 'x/y'",
            message: 'static message',
            messageExpression: "'managedBy %s'.format([self.managedBy])",
          },
        ],
        uncompilable: [{ part: 'messageExpression', error: /^messageExpression of the CRD rule at spec/ }],
        extraRules: 1,
      },
      {
        name: 'the others still compile and run',
        rules: [{ rule: "isURL('https://x')" }, { rule: "self.managedBy != 'x/y'", message: 'plain rule' }],
        uncompilable: [{ part: 'rule', error: /isURL/ }],
        extraRules: 1,
      },
    ];
  for (const c of cases) {
    it(c.name, () => {
      const policy = policyFromCrd(crdWith(...c.rules));
      assert.equal(policy.crd?.uncompilable.length, c.uncompilable.length);
      policy.crd?.uncompilable.forEach((u, i) => {
        assert.equal(u.part, c.uncompilable[i].part);
        assert.match(u.error, c.uncompilable[i].error);
      });
      assert.equal(policy.crd?.rules.length, (base.crd?.rules.length ?? 0) + c.extraRules);
    });
  }

  it('a kept rule with a broken messageExpression fails with its static message', () => {
    const policy = policyFromCrd(
      crdWith({
        rule: "!has(self.managedBy) || self.managedBy != 'kueue.x-k8s.io/multikueue'",
        message: 'no MultiKueue here',
        messageExpression: "'%s'.format([self.managedBy])",
      }),
    );
    const decision = decideCreate(policy, job('kueue.x-k8s.io/multikueue'));
    assert.deepEqual(
      decision.causes.map((c) => c.detail),
      ['no MultiKueue here'],
    );
  });
});
