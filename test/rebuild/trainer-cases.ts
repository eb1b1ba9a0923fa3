// The TrainJobs (and the one runtime of our own) whose JobSets the real Trainer v2.3.0 built into
// fixtures/trainer-v2.3.0-jobset-<name>.json: capture-trainer-fixtures.ts applies exactly these in
// the e2e world and writes what Trainer applied; trainer-jobset.test.ts builds the same TrainJobs
// and compares. One definition for both, so a fixture is never hand-written.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import type { Runtime, TrainJob } from '../../src/api/objects.ts';

const upstream = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../upstream/runtimes');

/** A ClusterTrainingRuntime as applied (apiVersion, kind, metadata, spec). */
export type RuntimeDoc = { apiVersion: string; kind: string; metadata: { name: string }; spec: Runtime['spec'] };

export function upstreamRuntimeDoc(file: string): RuntimeDoc {
  return parse(readFileSync(path.join(upstream, file), 'utf8'));
}

/**
 * Torch with what the upstream runtimes lack: GPU limits and CPU requests on `node` (merged with
 * the TrainJob's resourcesPerNode), envInjection into an init container of `node` and a container
 * of a job without ancestor, and replicas on that job (Trainer's runtime webhook allows only 1 on
 * an ancestor's job; Trainer sets 1 there and keeps the others').
 */
export const TORCH_EXTRAS: RuntimeDoc = {
  apiVersion: 'trainer.kubeflow.org/v1alpha1',
  kind: 'ClusterTrainingRuntime',
  metadata: { name: 'torch-extras' },
  spec: {
    mlPolicy: {
      numNodes: 1,
      torch: {
        envInjection: {
          targets: [
            { jobName: 'node', containerNames: ['preflight'] },
            { jobName: 'aux', containerNames: ['aux'] },
          ],
        },
      },
    },
    template: {
      spec: {
        replicatedJobs: [
          {
            name: 'node',
            template: {
              metadata: { labels: { 'trainer.kubeflow.org/trainjob-ancestor-step': 'trainer' } },
              spec: {
                template: {
                  spec: {
                    initContainers: [{ name: 'preflight', image: 'busybox:1', env: [{ name: 'P', value: '1' }] }],
                    containers: [
                      {
                        name: 'node',
                        image: 'pytorch/pytorch:2.7.1-cuda12.8-cudnn9-runtime',
                        command: ['torchrun', 'train.py'],
                        resources: {
                          limits: { 'nvidia.com/gpu': '2', cpu: '8', memory: '16Gi' },
                          requests: { cpu: '4' },
                        },
                      },
                    ],
                  },
                },
              },
            },
          },
          {
            name: 'aux',
            replicas: 3,
            template: {
              spec: {
                parallelism: 2,
                template: { spec: { containers: [{ name: 'aux', image: 'busybox:1', command: ['sleep', 'inf'] }] } },
              },
            },
          },
        ],
      },
    },
  },
};

export const CASE_RUNTIMES = {
  'torchtune-llama3.2-1b': () => upstreamRuntimeDoc('torchtune_llama3_2_1B.yaml'),
  'jax-distributed': () => upstreamRuntimeDoc('jax_distributed.yaml'),
  'xgboost-distributed': () => upstreamRuntimeDoc('xgboost_distributed.yaml'),
  'torch-extras': () => structuredClone(TORCH_EXTRAS),
} as const;

export type CaseName = 'secrets' | 'extras' | 'jax' | 'xgboost' | 'notrainer';

/** The cases: a runtime name and the TrainJob spec Trainer got (always suspended: no pods needed). */
export const CASES: Record<CaseName, { runtime: keyof typeof CASE_RUNTIMES; spec: NonNullable<TrainJob['spec']> }> = {
  /** Gated model and dataset: the initializers read the token from the Secret (envFrom). */
  secrets: {
    runtime: 'torchtune-llama3.2-1b',
    spec: {
      trainer: { numNodes: 1 },
      initializer: {
        dataset: { storageUri: 'hf://acme/data', secretRef: { name: 'hf-token' }, env: [{ name: 'X', value: 'y' }] },
        model: { storageUri: 'hf://acme/gated-model', secretRef: { name: 'hf-token' } },
      },
    },
  },
  /** resourcesPerNode.requests over the runtime's GPU limits; envInjection; replicas. */
  extras: {
    runtime: 'torch-extras',
    spec: {
      trainer: {
        numNodes: 2,
        env: [{ name: 'A', value: '1' }],
        resourcesPerNode: { requests: { cpu: '2', memory: '8Gi' } },
      },
    },
  },
  jax: {
    runtime: 'jax-distributed',
    spec: { trainer: { numNodes: 2, command: ['python', 'train.py'], env: [{ name: 'B', value: '2' }] } },
  },
  /** No spec.trainer: the plugins leave the node container alone (no PET_*, no port); envInjection still runs. */
  notrainer: { runtime: 'torch-extras', spec: {} },
  /** Two GPUs per node: DMLC_NUM_WORKER = 2 nodes x 2. */
  xgboost: {
    runtime: 'xgboost-distributed',
    spec: {
      trainer: {
        numNodes: 2,
        env: [{ name: 'C', value: '3' }],
        resourcesPerNode: { limits: { 'nvidia.com/gpu': '2' } },
      },
    },
  },
};

/** The runtime of a case, as buildJobSet reads it. */
export function caseRuntime(name: CaseName): Runtime {
  const doc = CASE_RUNTIMES[CASES[name].runtime]();
  return { kind: doc.kind, name: doc.metadata.name, spec: doc.spec };
}

/** The TrainJob of a case (namespace ns, uid trainjob-uid-<name>), as applied and as built. */
export function caseTrainJob(name: CaseName): TrainJob {
  return {
    apiVersion: 'trainer.kubeflow.org/v1alpha1',
    kind: 'TrainJob',
    metadata: { name, namespace: 'ns', uid: `trainjob-uid-${name}`, generation: 1 },
    spec: {
      runtimeRef: { apiGroup: 'trainer.kubeflow.org', kind: 'ClusterTrainingRuntime', name: CASES[name].runtime },
      suspend: true,
      managedBy: 'trainer.kubeflow.org/trainjob-controller',
      ...structuredClone(CASES[name].spec),
    },
  };
}
