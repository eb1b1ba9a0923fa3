// The CRD patch restorer's decision: a CRD the chart rewrote, a patched one, one with both the
// blanket rule and ours, one with our rules of an older table and one lifted only all end at the
// same patched schema (the one manifests/crd-patch/ gives), a patched CRD is left alone, every
// write tests the resourceVersion it was decided on, and hostile objects are refused with a
// reason, never thrown on, never written.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fastJsonPatch, { type Operation } from 'fast-json-patch';
import { decideCrdPatchRestore, jsonEqual, type PatchOpsFor } from '../../src/rules/crd-patch-restore.ts';
import { BLANKET_TRAINER_RULE, crdPatchOps } from '../../src/rules/generate/crd-patch.ts';
import { isGeneratedRule } from '../../src/rules/marker.ts';
import { trainJobCrdObject, trainJobCrdV230Object } from '../crd/fixtures.ts';

type Obj = Record<string, any>;
const apply = (doc: unknown, ops: unknown[]): Obj =>
  fastJsonPatch.applyPatch(structuredClone(doc), ops as Operation[], true, false).newDocument as Obj;
const schemaOf = (crd: Obj): Obj => crd.spec.versions[0].schema.openAPIV3Schema;
const trainerOf = (crd: Obj): Obj => schemaOf(crd).properties.spec.properties.trainer;
const specOf = (crd: Obj): Obj => schemaOf(crd).properties.spec;
const rules = (node: Obj): Obj[] => node['x-kubernetes-validations'] ?? [];

/** The CRD as the API server sends it: metadata with a resourceVersion and a uid. */
function live(crd: unknown, rv = '41'): Obj {
  const out = structuredClone(crd) as Obj;
  out.metadata = { ...out.metadata, resourceVersion: rv, uid: 'u-1' };
  return out;
}
/** What manifests/crd-patch/ makes of an upstream CRD (the patch of record). */
const shippedPatched = (upstream: Obj): Obj => apply(upstream, crdPatchOps(schemaOf(upstream)));
/** The v2.3.0 table's patch whatever the line (the line's own rules: crd-patch-restore-line.test.ts). */
const v230Ops: PatchOpsFor = (schema, _line, version) => crdPatchOps(schema, undefined, version);

/** Decides, applies what it says to send (as the API server would), and returns the result. */
function restoreOnce(crd: Obj, opsFor: PatchOpsFor = v230Ops): Obj {
  const d = decideCrdPatchRestore(crd, opsFor);
  assert.equal(d.action, 'patch', d.reason);
  if (d.action !== 'patch') throw new Error('unreachable');
  assert.deepEqual(d.ops[0], { op: 'test', path: '/metadata/resourceVersion', value: crd.metadata.resourceVersion });
  const after = apply(crd, d.ops);
  after.metadata.resourceVersion = String(Number(crd.metadata.resourceVersion) + 1);
  return after;
}

// Parsed once (450 KB of YAML each); every test takes its own copy.
const V230 = trainJobCrdV230Object();
const MAIN = trainJobCrdObject();
const lines: { name: string; upstream: () => Obj }[] = [
  { name: 'Trainer v2.3.0', upstream: () => live(V230) },
  { name: "Trainer's main line", upstream: () => live(MAIN) },
];

describe('the CRD patch restorer decides', () => {
  for (const { name, upstream } of lines) {
    it(`${name}: the chart's CRD (blanket rule, none of ours) is patched to exactly the shipped patch's result`, () => {
      const crd = upstream();
      const after = restoreOnce(crd);
      assert.ok(jsonEqual(after.spec.versions[0], shippedPatched(crd).spec.versions[0]));
      assert.ok(!rules(trainerOf(after)).some((r) => jsonEqual(r, BLANKET_TRAINER_RULE)), 'blanket rule gone');
      assert.ok(rules(specOf(after)).every((r) => isGeneratedRule(r.rule)) && rules(specOf(after)).length > 0);
      // The scale subresource, the status field and the columns are back too.
      const version = after.spec.versions[0];
      assert.equal(version.subresources.scale.specReplicasPath, '.spec.trainer.numNodes');
      assert.ok(schemaOf(after).properties.status.properties.trainjobWebhook);
      assert.deepEqual(
        version.additionalPrinterColumns.map((c: Obj) => c.name),
        ['State', 'Nodes', 'JobSet', 'Rebuild', 'Age'],
      );
      // Only versions[0]'s schema, columns and subresources and the resourceVersion test: nothing
      // else of the CRD is written.
      const d = decideCrdPatchRestore(crd, v230Ops);
      assert.ok(
        d.action === 'patch' &&
          d.ops
            .slice(1)
            .every((op: any) =>
              /^\/spec\/versions\/0\/(schema\/|additionalPrinterColumns|subresources\/scale)/.test(op.path),
            ),
      );
    });

    it(`${name}: our rules in force but the scale parts gone (a patch of an older release) get the scale parts back`, () => {
      const patched = shippedPatched(upstream());
      const version = patched.spec.versions[0];
      delete version.subresources.scale;
      delete schemaOf(patched).properties.status.properties.trainjobWebhook;
      version.additionalPrinterColumns = version.additionalPrinterColumns.filter((c: Obj) => c.name !== 'JobSet');
      const after = restoreOnce(live(patched));
      assert.ok(jsonEqual(after.spec.versions[0], shippedPatched(upstream()).spec.versions[0]));
      assert.equal(decideCrdPatchRestore(live(after, '50'), v230Ops).action, 'keep');
    });

    it(`${name}: a patched CRD is kept (twice in a row: idempotent)`, () => {
      const patched = live(shippedPatched(upstream()));
      const d = decideCrdPatchRestore(patched, v230Ops);
      assert.equal(d.action, 'keep', d.reason);
      assert.match(d.reason, /in force \(no blanket spec\.trainer rule, \d+ rule\(s\) of this project\)/);
      const again = restoreOnce(upstream());
      assert.equal(decideCrdPatchRestore(again, v230Ops).action, 'keep');
    });
  }

  it('both the blanket rule and ours (a partial merge): the blanket rule goes, ours stay once', () => {
    const crd = live(shippedPatched(live(V230)));
    trainerOf(crd)['x-kubernetes-validations'] = [{ ...BLANKET_TRAINER_RULE }];
    const d = decideCrdPatchRestore(crd, v230Ops);
    assert.match(d.reason, /not in force \(upstream's blanket spec\.trainer rule, \d+ rule\(s\) of this project\)/);
    const after = restoreOnce(crd);
    assert.ok(jsonEqual(schemaOf(after), schemaOf(shippedPatched(live(V230)))));
  });

  it('our rules of an older table (changed, one extra, one missing) are replaced by the current ones', () => {
    const upstream = live(V230);
    const crd = live(shippedPatched(upstream));
    const spec = rules(specOf(crd));
    spec[0] = { ...spec[0], rule: `${spec[0].rule} && true` };
    spec.pop();
    spec.push({ rule: '// trainjob-webhook: retired-row\ntrue', message: 'old' });
    const after = restoreOnce(crd);
    assert.ok(jsonEqual(schemaOf(after), schemaOf(shippedPatched(upstream))));
  });

  it('the blanket rule lifted alone (no rules of ours): ours are added', () => {
    const upstream = live(V230);
    const crd = structuredClone(upstream);
    delete trainerOf(crd)['x-kubernetes-validations'];
    assert.ok(jsonEqual(schemaOf(restoreOnce(crd)), schemaOf(shippedPatched(upstream))));
  });

  it('another upstream rule at spec.trainer makes another CRD (refused, to be patched by hand); one before the blanket rule does not apply', () => {
    const upstream = live(V230);
    const extra = { rule: 'has(self.image)', message: 'image required' };
    const after = structuredClone(upstream);
    trainerOf(after)['x-kubernetes-validations'].push(extra);
    const refused = decideCrdPatchRestore(after, v230Ops);
    assert.equal(refused.action, 'refuse');
    assert.match(refused.reason, /of no Trainer line this restorer knows/);

    const before = structuredClone(upstream);
    trainerOf(before)['x-kubernetes-validations'].unshift(extra);
    const d = decideCrdPatchRestore(before, v230Ops);
    assert.equal(d.action, 'refuse');
    assert.match(d.reason, /does not apply to this CRD/);
  });

  it('the ops come from the generator it is given, called with the upstream form of the schema', () => {
    const seen: unknown[] = [];
    const marker = { rule: '// trainjob-webhook: per-line\ntrue', message: 'm' };
    const opsFor: PatchOpsFor = (schema) => {
      seen.push(schema);
      return [
        ...crdPatchOps(schema),
        { op: 'add', path: '/spec/versions/0/schema/openAPIV3Schema/x-kubernetes-validations/-', value: marker },
      ];
    };
    const crd = live(shippedPatched(live(V230)));
    const after = restoreOnce(crd, opsFor);
    assert.ok(rules(schemaOf(after)).some((r) => jsonEqual(r, marker)));
    // The generator saw the upstream form: the blanket rule back, none of ours.
    const s = seen[0] as Obj;
    assert.ok(rules(s.properties.spec.properties.trainer).some((r) => jsonEqual(r, BLANKET_TRAINER_RULE)));
    assert.ok(![...rules(s), ...rules(s.properties.spec)].some((r) => isGeneratedRule(r.rule)));
    assert.equal(decideCrdPatchRestore(after, opsFor).action, 'keep');
  });

  it('a CRD being deleted is kept as it is', () => {
    const crd = live(V230);
    crd.metadata.deletionTimestamp = '2026-01-01T00:00:00Z';
    assert.equal(decideCrdPatchRestore(crd, v230Ops).action, 'keep');
  });
});

describe('the CRD patch restorer refuses hostile objects with a reason', () => {
  const base = () => live(V230);
  const cases: { name: string; crd: () => unknown; reason: RegExp; opsFor?: PatchOpsFor }[] = [
    { name: 'null', crd: () => null, reason: /not an object/ },
    { name: 'a list', crd: () => [base()], reason: /not an object/ },
    { name: 'a string', crd: () => 'trainjobs', reason: /not an object/ },
    { name: 'metadata not an object', crd: () => ({ ...base(), metadata: 'x' }), reason: /no metadata/ },
    {
      name: 'another CRD',
      crd: () => ({ ...base(), metadata: { name: 'jobsets.jobset.x-k8s.io', resourceVersion: '1' } }),
      reason: /not trainjobs\.trainer\.kubeflow\.org \(named "jobsets/,
    },
    {
      name: 'no resourceVersion',
      crd: () => ({ ...base(), metadata: { name: 'trainjobs.trainer.kubeflow.org' } }),
      reason: /no resourceVersion/,
    },
    { name: 'versions not a list', crd: () => ({ ...base(), spec: { versions: {} } }), reason: /no spec\.versions/ },
    { name: 'no versions', crd: () => ({ ...base(), spec: { versions: [] } }), reason: /no spec\.versions/ },
    {
      name: 'a version without a schema',
      crd: () => ({ ...base(), spec: { versions: [{ name: 'v1alpha1' }] } }),
      reason: /no schema\.openAPIV3Schema/,
    },
    {
      name: 'a schema without spec.trainer',
      crd: () => {
        const c = base();
        delete schemaOf(c).properties.spec.properties.trainer;
        return c;
      },
      reason: /no spec\.trainer/,
    },
    {
      name: 'rules that are not a list',
      crd: () => {
        const c = base();
        trainerOf(c)['x-kubernetes-validations'] = { rule: 'self == oldSelf' };
        return c;
      },
      reason: /of spec\.trainer are not a list/,
    },
    {
      name: 'a rule that is not a string',
      crd: () => {
        const c = base();
        schemaOf(c)['x-kubernetes-validations'].push({ rule: 42 });
        return c;
      },
      reason: /a rule of the root is not an object with a string rule/,
    },
    {
      name: 'a generator that throws',
      crd: base,
      opsFor: () => {
        throw new Error('no patch for this line');
      },
      reason: /could not be generated for this CRD: no patch for this line/,
    },
    {
      name: 'a generator whose ops do not apply',
      crd: base,
      opsFor: () => [{ op: 'remove', path: '/spec/versions/0/schema/openAPIV3Schema/nope' }],
      reason: /does not apply to this CRD/,
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const d = decideCrdPatchRestore(c.crd(), c.opsFor ?? v230Ops);
      assert.equal(d.action, 'refuse');
      assert.match(d.reason, c.reason);
    });
  }

  it('a __proto__ key in the schema pollutes nothing and is patched like any other CRD', () => {
    const crd = JSON.parse(
      JSON.stringify(base()).replace('"properties":{', '"properties":{"__proto__":{"x":1},'),
    ) as Obj;
    const d = decideCrdPatchRestore(crd, v230Ops);
    assert.equal(({} as Obj).x, undefined);
    assert.ok(['patch', 'refuse'].includes(d.action), d.reason);
  });

  it('never throws on mangled CRDs (seeded: values replaced, keys dropped at random)', () => {
    let seed = 17;
    const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const junk = [null, 0, 'x', [], {}, true, [{ rule: 1 }]];
    const upstream = base();
    for (let i = 0; i < 60; i++) {
      const crd = structuredClone(upstream);
      // Walk down a random path of the schema's rule-bearing part and mangle one node.
      let node: any = rand() < 0.5 ? schemaOf(crd) : trainerOf(crd);
      for (let depth = 0; depth < 4 && node && typeof node === 'object'; depth++) {
        const keys = Object.keys(node);
        if (keys.length === 0) break;
        const key = keys[Math.floor(rand() * keys.length)];
        if (rand() < 0.3) {
          if (rand() < 0.5) delete node[key];
          else node[key] = junk[Math.floor(rand() * junk.length)];
          break;
        }
        node = node[key];
      }
      const d = decideCrdPatchRestore(crd, v230Ops);
      assert.ok(['keep', 'patch', 'refuse'].includes(d.action));
      assert.equal(typeof d.reason, 'string');
    }
  });
});
