// Shared test data for src/crd: the upstream CRDs (vendored in upstream/, see upstream/SOURCES.md)
// and helpers that read expectations out of them, so no test hard-codes a bound or a default.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { compileCrdSchema, type CompiledCrdSchema, type JSONSchemaProps } from '../../src/crd/index.ts';
import { errorString, type FieldError } from '../../src/field/errors.ts';

export const projectRoot = path.resolve(import.meta.dirname, '../..');
export const upstreamCrdPath = (...parts: string[]): string => path.resolve(projectRoot, 'upstream/crds', ...parts);

export const readYaml = (file: string): unknown => parse(readFileSync(file, 'utf8'));

/** The current upstream TrainJob CRD and Trainer v2.3.0's (which lacks the newer bounds). */
export const trainJobCrdObject = (): unknown => readYaml(upstreamCrdPath('trainer.kubeflow.org_trainjobs.yaml'));
export const trainJobCrdV230Object = (): unknown =>
  readYaml(upstreamCrdPath('trainer-v2.3.0', 'trainer.kubeflow.org_trainjobs.yaml'));

let current: CompiledCrdSchema | undefined;
let v230: CompiledCrdSchema | undefined;
export const trainJobCrd = (): CompiledCrdSchema => (current ??= compileCrdSchema(trainJobCrdObject()));
export const trainJobCrdV230 = (): CompiledCrdSchema => (v230 ??= compileCrdSchema(trainJobCrdV230Object()));

/** The raw schema at a dotted path (`spec.trainer.numNodes`; `[*]` for items/additionalProperties). */
export function schemaAt(root: JSONSchemaProps, dotted: string): JSONSchemaProps {
  let s: JSONSchemaProps | undefined = root;
  for (const part of dotted.split('.')) {
    if (part === '[*]')
      s = s?.items ?? (typeof s?.additionalProperties === 'object' ? s.additionalProperties : undefined);
    else s = s?.properties?.[part];
    if (!s) throw new Error(`no schema at ${dotted}`);
  }
  return s!;
}

/** A TrainJob object of the CRD's apiVersion/kind around the given spec. */
export function trainJob(spec: Record<string, unknown>, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const crd = trainJobCrd();
  return {
    apiVersion: crd.info.apiVersion,
    kind: crd.info.kind,
    metadata: { name: 'job', namespace: 'default' },
    spec,
    ...extra,
  };
}

export const messages = (errors: readonly FieldError[]): string[] => errors.map(errorString);

/**
 * A small CRD for features the upstream CRDs do not use (preserve-unknown-fields, embedded
 * resources, set lists, enums, nullable), written the way controller-gen writes them. Names
 * avoid YAML 1.1 booleans (y, n, on, off): kubectl would read them as true/false.
 */
// eslint-disable-next-line max-lines-per-function -- one object literal: the test CRD's schema written out
export function widgetCrdObject(tight: boolean): unknown {
  const lim = (extra: Record<string, unknown>): Record<string, unknown> => (tight ? extra : {});
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'widgets.example.com' },
    spec: {
      group: 'example.com',
      scope: 'Namespaced',
      names: { kind: 'Widget', plural: 'widgets', singular: 'widget', listKind: 'WidgetList' },
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          subresources: { status: {} },
          schema: {
            openAPIV3Schema: {
              type: 'object',
              properties: {
                apiVersion: { type: 'string' },
                kind: { type: 'string' },
                metadata: { type: 'object' },
                status: { type: 'object', properties: { phase: { type: 'string', enum: ['A', 'B'] } } },
                spec: {
                  type: 'object',
                  properties: {
                    items: {
                      type: 'array',
                      'x-kubernetes-list-type': 'map',
                      'x-kubernetes-list-map-keys': ['name'],
                      items: {
                        type: 'object',
                        required: ['name'],
                        properties: {
                          name: { type: 'string' },
                          size: { type: 'integer', ...lim({ minimum: 0 }) },
                          note: { type: 'string', default: 'none' },
                        },
                      },
                    },
                    ports: {
                      type: 'array',
                      'x-kubernetes-list-type': 'map',
                      'x-kubernetes-list-map-keys': ['port', 'protocol'],
                      items: {
                        type: 'object',
                        required: ['port'],
                        properties: { port: { type: 'integer' }, protocol: { type: 'string', default: 'TCP' } },
                      },
                    },
                    tags: {
                      type: 'array',
                      'x-kubernetes-list-type': 'set',
                      ...lim({ maxItems: 2 }),
                      items: { type: 'string', ...lim({ maxLength: 3 }) },
                    },
                    cmd: {
                      type: 'array',
                      ...lim({ maxItems: 2 }),
                      items: { type: 'string', ...lim({ maxLength: 3 }) },
                    },
                    dups: {
                      type: 'array',
                      ...(tight ? { 'x-kubernetes-list-type': 'set' } : {}),
                      items: { type: 'string' },
                    },
                    labels: { type: 'object', additionalProperties: { type: 'string', ...lim({ maxLength: 3 }) } },
                    count: { type: 'integer', ...lim({ minimum: 0 }) },
                    ratio: { type: 'number', nullable: true, ...lim({ maximum: 1.5, exclusiveMaximum: true }) },
                    mode: { type: 'string', default: 'fast', ...lim({ enum: ['fast', 'slow'] }) },
                    nested: {
                      type: 'object',
                      properties: {
                        a: {
                          type: 'object',
                          properties: { b: { type: 'integer', ...lim({ minimum: 0 }) }, c: { type: 'string' } },
                        },
                      },
                    },
                    free: {
                      type: 'object',
                      'x-kubernetes-preserve-unknown-fields': true,
                      properties: { limit: { type: 'integer', ...lim({ maximum: 5 }) } },
                    },
                    template: {
                      type: 'object',
                      'x-kubernetes-embedded-resource': true,
                      properties: { spec: { type: 'object', properties: { x: { type: 'string' } } } },
                    },
                  },
                },
              },
            },
          },
        },
      ],
    },
  };
}
