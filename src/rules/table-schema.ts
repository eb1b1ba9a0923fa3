// The typing the table needs when no CRD is loaded (offline, no --crd): which lists are keyed
// (order-free equality), which fields are integers, and the status conditions the finished-job row
// reads. With a CRD, its own schema is used.
import type { CelSchema } from '../cel/values.ts';

const keyedByName = (): CelSchema => ({
  type: 'array',
  'x-kubernetes-list-type': 'map',
  'x-kubernetes-list-map-keys': ['name'],
  items: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
});

const quantities = (): CelSchema => ({ type: 'object', additionalProperties: { 'x-kubernetes-int-or-string': true } });

export const TABLE_SCHEMA: CelSchema = {
  type: 'object',
  properties: {
    spec: {
      type: 'object',
      properties: {
        suspend: { type: 'boolean' },
        activeDeadlineSeconds: { type: 'integer' },
        managedBy: { type: 'string' },
        runtimeRef: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
        initializer: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
        runtimePatches: {
          type: 'array',
          'x-kubernetes-list-type': 'map',
          'x-kubernetes-list-map-keys': ['manager'],
          items: {
            type: 'object',
            'x-kubernetes-preserve-unknown-fields': true,
            properties: { manager: { type: 'string' } },
          },
        },
        trainer: {
          type: 'object',
          'x-kubernetes-preserve-unknown-fields': true,
          properties: {
            numNodes: { type: 'integer' },
            numProcPerNode: { type: 'integer' },
            env: keyedByName(),
            command: { type: 'array', items: { type: 'string' } },
            args: { type: 'array', items: { type: 'string' } },
            resourcesPerNode: {
              type: 'object',
              properties: { limits: quantities(), requests: quantities(), claims: keyedByName() },
            },
          },
        },
      },
    },
    status: {
      type: 'object',
      'x-kubernetes-preserve-unknown-fields': true,
      properties: {
        conditions: {
          type: 'array',
          'x-kubernetes-list-type': 'map',
          'x-kubernetes-list-map-keys': ['type'],
          items: {
            type: 'object',
            'x-kubernetes-preserve-unknown-fields': true,
            properties: { type: { type: 'string' }, status: { type: 'string' }, reason: { type: 'string' } },
          },
        },
      },
    },
  },
};
