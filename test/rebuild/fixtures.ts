// Fixtures for the reconciler's pure functions: the vendored upstream runtimes (upstream/), and
// JobSets the real Trainer v2.3.0 built for them (captured from the e2e control plane, with uids,
// resourceVersions and status replaced), each deep-cloned per call.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import type { Job, JobSet, PersistentVolumeClaim, Pod, Runtime, TrainJob } from '../../src/api/objects.ts';
import type { CaseName } from './trainer-cases.ts';

const here = path.dirname(fileURLToPath(import.meta.url));
const upstream = path.resolve(here, '../../upstream');

export const RUNTIME_FILES = {
  torch: 'torch_distributed.yaml',
  deepspeed: 'deepspeed_distributed.yaml',
  torchtune: 'torchtune_llama3_2_1B.yaml',
  torchCache: 'torch_distributed_with_cache.yaml',
  jax: 'jax_distributed.yaml',
  xgboost: 'xgboost_distributed.yaml',
  mlx: 'mlx_distributed.yaml',
} as const;

export function upstreamRuntime(which: keyof typeof RUNTIME_FILES): Runtime {
  const doc = parse(readFileSync(path.join(upstream, 'runtimes', RUNTIME_FILES[which]), 'utf8'));
  return { kind: doc.kind, name: doc.metadata.name, spec: doc.spec };
}

/**
 * A JobSet Trainer v2.3.0 built: torch1 (torch, numNodes 1, image/command/env/3 CPUs), mpi
 * (deepspeed, node 1), ttpub (torchtune); and the cases of trainer-cases.ts (secrets, extras, jax,
 * xgboost, notrainer), written by capture-trainer-fixtures.ts.
 */
export function trainerJobSet(which: 'torch1' | 'mpi' | 'ttpub' | CaseName): JobSet {
  return JSON.parse(readFileSync(path.join(here, 'fixtures', `trainer-v2.3.0-jobset-${which}.json`), 'utf8'));
}

export function trainJob(
  name: string,
  spec: NonNullable<TrainJob['spec']> = {},
  runtime = 'torch-distributed',
): TrainJob {
  return {
    apiVersion: 'trainer.kubeflow.org/v1alpha1',
    kind: 'TrainJob',
    metadata: { name, namespace: 'ns', uid: `trainjob-uid-${name}`, generation: 1, resourceVersion: '10' },
    spec: {
      runtimeRef: { apiGroup: 'trainer.kubeflow.org', kind: 'ClusterTrainingRuntime', name: runtime },
      suspend: true,
      managedBy: 'trainer.kubeflow.org/trainjob-controller',
      ...spec,
    },
  };
}

/** The TrainJob the torch1 fixture was built from. */
export function torch1(numNodes = 1, change: (t: TrainJob) => void = () => {}): TrainJob {
  const t = trainJob('torch1', {
    trainer: {
      numNodes,
      image: 'ghcr.io/acme/train:1',
      command: ['torchrun', 'train.py'],
      env: [{ name: 'A', value: '1' }],
      resourcesPerNode: { limits: { cpu: '3' } },
    },
  });
  change(t);
  return t;
}

export function job(name: string, over: Partial<Job> = {}): Job {
  return {
    metadata: { name, ...over.metadata },
    spec: { suspend: true, ...over.spec },
    status: { active: 0, ...over.status },
  };
}

export function pod(name: string, phase = 'Pending', deleting = false): Pod {
  return { metadata: { name, ...(deleting ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}) }, status: { phase } };
}

export function pvc(name: string, meta: Partial<PersistentVolumeClaim['metadata']> = {}): PersistentVolumeClaim {
  return { metadata: { name, namespace: 'ns', uid: `pvc-uid-${name}`, resourceVersion: '7', ...meta } };
}

/** The controller reference Trainer puts on what it builds for a TrainJob (its JobSet, its PodGroup). */
export function trainJobOwner(tj: TrainJob, blockOwnerDeletion?: true) {
  return {
    apiVersion: 'trainer.kubeflow.org/v1alpha1',
    kind: 'TrainJob',
    name: tj.metadata.name ?? '',
    uid: tj.metadata.uid ?? '',
    controller: true,
    ...(blockOwnerDeletion ? { blockOwnerDeletion } : {}),
  };
}

export function jobSetOwner(js: JobSet) {
  return {
    apiVersion: 'jobset.x-k8s.io/v1alpha2',
    kind: 'JobSet',
    name: js.metadata.name ?? '',
    uid: js.metadata.uid ?? '',
    controller: true,
    blockOwnerDeletion: true,
  };
}

/** Sets parallelism/completions of one replicated job (and PET_NNODES if present) as if built for `count`. */
export function withCount(js: JobSet, rJobName: string, count: number, petNnodes = true): JobSet {
  const copy = structuredClone(js);
  const r = copy.spec?.replicatedJobs?.find((x) => x.name === rJobName);
  if (!r?.template?.spec) throw new Error(`no replicated job ${rJobName}`);
  r.template.spec.parallelism = count;
  r.template.spec.completions = count;
  const env = r.template.spec.template?.spec?.containers
    ?.find((c) => c.name === 'node')
    ?.env?.find((e) => e.name === 'PET_NNODES');
  if (env && petNnodes) env.value = String(count);
  return copy;
}

/**
 * True when every field of `part` is in `whole` with the same value (lists: same length,
 * element-wise): what this project builds, against what Trainer built plus JobSet's defaults.
 */
export function subsetDiff(part: unknown, whole: unknown, at = ''): string[] {
  if (Array.isArray(part)) {
    if (!Array.isArray(whole) || whole.length !== part.length)
      return [`${at}: ${JSON.stringify(part)} vs ${JSON.stringify(whole)}`];
    return part.flatMap((p, i) => subsetDiff(p, whole[i], `${at}[${i}]`));
  }
  if (part !== null && typeof part === 'object') {
    if (whole === null || typeof whole !== 'object') return [`${at}: object vs ${JSON.stringify(whole)}`];
    return Object.entries(part).flatMap(([k, v]) => subsetDiff(v, (whole as Record<string, unknown>)[k], `${at}.${k}`));
  }
  // The API server stores resource quantities as strings (2 -> "2").
  const same = part === whole || (typeof part === 'number' && typeof whole === 'string' && String(part) === whole);
  return same ? [] : [`${at}: ${JSON.stringify(part)} vs ${JSON.stringify(whole)}`];
}
