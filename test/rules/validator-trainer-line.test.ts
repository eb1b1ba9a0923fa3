// The validator hands the scale judgment the Trainer line of the CRD in force, so the webhook's
// judgment follows the installed Trainer (a Failed job is final on main, not on v2.3.0).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createValidator } from '../../src/rules/validator.ts';
import { buildPolicy } from '../../src/rules/policy.ts';
import { policyFromCrd } from '../../src/rules/crd-policy.ts';
import type { ScaleChange } from '../../src/rules/contract.ts';
import { readYaml, trainJobCrdObject, upstreamCrdPath } from '../crd/fixtures.ts';
import { trainJob, variant } from './fixtures.ts';

describe('the scale judgment is asked under the line of the CRD in force', () => {
  const policies = {
    'v2.2.1': policyFromCrd(readYaml(upstreamCrdPath('trainer-v2.2.1/trainer.kubeflow.org_trainjobs.yaml'))),
    'v2.3.0': policyFromCrd(readYaml(upstreamCrdPath('trainer-v2.3.0/trainer.kubeflow.org_trainjobs.yaml'))),
    'main-8c0f5059': policyFromCrd(trainJobCrdObject()),
    unknown: buildPolicy(),
  };
  for (const [line, policy] of Object.entries(policies)) {
    it(`${line}`, async () => {
      const asked: ScaleChange[] = [];
      const validator = createValidator({
        policy,
        scaleCheck: async (change) => (asked.push(change), { causes: [], warnings: [] }),
      });
      const old = trainJob();
      const decision = await validator.validate({
        uid: 'u',
        operation: 'UPDATE',
        namespace: 'default',
        name: String(old.metadata.name),
        object: variant(old, (o) => (o.spec.trainer.numNodes = 3)),
        oldObject: old,
        dryRun: false,
      });
      assert.deepEqual(decision.causes, []);
      assert.deepEqual(
        asked.map((c) => c.trainer.id),
        [line],
      );
    });
  }
});
