// Every expected message below was compared with kube-apiserver v1.35.8's answer to the same
// object (dry-run create against the same CRD); bounds and enums are read from the CRD files.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compileCrdSchema, validateSchema } from '../../src/crd/index.ts';
import { messages, schemaAt, trainJob, trainJobCrd, widgetCrdObject } from './fixtures.ts';

const crd = trainJobCrd();
const bound = (path: string, keyword: string): number => {
  const v = schemaAt(crd.schema, path)[keyword];
  assert.equal(typeof v, 'number', `the CRD has ${keyword} at ${path}`);
  return v as number;
};

/** What the webhook would check: the object as the API server's decoder leaves it. */
const check = (obj: unknown): string[] => messages(crd.validate(crd.prepareForCreate(crd.decode(obj).object)));
const base = { runtimeRef: { name: 'torch' } };
const withTrainer = (trainer: Record<string, unknown>, more: Record<string, unknown> = {}) =>
  trainJob({ ...base, ...more, trainer });

describe('validate: the TrainJob CRD, one error type at a time', () => {
  const numNodesMin = bound('spec.trainer.numNodes', 'minimum');
  const imageMax = bound('spec.trainer.image', 'maxLength');
  const commandMax = bound('spec.trainer.command', 'maxItems');
  const nameMin = bound('spec.runtimeRef.name', 'minLength');

  const cases: Array<[string, unknown, string[]]> = [
    [
      'a valid job',
      withTrainer({ numNodes: 2, image: 'img:1', command: ['torchrun'], env: [{ name: 'A', value: '1' }] }),
      [],
    ],
    [
      'minimum',
      withTrainer({ numNodes: numNodesMin - 1 }),
      [
        `spec.trainer.numNodes: Invalid value: ${numNodesMin - 1}: spec.trainer.numNodes in body should be greater than or equal to ${numNodesMin}`,
      ],
    ],
    ['required', trainJob({ runtimeRef: {} }), ['spec.runtimeRef.name: Required value']],
    [
      'maxLength (Go counts runes, says bytes)',
      withTrainer({ image: 'é'.repeat(imageMax + 1) }),
      [`spec.trainer.image: Too long: may not be more than ${imageMax} bytes`],
    ],
    ['maxLength not exceeded by multi-byte runes', withTrainer({ image: 'é'.repeat(imageMax) }), []],
    [
      'minLength',
      trainJob({ runtimeRef: { name: '' } }),
      [
        `spec.runtimeRef.name: Invalid value: "": spec.runtimeRef.name in body should be at least ${nameMin} chars long`,
      ],
    ],
    [
      'maxItems',
      withTrainer({ command: Array.from({ length: commandMax + 1 }, () => 'a') }),
      [`spec.trainer.command: Too many: ${commandMax + 1}: must have at most ${commandMax} items`],
    ],
    [
      // The API server lists these in Go map order (random); here they follow the schema's order.
      'types, named the way Go sees the value',
      withTrainer({ numNodes: 'abc', numProcPerNode: 1.5, image: 5, command: 'x', args: [1, null] }),
      [
        'spec.trainer.args[0]: Invalid value: "integer": spec.trainer.args[0] in body must be of type string: "integer"',
        'spec.trainer.args[1]: Invalid value: "null": spec.trainer.args[1] in body must be of type string: "null"',
        'spec.trainer.command: Invalid value: "string": spec.trainer.command in body must be of type array: "string"',
        'spec.trainer.image: Invalid value: "integer": spec.trainer.image in body must be of type string: "integer"',
        'spec.trainer.numNodes: Invalid value: "string": spec.trainer.numNodes in body must be of type integer: "string"',
        'spec.trainer.numProcPerNode: Invalid value: "number": spec.trainer.numProcPerNode in body must be of type integer: "number"',
      ],
    ],
    [
      'an object where an object belongs',
      trainJob([1, 2] as never),
      ['spec: Invalid value: "array": spec in body must be of type object: "array"'],
    ],
    [
      'list-type map: a repeated key',
      withTrainer({ env: [{ name: 'A' }, { name: 'B' }, { name: 'A', value: 'x' }, { name: 'A' }] }),
      ['spec.trainer.env[2]: Duplicate value: {"name":"A"}'],
    ],
    [
      'date-time format (Go also rejects February 30th; a number names its Go type)',
      trainJob({
        ...base,
        runtimePatches: [
          { manager: 'a', time: '2024-02-30T10:00:00Z' },
          { manager: 'b', time: 5 },
          { manager: 'c', time: '2024-02-29t10:00:00.5+01:00' },
          { manager: 'd', time: 'x' },
        ],
      }),
      [
        'spec.runtimePatches[0].time: Invalid value: "2024-02-30T10:00:00Z": spec.runtimePatches[0].time in body must be of type date-time: "2024-02-30T10:00:00Z"',
        'spec.runtimePatches[1].time: Invalid value: "int64": spec.runtimePatches[1].time in body must be of type date-time: "int64"',
        'spec.runtimePatches[3].time: Invalid value: "x": spec.runtimePatches[3].time in body must be of type date-time: "x"',
      ],
    ],
    [
      'kind and apiVersion must be the CRD’s',
      { ...trainJob(base), kind: 'Other', apiVersion: 'x/v1' },
      [
        'kind: Invalid value: "Other": must be TrainJob',
        `apiVersion: Invalid value: "x/v1": must be ${crd.info.apiVersion}`,
      ],
    ],
  ];
  for (const [name, obj, expected] of cases) {
    it(name, () => assert.deepEqual(check(obj), expected));
  }
});

describe('validate: x-kubernetes-int-or-string (resource quantities)', () => {
  const pattern = schemaAt(crd.schema, 'spec.trainer.resourcesPerNode.limits.[*]').pattern as string;
  const limits = (l: Record<string, unknown>) => withTrainer({ resourcesPerNode: { limits: l } });

  it('accepts integers and quantity strings', () => {
    assert.deepEqual(check(limits({ cpu: '500m', memory: '1Gi', 'nvidia.com/gpu': 2 })), []);
  });

  it('a string must match the pattern (the path keeps the key dotted, as kube-openapi writes it)', () => {
    assert.deepEqual(check(limits({ 'example.com/x': 'abc' })), [
      `spec.trainer.resourcesPerNode.limits.example.com/x: Invalid value: "abc": spec.trainer.resourcesPerNode.limits.example.com/x in body should match '${pattern}'`,
    ]);
  });

  for (const [value, goType] of [
    [true, 'boolean'],
    [1.5, 'number'],
    [{ a: 1 }, 'object'],
  ] as const) {
    it(`${JSON.stringify(value)}: the type error, the anyOf error, and the first branch's error`, () => {
      const p = 'spec.trainer.resourcesPerNode.limits.cpu';
      assert.deepEqual(check(limits({ cpu: value })), [
        `${p}: Invalid value: "${goType}": ${p} in body must be of type integer,string: "${goType}"`,
        `<nil>: Invalid value: "": "${p}" must validate at least one schema (anyOf)`,
        `${p}: Invalid value: "${goType}": ${p} in body must be of type integer: "${goType}"`,
      ]);
    });
  }
});

describe('validate: int64 values beyond 2^53 are BigInt and compare exactly', () => {
  const deadlineMin = bound('spec.activeDeadlineSeconds', 'minimum');
  const deadline = (v: unknown) => trainJob({ ...base, activeDeadlineSeconds: v });

  it('2^63 - 1 is a valid int64', () => assert.deepEqual(check(deadline(2n ** 63n - 1n)), []));
  it('2^53 + 1 is exact, not rounded', () => assert.deepEqual(check(deadline(2n ** 53n + 1n)), []));
  it('2^63 does not fit int64: Go decodes it as a float', () => {
    assert.deepEqual(check(deadline(2n ** 63n)), [
      'spec.activeDeadlineSeconds: Invalid value: "number": spec.activeDeadlineSeconds in body must be of type integer: "number"',
    ]);
  });
  it('-(2^53 + 1) fails the minimum with its exact value', () => {
    assert.deepEqual(check(deadline(-(2n ** 53n) - 1n)), [
      `spec.activeDeadlineSeconds: Invalid value: -9007199254740993: spec.activeDeadlineSeconds in body should be greater than or equal to ${deadlineMin}`,
    ]);
  });
  it('a fraction is a float: a type error and the minimum compared as a float', () => {
    assert.deepEqual(check(deadline(0.5)), [
      'spec.activeDeadlineSeconds: Invalid value: "number": spec.activeDeadlineSeconds in body must be of type integer: "number"',
      `spec.activeDeadlineSeconds: Invalid value: 0.5: spec.activeDeadlineSeconds in body should be greater than or equal to ${deadlineMin}`,
    ]);
  });
  it('Go treats a float within 1e-9 (relative) of an integer as an integer', () => {
    assert.deepEqual(check(withTrainer({ numNodes: 1000000000.5 })), []);
  });
});

describe('validate: nulls', () => {
  it('a null the schema cannot hold is dropped before validation (or defaulted)', () => {
    assert.deepEqual(
      check(trainJob({ runtimeRef: { name: 'torch', kind: null }, suspend: null, trainer: { numNodes: null } })),
      [],
    );
  });
  it('a null inside a list is a type error', () => {
    assert.deepEqual(check(withTrainer({ command: [null, 'a'] })), [
      'spec.trainer.command[0]: Invalid value: "null": spec.trainer.command[0] in body must be of type string: "null"',
    ]);
  });
});

describe('validate: enums, sets, compound map keys, preserve-unknown-fields (a test CRD)', () => {
  const widget = compileCrdSchema(widgetCrdObject(true));
  const w = (spec: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
    apiVersion: 'example.com/v1',
    kind: 'Widget',
    metadata: { name: 'w', namespace: 'd' },
    spec,
    ...extra,
  });
  const wcheck = (obj: unknown): string[] =>
    messages(widget.validate(widget.prepareForCreate(widget.decode(obj).object)));
  const modes = (schemaAt(widget.schema, 'spec.mode').enum as string[]).map((m) => `"${m}"`).join(', ');

  const cases: Array<[string, unknown, string[]]> = [
    ['enum', w({ mode: 'other' }), [`spec.mode: Unsupported value: "other": supported values: ${modes}`]],
    [
      'set duplicates and map-list items that are not objects, after the schema errors',
      w({ tags: ['a', 'b', 'a', 'a'], items: [{ name: 'a' }, { note: 'x' }, 7] }),
      [
        'spec.items[1].name: Required value',
        'spec.items[2]: Invalid value: "integer": spec.items[2] in body must be of type object: "integer"',
        'spec.tags: Too many: 4: must have at most 2 items',
        'spec.tags[2]: Duplicate value: "a"',
        'spec.items[2]: Invalid value: 7: must be an object for an array of list-type map',
      ],
    ],
    [
      'compound map keys: the default fills the key, the second occurrence is reported',
      w({ ports: [{ port: 80, protocol: 'TCP' }, { port: 80 }, { port: 80 }] }),
      ['spec.ports[1]: Duplicate value: {"port":80,"protocol":"TCP"}'],
    ],
    [
      'additionalProperties values are validated with dotted paths',
      w({ labels: { a: 'long', b: 1 } }),
      [
        'spec.labels.a: Too long: may not be more than 3 bytes',
        'spec.labels.b: Invalid value: "integer": spec.labels.b in body must be of type string: "integer"',
      ],
    ],
    [
      'known fields under preserve-unknown-fields are still validated',
      w({ free: { limit: 9, other: 'kept' } }),
      ['spec.free.limit: Invalid value: 9: spec.free.limit in body should be less than or equal to 5'],
    ],
    [
      'exclusiveMaximum, float bound printed like Go',
      w({ ratio: 1.5 }),
      ['spec.ratio: Invalid value: 1.5: spec.ratio in body should be less than 1.5'],
    ],
    ['nullable allows null', w({ ratio: null }), []],
    [
      'embedded resources: apiVersion/kind required, metadata validated with path-segment names',
      w({ template: { metadata: { name: 'a/b' } } }),
      [
        'spec.template.apiVersion: Required value',
        'spec.template.kind: Required value',
        'spec.template.metadata.name: Invalid value: "a/b": may not contain \'/\'',
      ],
    ],
  ];
  for (const [name, obj, expected] of cases) {
    it(name, () => assert.deepEqual(wcheck(obj), expected));
  }

  it('status is dropped on create (status subresource) but its schema applies when validated directly', () => {
    const obj = w({}, { status: { phase: 'Z' } });
    assert.deepEqual(wcheck(obj), []);
    const phases = (schemaAt(widget.schema, 'status.phase').enum as string[]).map((m) => `"${m}"`).join(', ');
    assert.deepEqual(messages(validateSchema(widget.root, obj)), [
      `status.phase: Unsupported value: "Z": supported values: ${phases}`,
    ]);
  });
});
