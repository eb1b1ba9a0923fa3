import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CrdError, compileCrdSchema, loadCrd } from '../../src/crd/index.ts';
import { deepClone } from '../../src/crd/values.ts';
import { trainJobCrdObject, trainJobCrdV230Object, widgetCrdObject } from './fixtures.ts';

type Crd = {
  spec: { group: string; names: { kind: string; plural: string }; versions: Array<Record<string, unknown>> };
};

describe('loadCrd: the upstream TrainJob CRDs', () => {
  for (const [name, read] of [
    ['current', trainJobCrdObject],
    ['v2.3.0', trainJobCrdV230Object],
  ] as const) {
    it(`reads group, kind, plural and the served storage version (${name})`, () => {
      const raw = read() as Crd;
      const storage = raw.spec.versions.find((v) => v.storage === true)!;
      const info = loadCrd(raw);
      assert.equal(info.group, raw.spec.group);
      assert.equal(info.kind, raw.spec.names.kind);
      assert.equal(info.plural, raw.spec.names.plural);
      assert.equal(info.version, storage.name);
      assert.equal(info.apiVersion, `${raw.spec.group}/${String(storage.name)}`);
      assert.equal(info.namespaced, true);
      assert.equal(info.statusSubresource, true);
      assert.deepEqual(info.schema, (storage.schema as { openAPIV3Schema: unknown }).openAPIV3Schema);
    });
  }

  it('keeps a private copy of the schema (later edits of the input do not leak in)', () => {
    const raw = trainJobCrdObject() as Crd;
    const info = loadCrd(raw);
    (raw.spec.versions[0].schema as { openAPIV3Schema: { type: string } }).openAPIV3Schema.type = 'string';
    assert.equal(info.schema.type, 'object');
  });

  it('picks a named served version, and refuses one that is missing', () => {
    assert.equal(loadCrd(trainJobCrdObject(), { version: 'v1alpha1' }).version, 'v1alpha1');
    assert.throws(() => loadCrd(trainJobCrdObject(), { version: 'v9' }), /no version "v9"/);
  });
});

/** A broken copy of the widget CRD. */
function broken(edit: (crd: Record<string, any>) => void): unknown {
  const crd = deepClone(widgetCrdObject(false)) as Record<string, any>;
  edit(crd);
  return crd;
}

const schemaOf = (crd: Record<string, any>): Record<string, any> => crd.spec.versions[0].schema.openAPIV3Schema;

describe('loadCrd: malformed or hostile input is a CrdError with a clear message, never a crash', () => {
  const cases: Array<[string, unknown, RegExp]> = [
    ['null', null, /the CRD must be an object, got null/],
    ['a string', 'CustomResourceDefinition', /the CRD must be an object, got string/],
    ['an array', [widgetCrdObject(false)], /must be an object, got array/],
    ['a BigInt', 10n, /must be an object, got int/],
    ['wrong kind', broken((c) => (c.kind = 'Deployment')), /kind must be CustomResourceDefinition, got "Deployment"/],
    [
      'v1beta1',
      broken((c) => (c.apiVersion = 'apiextensions.k8s.io/v1beta1')),
      /apiVersion must be apiextensions.k8s.io\/v1/,
    ],
    ['no spec', broken((c) => delete c.spec), /spec must be an object/],
    ['no group', broken((c) => delete c.spec.group), /spec.group must be a non-empty string/],
    ['names not an object', broken((c) => (c.spec.names = 'widgets')), /spec.names must be an object/],
    ['bad scope', broken((c) => (c.spec.scope = 'Galaxy')), /spec.scope must be Namespaced or Cluster/],
    ['no versions', broken((c) => (c.spec.versions = [])), /spec.versions must be a non-empty list/],
    ['versions not a list', broken((c) => (c.spec.versions = { v1: {} })), /spec.versions must be a non-empty list/],
    [
      'served not a boolean',
      broken((c) => (c.spec.versions[0].served = 'yes')),
      /spec.versions\[0\].served must be a boolean/,
    ],
    [
      'no storage version',
      broken((c) => (c.spec.versions[0].storage = false)),
      /exactly one version must be the storage version, found 0/,
    ],
    ['storage not served', broken((c) => (c.spec.versions[0].served = false)), /storage version "v1" is not served/],
    ['schema missing', broken((c) => delete c.spec.versions[0].schema), /spec.versions\[0\].schema must be an object/],
    [
      'schema not an object',
      broken((c) => (c.spec.versions[0].schema.openAPIV3Schema = [])),
      /openAPIV3Schema must be an object, got array/,
    ],
    ['root not an object type', broken((c) => (schemaOf(c).type = 'string')), /openAPIV3Schema.type must be object/],
    [
      'preserveUnknownFields: true',
      broken((c) => (c.spec.preserveUnknownFields = true)),
      /preserveUnknownFields must be false/,
    ],
    [
      'unknown type',
      broken((c) => (schemaOf(c).properties.spec.properties.count.type = 'int')),
      /properties\[spec\]\.properties\[count\]: type "int" is not one of/,
    ],
    [
      'properties not an object',
      broken((c) => (schemaOf(c).properties.spec.properties = ['count'])),
      /properties must be an object/,
    ],
    [
      'property schema not an object',
      broken((c) => (schemaOf(c).properties.spec.properties.count = 7)),
      /properties\[count\]: schema must be an object, got int/,
    ],
    [
      'items as a list',
      broken((c) => (schemaOf(c).properties.spec.properties.cmd.items = [{ type: 'string' }])),
      /items must be a single schema/,
    ],
    ['$ref', broken((c) => (schemaOf(c).properties.spec.properties.count = { $ref: '#/x' })), /\$ref is not allowed/],
    [
      'bad list type',
      broken((c) => (schemaOf(c).properties.spec.properties.cmd['x-kubernetes-list-type'] = 'bag')),
      /x-kubernetes-list-type "bag"/,
    ],
    [
      'map list without keys',
      broken((c) => delete schemaOf(c).properties.spec.properties.items['x-kubernetes-list-map-keys']),
      /needs x-kubernetes-list-map-keys/,
    ],
    [
      'maxLength negative',
      broken((c) => (schemaOf(c).properties.spec.properties.mode.maxLength = -1)),
      /maxLength must be a non-negative integer/,
    ],
    [
      'minimum a string',
      broken((c) => (schemaOf(c).properties.spec.properties.count.minimum = '0')),
      /minimum must be a number/,
    ],
    [
      'pattern not RE2',
      broken((c) => (schemaOf(c).properties.spec.properties.mode.pattern = '^(?=a)')),
      /pattern "\^\(\?=a\)" is not a valid RE2 expression/,
    ],
    [
      'required not strings',
      broken((c) => (schemaOf(c).properties.spec.required = [1])),
      /required must be a list of strings/,
    ],
    [
      'rule without text',
      broken((c) => (schemaOf(c)['x-kubernetes-validations'] = [{ message: 'm' }])),
      /x-kubernetes-validations\[0\]: rule is required/,
    ],
  ];
  for (const [name, input, message] of cases) {
    it(name, () => {
      assert.throws(
        () => loadCrd(input),
        (err: unknown) => err instanceof CrdError && message.test(err.message),
      );
    });
  }

  it('a schema nested thousands of levels deep is refused, not a stack overflow', () => {
    const crd = deepClone(widgetCrdObject(false)) as Record<string, any>;
    let node: Record<string, unknown> = schemaOf(crd);
    for (let i = 0; i < 5000; i++) {
      const child = { type: 'object', properties: {} };
      node.properties = { x: child };
      node = child;
    }
    assert.throws(() => loadCrd(crd), /nests deeper than/);
  });

  it('compileCrdSchema reports the same CrdError', () => {
    assert.throws(() => compileCrdSchema({ kind: 'CustomResourceDefinition' }), CrdError);
  });
});
