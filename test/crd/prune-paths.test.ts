// The unknown-field paths pruning reports (spec.a[0].b), built only when a field is unknown:
// empty keys, map values, list items and lists of lists, each the path a recorder that builds
// every path eagerly writes (building them lazily must not change one).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compileCrdSchema } from '../../src/crd/index.ts';

const crd = compileCrdSchema({
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'things.example.com' },
  spec: {
    group: 'example.com',
    names: { kind: 'Thing', plural: 'things', singular: 'thing', listKind: 'ThingList' },
    scope: 'Namespaced',
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              spec: {
                type: 'object',
                properties: {
                  m: {
                    type: 'object',
                    additionalProperties: { type: 'object', properties: { a: { type: 'string' } } },
                  },
                  l: {
                    type: 'array',
                    items: {
                      type: 'object',
                      properties: {
                        a: { type: 'string' },
                        l: { type: 'array', items: { type: 'object', properties: { a: { type: 'string' } } } },
                      },
                    },
                  },
                },
              },
            },
          },
        },
      },
    ],
  },
});

const thing = (spec: unknown, extra: Record<string, unknown> = {}) => ({
  apiVersion: 'example.com/v1',
  kind: 'Thing',
  metadata: { name: 't' },
  spec,
  ...extra,
});

describe('unknown field paths', () => {
  const cases: [string, unknown, Record<string, unknown>, string[]][] = [
    ['an empty map key', { m: { '': { zz: 1, a: 'x' } } }, {}, ['spec.m..zz']],
    ['an empty key at the root', {}, { '': 1 }, ['']],
    ['an empty key in spec', { '': 1 }, {}, ['spec.']],
    [
      'list items and nested lists',
      { l: [{ a: 'x' }, { zz: 1, l: [{ a: 'y' }, { yy: 2 }] }] },
      {},
      ['spec.l[1].l[1].yy', 'spec.l[1].zz'],
    ],
    [
      'siblings after a deep unknown field',
      { l: [{ l: [{ q: 1 }] }], m: { k: { r: 1 } }, s: 1 },
      {},
      ['spec.l[0].l[0].q', 'spec.m.k.r', 'spec.s'],
    ],
  ];
  for (const [name, spec, extra, want] of cases)
    it(name, () => assert.deepEqual(crd.prune(thing(spec, extra)).pruned, want));
});
