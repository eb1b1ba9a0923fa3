// The scale subresource, status field and columns the CRD patch and the VAP lift add: applied to
// each vendored CRD they put our columns before Age, the scale subresource on numNodes and our
// status field; the restore takes exactly those away again; a CRD without columns or subresources
// gets them whole; and the VAP for trainjobs/scale refuses what it cannot judge.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fastJsonPatch, { type Operation } from 'fast-json-patch';
import {
  PRINTER_COLUMNS,
  SCALE,
  scaleSubresourceOps,
  undoScaleSubresourceOps,
  withoutScaleParts,
} from '../../src/rules/generate/scale-subresource.ts';
import { crdPatchOps, crdRestoreOps } from '../../src/rules/generate/crd-patch.ts';
import { VAP_SCALE_MESSAGE, vapLiftOps, vapLiftRestoreOps, vapScaleManifests } from '../../src/rules/generate/vap.ts';
import { trainJobCrdObject, trainJobCrdV230Object } from '../crd/fixtures.ts';
import { Environment } from '@marcbachmann/cel-js';

type Obj = Record<string, any>;
const apply = (doc: unknown, ops: unknown[]): Obj =>
  fastJsonPatch.applyPatch(structuredClone(doc), ops as Operation[], true, false).newDocument as Obj;
const versionOf = (crd: Obj): Obj => crd.spec.versions[0];
const schemaOf = (crd: Obj): Obj => versionOf(crd).schema.openAPIV3Schema;

const crds = [
  { name: 'Trainer v2.3.0', crd: () => trainJobCrdV230Object() as Obj },
  { name: "Trainer's main line", crd: () => trainJobCrdObject() as Obj },
];

describe('the scale parts of the CRD patch', () => {
  for (const { name, crd } of crds) {
    it(`${name}: columns before Age, the scale subresource on numNodes, the status field; the restore undoes them`, () => {
      const upstream = crd();
      const version = versionOf(upstream);
      const patched = apply(upstream, crdPatchOps(schemaOf(upstream), undefined, version));
      const v = versionOf(patched);
      assert.deepEqual(
        v.additionalPrinterColumns.map((c: Obj) => `${c.name} ${c.jsonPath}`),
        [
          'State .status.conditions[-1:].type',
          'Nodes .spec.trainer.numNodes',
          'JobSet .status.trainjobWebhook.nodes',
          'Rebuild .status.trainjobWebhook.rebuild',
          'Age .metadata.creationTimestamp',
        ],
      );
      assert.deepEqual(v.subresources, {
        status: {},
        scale: {
          specReplicasPath: '.spec.trainer.numNodes',
          statusReplicasPath: '.status.trainjobWebhook.nodes',
          labelSelectorPath: '.status.trainjobWebhook.selector',
        },
      });
      assert.deepEqual(Object.keys(schemaOf(patched).properties.status.properties.trainjobWebhook.properties).sort(), [
        'nodes',
        'reason',
        'rebuild',
        'selector',
      ]);
      const restored = apply(patched, crdRestoreOps(schemaOf(upstream), undefined, version));
      assert.deepEqual(restored, upstream);
    });

    it(`${name}: the VAP lift adds the same parts and no rule; its restore gives upstream back`, () => {
      const upstream = crd();
      const version = versionOf(upstream);
      const lifted = apply(upstream, vapLiftOps(schemaOf(upstream), version));
      assert.deepEqual(versionOf(lifted).subresources.scale, SCALE);
      assert.equal(schemaOf(lifted).properties.spec['x-kubernetes-validations'], undefined);
      assert.deepEqual(apply(lifted, vapLiftRestoreOps(schemaOf(upstream), version)), upstream);
    });

    it(`${name}: withoutScaleParts turns the patched version back into upstream's parts`, () => {
      const upstream = crd();
      const patched = versionOf(apply(upstream, scaleSubresourceOps(versionOf(upstream))));
      withoutScaleParts(patched);
      assert.deepEqual(patched, versionOf(upstream));
    });
  }

  it('a version without columns or subresources gets them whole, and loses them whole', () => {
    const upstream = trainJobCrdV230Object() as Obj;
    const version = versionOf(upstream);
    delete version.additionalPrinterColumns;
    delete version.subresources;
    const patched = apply(upstream, scaleSubresourceOps(version));
    assert.deepEqual(versionOf(patched).additionalPrinterColumns, PRINTER_COLUMNS);
    assert.deepEqual(versionOf(patched).subresources, { scale: SCALE });
    const back = versionOf(apply(patched, [])); // a copy
    withoutScaleParts(back);
    assert.equal(back.additionalPrinterColumns, undefined);
    assert.deepEqual(back.subresources, {});
    assert.deepEqual(
      apply(patched, undoScaleSubresourceOps(version)).spec.versions[0].additionalPrinterColumns,
      undefined,
    );
  });

  it('columns it was not made for (Age elsewhere) make the patch fail, not land in the wrong place', () => {
    const upstream = trainJobCrdV230Object() as Obj;
    const ops = scaleSubresourceOps(); // made for v2.3.0's [State, Age]
    versionOf(upstream).additionalPrinterColumns.reverse();
    assert.throws(() => apply(upstream, ops), /Test operation failed/);
  });
});

describe('the VAP on trainjobs/scale', () => {
  const [policy, binding] = vapScaleManifests() as Obj[];
  it('matches the scale subresource alone, on UPDATE, and denies', () => {
    assert.deepEqual(policy.spec.matchConstraints.resourceRules, [
      {
        apiGroups: ['trainer.kubeflow.org'],
        apiVersions: ['v1alpha1'],
        operations: ['UPDATE'],
        resources: ['trainjobs/scale'],
      },
    ]);
    assert.deepEqual(binding.spec, { policyName: policy.metadata.name, validationActions: ['Deny'] });
  });
  it('admits only a scale that keeps a count other than 0 (a Scale omits replicas 0), and says what to do', () => {
    const [v] = policy.spec.validations;
    assert.equal(
      v.expression,
      '(has(object.spec) && has(object.spec.replicas) ? object.spec.replicas : 0) == (has(oldObject.spec) && has(oldObject.spec.replicas) ? oldObject.spec.replicas : 0) && (has(object.spec) && has(object.spec.replicas) ? object.spec.replicas : 0) != 0',
    );
    assert.equal(v.reason, 'Forbidden');
    assert.equal(v.message, VAP_SCALE_MESSAGE);
    // Evaluated as the API server would (a VAP's object and oldObject are dyn; JSON integers are CEL ints).
    const env = new Environment({ homogeneousAggregateLiterals: false });
    env.registerVariable('object', 'dyn');
    env.registerVariable('oldObject', 'dyn');
    const admits = env.parse(v.expression);
    const scale = (replicas?: number) => ({ spec: replicas === undefined ? {} : { replicas: BigInt(replicas) } });
    const judge = (to?: number, from?: number) => admits({ object: scale(to), oldObject: scale(from) });
    assert.equal(judge(3, 3), true, 'the same count: nothing changes');
    assert.equal(judge(4, 3), false, 'a change');
    assert.equal(judge(undefined, 2), false, 'to 0 (omitted)');
    assert.equal(judge(undefined, undefined), false, 'to 0 from a job without numNodes (its Scale reads 0)');
    assert.match(
      v.message,
      /kubectl patch trainjob NAME --type=merge -p '\{"spec":\{"suspend":true,"trainer":\{"numNodes":N\}\}\}'/,
    );
  });
});
