// The CRD patch restorer writes only onto a Trainer line it knows, and only onto a spec.trainer
// whose fields it can name: the patch lifts the blanket rule and names each field it keeps
// immutable, so on a schema it has never seen (a later Trainer) the fields it cannot name would
// change freely at the API server. Such a CRD is refused with the way out (the patch generated
// for it, applied by hand after checking it); a patch already in force on it is kept. Decided by
// the reconciler's own planner (src/commands/reconcile.ts), the one the restorer runs.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fastJsonPatch, { type Operation } from 'fast-json-patch';
import { crdPatchPlanner } from '../../src/commands/crd-patch-planner.ts';
import { detectTrainerLine } from '../../src/api/trainer-line-detect.ts';
import { crdPatchOps } from '../../src/rules/generate/crd-patch.ts';
import { rulesFor } from '../../src/rules/table.ts';
import { readYaml, trainJobCrdObject, trainJobCrdV230Object, upstreamCrdPath } from '../crd/fixtures.ts';

type Obj = Record<string, any>;
const schemaOf = (crd: Obj): Obj => crd.spec.versions[0].schema.openAPIV3Schema;
const specOf = (crd: Obj): Obj => schemaOf(crd).properties.spec;
const trainerOf = (crd: Obj): Obj => specOf(crd).properties.trainer;

/** The CRD as the API server sends it. */
function live(crd: unknown): Obj {
  const out = structuredClone(crd) as Obj;
  out.metadata = { ...out.metadata, resourceVersion: '41', uid: 'u-1' };
  return out;
}
/** What `trainjob-webhook rules --format crd-patch --crd <crd>` writes for this CRD, applied by hand. */
function patchedByHand(crd: Obj): Obj {
  const ops = crdPatchOps(schemaOf(crd), rulesFor(detectTrainerLine(crd).line));
  return fastJsonPatch.applyPatch(structuredClone(crd), ops as Operation[], true, false).newDocument as Obj;
}

// Parsed once; every case takes its own copy.
const V221 = readYaml(upstreamCrdPath('trainer-v2.2.1', 'trainer.kubeflow.org_trainjobs.yaml'));
const V230 = trainJobCrdV230Object();
const MAIN = trainJobCrdObject();

/** A later Trainer: a field it added to spec.trainer. */
function laterTrainer(base: unknown): Obj {
  const crd = live(base);
  trainerOf(crd).properties.gpuSharing = { type: 'string', description: 'a field no known line has' };
  return crd;
}

const cases: { name: string; crd: () => Obj; action: 'patch' | 'refuse' | 'keep'; reason?: RegExp }[] = [
  { name: "Trainer v2.2.1's chart CRD", crd: () => live(V221), action: 'patch' },
  { name: "Trainer v2.3.0's chart CRD", crd: () => live(V230), action: 'patch' },
  { name: "Trainer main's chart CRD", crd: () => live(MAIN), action: 'patch' },
  {
    name: 'v2.3.0 with descriptions changed (not part of the line: still v2.3.0)',
    crd: () => {
      const crd = live(V230);
      trainerOf(crd).description = 'reworded';
      specOf(crd).properties.suspend.description = 'reworded too';
      return crd;
    },
    action: 'patch',
  },
  {
    name: 'a later Trainer: a spec.trainer field no known line has',
    crd: () => laterTrainer(V230),
    action: 'refuse',
    reason:
      /of no Trainer line this restorer knows: .*features of Trainer v2\.3\.0 but a schema that differs elsewhere/,
  },
  {
    name: 'a later Trainer: a spec field no known line has (main-like)',
    crd: () => {
      const crd = live(MAIN);
      specOf(crd).properties.priority = { type: 'integer' };
      return crd;
    },
    action: 'refuse',
    reason: /of no Trainer line this restorer knows/,
  },
  {
    name: 'a schema of no known line at all (features of none)',
    crd: () => {
      const crd = live(V230);
      delete trainerOf(crd).properties.args;
      return crd;
    },
    action: 'refuse',
    reason: /of no Trainer line this restorer knows: .*features of none of/,
  },
  {
    name: 'spec.trainer with x-kubernetes-preserve-unknown-fields (its unknown keys would change freely)',
    crd: () => {
      const crd = live(V230);
      trainerOf(crd)['x-kubernetes-preserve-unknown-fields'] = true;
      return crd;
    },
    action: 'refuse',
    reason: /spec\.trainer keeps unknown fields \(x-kubernetes-preserve-unknown-fields\)/,
  },
  {
    name: 'spec.trainer with additionalProperties',
    crd: () => {
      const crd = live(MAIN);
      trainerOf(crd).additionalProperties = { type: 'string' };
      return crd;
    },
    action: 'refuse',
    reason: /spec\.trainer takes additionalProperties/,
  },
  {
    name: 'spec.trainer without properties',
    crd: () => {
      const crd = live(V230);
      delete trainerOf(crd).properties;
      trainerOf(crd)['x-kubernetes-preserve-unknown-fields'] = false;
      return crd;
    },
    action: 'refuse',
    reason: /spec\.trainer declares no properties/,
  },
  {
    name: 'a later Trainer patched by hand with the patch generated for it: kept (nothing to write)',
    crd: () => live(patchedByHand(laterTrainer(V230))),
    action: 'keep',
    reason: /in force .*an unknown Trainer line: not restored if removed/,
  },
  {
    name: 'spec.trainer with x-kubernetes-preserve-unknown-fields, patched by hand: kept',
    crd: () => {
      const crd = live(V230);
      trainerOf(crd)['x-kubernetes-preserve-unknown-fields'] = true;
      return live(patchedByHand(crd));
    },
    action: 'keep',
  },
];

describe('the CRD patch restorer writes only onto a Trainer line it knows', () => {
  for (const c of cases) {
    it(`${c.name}: ${c.action}`, () => {
      const d = crdPatchPlanner.decide(c.crd());
      assert.equal(d.action, c.action, d.reason);
      if (c.reason) assert.match(d.reason, c.reason);
      if (d.action === 'refuse') {
        assert.equal(d.ops, undefined, 'nothing to write');
        // The way out: the patch generated for that CRD, applied by hand after checking it.
        assert.match(d.byHand ?? '', /^Check the patch generated for this CRD, then apply it by hand: /);
        assert.match(d.byHand ?? '', /trainjob-webhook rules --format crd-patch --crd crd\.yaml/);
        assert.match(d.byHand ?? '', /kubectl patch crd trainjobs\.trainer\.kubeflow\.org --type=json/);
      }
    });
  }

  it('a CRD read it cannot use is refused without a way out by hand (not a Trainer line question)', () => {
    const d = crdPatchPlanner.decide({ metadata: { name: 'trainjobs.trainer.kubeflow.org' } });
    assert.equal(d.action, 'refuse');
    assert.equal(d.byHand, undefined);
  });
});
