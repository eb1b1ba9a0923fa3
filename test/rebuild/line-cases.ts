// The TrainJobs (and runtimes) whose JobSets each Trainer line builds, captured by
// capture-jobsets-by-line.ts into fixtures/by-line/<line>-jobset-<case>.json and compared by
// jobsets-by-line.test.ts: the same TrainJob and the same runtime (v2.2.1's vendored torch and
// DeepSpeed ones, applied in every line's world) under v2.2.1, v2.3.0 and main.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import type { TrainJob } from '../../src/api/objects.ts';
import type { RuntimeDoc } from './trainer-cases.ts';

const runtimes = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../upstream/runtimes/v2.2.1');

export const LINE_RUNTIME_FILES = ['torch_distributed.yaml', 'deepspeed_distributed.yaml'];

/** v2.2.1's torch runtime with resources on the node container (resourcesPerNode replaces or merges them). */
export function torchWithResources(): RuntimeDoc {
  const doc = parse(readFileSync(path.join(runtimes, 'torch_distributed.yaml'), 'utf8')) as RuntimeDoc;
  doc.metadata.name = 'torch-resources';
  const node = doc.spec.template?.spec?.replicatedJobs?.[0]?.template?.spec?.template?.spec?.containers?.[0];
  if (!node) throw new Error('v2.2.1 torch runtime: no node container');
  node.resources = { limits: { memory: '16Gi' }, requests: { cpu: '4' } };
  return doc;
}

export function lineRuntimeDocs(): string[] {
  return [
    ...LINE_RUNTIME_FILES.map((f) => readFileSync(path.join(runtimes, f), 'utf8')),
    JSON.stringify(torchWithResources()),
  ];
}

const trainer = (over: Record<string, unknown> = {}) => ({
  image: 'ghcr.io/acme/train:1',
  command: ['torchrun', 'train.py'],
  env: [{ name: 'A', value: '1' }],
  ...over,
});

/** Case name -> the TrainJob's spec (all suspended, so that every line builds and nothing runs). */
export const LINE_CASES: Record<string, NonNullable<TrainJob['spec']>> = {
  torch: { runtimeRef: { name: 'torch-distributed' }, trainer: trainer({ numNodes: 2 }) },
  'torch-res': {
    runtimeRef: { name: 'torch-distributed' },
    trainer: trainer({ numNodes: 2, resourcesPerNode: { limits: { cpu: '3' } } }),
  },
  'torch-merge': {
    runtimeRef: { name: 'torch-resources' },
    trainer: trainer({ numNodes: 1, resourcesPerNode: { limits: { cpu: '3' } } }),
  },
  'torch-patch': {
    runtimeRef: { name: 'torch-distributed' },
    trainer: trainer({ numNodes: 1 }),
    runtimePatches: [
      {
        manager: 'example.com/admin',
        trainingRuntimeSpec: {
          template: {
            spec: {
              replicatedJobs: [
                {
                  name: 'node',
                  template: { spec: { template: { spec: { nodeSelector: { pool: 'a' } } } } },
                },
              ],
            },
          },
        },
      },
    ],
  },
  mpi: { runtimeRef: { name: 'deepspeed-distributed' }, trainer: { numNodes: 2 } },
  'mpi-res': {
    runtimeRef: { name: 'deepspeed-distributed' },
    trainer: { numNodes: 1, resourcesPerNode: { limits: { cpu: '3' } } },
  },
};

export function lineTrainJob(name: string, namespace: string): TrainJob {
  const spec = LINE_CASES[name];
  if (!spec) throw new Error(`no case ${name}`);
  return {
    apiVersion: 'trainer.kubeflow.org/v1alpha1',
    kind: 'TrainJob',
    metadata: { name, namespace },
    spec: { suspend: true, ...structuredClone(spec) },
  };
}
