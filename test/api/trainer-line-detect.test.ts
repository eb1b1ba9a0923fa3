// The Trainer line found from a TrainJob CRD by feature: each vendored CRD, the same CRD patched,
// lifted or restored by this project's patches, CRDs of no known line, and hostile objects (no
// schema, wrong types, huge, deep): always an answer, never an exception.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import {
  detectTrainerLine,
  featuresOf,
  LINE_FEATURES,
  schemaFingerprint,
  trainJobSchemaOf,
} from '../../src/api/trainer-line-detect.ts';
import { KNOWN_TRAINER_LINES, TRAINER_LINES, type KnownTrainerLine } from '../../src/api/trainer-line.ts';
import { applyCrdPatch } from '../../src/rules/crd-policy.ts';
import { LINE_CRDS, lineDirs, projectRoot } from '../../hack/generate.ts';

const read = (file: string): unknown => parse(readFileSync(path.join(projectRoot, file), 'utf8'));
const crdOf = (line: KnownTrainerLine) => read(LINE_CRDS[line]) as Record<string, any>;
/** The patch docs/versions.md says to use for a line (its own, or the shipped v2.3.0 one). */
const patchFile = (line: KnownTrainerLine, kind: 'patch' | 'restore') => {
  const own = path.join(lineDirs(line).crdPatch, `trainjob-crd-${kind}.yaml`);
  try {
    return read(own);
  } catch {
    return read(`manifests/crd-patch/trainjob-crd-${kind}.yaml`);
  }
};
const schema = (crd: Record<string, any>) => crd.spec.versions[0].schema.openAPIV3Schema;

describe('each vendored TrainJob CRD is its own line', () => {
  for (const line of KNOWN_TRAINER_LINES) {
    it(`${line}: found, with the features LINE_FEATURES records`, () => {
      const d = detectTrainerLine(crdOf(line));
      assert.equal(d.line.id, line, d.summary);
      assert.deepEqual(featuresOf(trainJobSchemaOf(crdOf(line))), LINE_FEATURES[line]);
      assert.equal(d.line, TRAINER_LINES[line]);
    });
    it(`${line}: patched, restored after the patch, and lifted (VAP mode): still ${line}`, () => {
      const patched = applyCrdPatch(crdOf(line), patchFile(line, 'patch'));
      assert.equal(detectTrainerLine(patched).line.id, line);
      assert.equal(detectTrainerLine(applyCrdPatch(patched, patchFile(line, 'restore'))).line.id, line);
      assert.equal(
        detectTrainerLine(applyCrdPatch(crdOf(line), read('manifests/vap/trainjob-crd-lift.yaml'))).line.id,
        line,
      );
    });
  }
  it('the three are told apart: three fingerprints, three feature sets', () => {
    const prints = KNOWN_TRAINER_LINES.map((l) => detectTrainerLine(crdOf(l)).fingerprint);
    assert.equal(new Set(prints).size, 3);
    assert.equal(new Set(KNOWN_TRAINER_LINES.map((l) => JSON.stringify(LINE_FEATURES[l]))).size, 3);
  });
  it('descriptions and key order do not matter', () => {
    const crd = crdOf('v2.3.0');
    const s = schema(crd);
    s.properties.spec.properties.trainer.description = 'rewritten';
    s.properties = Object.fromEntries(Object.entries(s.properties).reverse());
    assert.equal(detectTrainerLine(crd).line.id, 'v2.3.0');
  });
  it('the rules per line: Failed terminal only on main; standalone builds on v2.3.0 and main', () => {
    assert.deepEqual(
      KNOWN_TRAINER_LINES.map((l) => [l, TRAINER_LINES[l].failedIsTerminal, TRAINER_LINES[l].standaloneBuilds]),
      [
        ['v2.2.1', false, false],
        ['v2.3.0', false, true],
        ['main-8c0f5059', true, true],
      ],
    );
  });
});

describe('a CRD of no known line: unknown, the careful rules, and what it resembles', () => {
  const careful = (d: ReturnType<typeof detectTrainerLine>) => {
    assert.equal(d.line.id, 'unknown');
    assert.equal(d.line.failedIsTerminal, true);
    assert.equal(d.line.standaloneBuilds, false);
    assert.match(d.summary, /most careful rules/);
  };
  it("main's features and a field more under spec.trainer (a later Trainer): unknown, resembles main", () => {
    const crd = crdOf('main-8c0f5059');
    schema(crd).properties.spec.properties.trainer.properties.elastic = { type: 'boolean' };
    const d = detectTrainerLine(crd);
    careful(d);
    assert.equal(d.resembles, 'main-8c0f5059');
    assert.match(d.summary, /has the features of Trainer's main line/);
  });
  it('v2.3.0 with numNodes minimum: 0 alone (half of #3809): unknown, resembles none', () => {
    const crd = crdOf('v2.3.0');
    schema(crd).properties.spec.properties.trainer.properties.numNodes.minimum = 0;
    const d = detectTrainerLine(crd);
    careful(d);
    assert.equal(d.resembles, undefined);
    assert.match(d.summary, /features of none/);
  });
  it('an upstream rule changed at spec.trainer (not the blanket one): unknown', () => {
    const crd = crdOf('v2.3.0');
    schema(crd).properties.spec.properties.trainer['x-kubernetes-validations'].push({ rule: 'self.numNodes < 100' });
    careful(detectTrainerLine(crd));
  });
});

describe('hostile CRD objects: an answer, never an exception', () => {
  const deep = (n: number) => {
    let node: Record<string, unknown> = { type: 'object' };
    for (let i = 0; i < n; i++) node = { type: 'object', properties: { a: node } };
    return node;
  };
  const wide = (n: number) => ({
    type: 'object',
    properties: Object.fromEntries(Array.from({ length: n }, (_, i) => [`f${i}`, { type: 'string' }])),
  });
  const withSchema = (s: unknown) => ({ spec: { versions: [{ name: 'v1alpha1', schema: { openAPIV3Schema: s } }] } });
  const cases: [string, unknown, RegExp][] = [
    ['null', null, /no readable openAPIV3Schema/],
    ['a number', 42, /no readable openAPIV3Schema/],
    ['an empty object', {}, /no readable openAPIV3Schema/],
    ['versions a string', { spec: { versions: 'v1alpha1' } }, /no readable openAPIV3Schema/],
    ['versions of nulls', { spec: { versions: [null, 7] } }, /no readable openAPIV3Schema/],
    ['a schema that is a list', withSchema([1, 2]), /no readable openAPIV3Schema/],
    [
      'properties a list, rules a string, minimum a string',
      withSchema({
        properties: { spec: { properties: [{ trainer: 1 }], 'x-kubernetes-validations': 'self == oldSelf' } },
        'x-kubernetes-validations': [null, 3, { rule: 7 }],
      }),
      /features of none/,
    ],
    [
      'numNodes minimum as a string',
      withSchema({
        properties: { spec: { properties: { trainer: { properties: { numNodes: { minimum: '0' } } } } } },
      }),
      /features of none/,
    ],
    ['nested 1,000 deep', withSchema(deep(1000)), /nests deeper than/],
    ['500,000 properties', withSchema(wide(500_000)), /more than 400000 nodes/],
  ];
  for (const [name, crd, summary] of cases) {
    it(name, () => {
      const d = detectTrainerLine(crd);
      assert.equal(d.line.id, 'unknown');
      assert.match(d.summary, summary);
    });
  }
  it('a bigint in the schema (the lossless parser) fingerprints without throwing', () => {
    assert.equal(schemaFingerprint({ maximum: 2n ** 70n }).ok, true);
  });
  it('a huge but bounded CRD (the real one, ~25k nodes) takes well under a second', () => {
    // The CRD is read and parsed before the clock starts (the YAML parse is most of a second on a
    // loaded machine, and not what is timed), and the clock is this process's CPU time: a machine
    // busy with other work stretches wall time, not the work detection does.
    const crd = crdOf('v2.3.0');
    const started = process.cpuUsage();
    detectTrainerLine(crd);
    const { user, system } = process.cpuUsage(started);
    assert.ok((user + system) / 1000 < 1000, `${(user + system) / 1000} ms of CPU`);
  });
});
