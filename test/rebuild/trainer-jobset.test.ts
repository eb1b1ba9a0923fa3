// buildJobSet (standalone mode) against the upstream runtimes and what the real Trainer v2.3.0
// built for the same TrainJobs: every field this project builds equals Trainer's (Trainer's
// JobSets also carry JobSet's webhook defaults, which the build leaves to the webhook).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildJobSet } from '../../src/rebuild/trainer-jobset/jobset.ts';
import { deepFreeze } from '../../src/cluster/stored-object.ts';
import { strategicMerge } from '../../src/rebuild/trainer-jobset/strategic-merge.ts';
import { mergeResources } from '../../src/rebuild/trainer-jobset/resources.ts';
import { numProcPerNode, upsertPort, wholeCpus } from '../../src/rebuild/trainer-jobset/torch.ts';
import type { JobSet, Runtime, TrainJob } from '../../src/api/objects.ts';
import { subsetDiff, torch1, trainJob, trainerJobSet, upstreamRuntime, withCount } from './fixtures.ts';
import { CASES, caseRuntime, caseTrainJob, type CaseName } from './trainer-cases.ts';

const torch = upstreamRuntime('torch');

function built(t: TrainJob, runtime = torch): JobSet {
  const out = buildJobSet(t, runtime);
  assert.ok(out.ok, out.ok ? '' : out.reason);
  return out.jobSet;
}

const node = (js: JobSet, name = 'node') => js.spec?.replicatedJobs?.find((r) => r.name === name);
const nodeContainer = (js: JobSet) =>
  node(js)?.template?.spec?.template?.spec?.containers?.find((c) => c.name === 'node');
const envOf = (js: JobSet) =>
  Object.fromEntries((nodeContainer(js)?.env ?? []).map((e) => [e.name, e.value ?? e.valueFrom]));

describe('buildJobSet matches what Trainer v2.3.0 built', () => {
  it('torch-distributed with image, command, env and 3 CPUs (numNodes 1)', () => {
    assert.deepEqual(subsetDiff(built(torch1(1)), trainerJobSet('torch1')), []);
  });

  it('torch-distributed scaled to 2: Trainer would build parallelism 2 and PET_NNODES=2', () => {
    assert.deepEqual(subsetDiff(built(torch1(2)), withCount(trainerJobSet('torch1'), 'node', 2)), []);
  });

  it('torchtune-llama3.2-1b (initializers, the volumeClaimPolicies workspace, GPU: PET_NPROC_PER_NODE=auto)', () => {
    const t = trainJob('ttpub', { trainer: { numNodes: 1 } }, 'torchtune-llama3.2-1b');
    assert.deepEqual(subsetDiff(built(t, upstreamRuntime('torchtune')), trainerJobSet('ttpub')), []);
  });

  it("volumeClaimPolicies exactly as stored (JobSet's CREATE-only defaults: retentionPolicy Delete, status {}), so a later apply does not change this immutable list", () => {
    const t = trainJob('ttpub', { trainer: { numNodes: 1 } }, 'torchtune-llama3.2-1b');
    assert.deepEqual(
      built(t, upstreamRuntime('torchtune')).spec?.volumeClaimPolicies,
      trainerJobSet('ttpub').spec?.volumeClaimPolicies,
    );
    const retain = structuredClone(upstreamRuntime('torchtune'));
    (retain.spec.template!.spec!.volumeClaimPolicies![0] as Record<string, unknown>).retentionPolicy = {
      whenDeleted: 'Retain',
    };
    assert.deepEqual(built(t, retain).spec?.volumeClaimPolicies?.[0]?.retentionPolicy, { whenDeleted: 'Retain' });
  });
});

/** XGBoost's env order (TrainJob's envs around DMLC_*) is Go's map order of Trainer's plugins: compared by name. */
function envByName(js: JobSet): JobSet {
  const copy = structuredClone(js);
  for (const r of copy.spec?.replicatedJobs ?? [])
    for (const c of r.template?.spec?.template?.spec?.containers ?? [])
      c.env?.sort((a, b) => a.name.localeCompare(b.name));
  return copy;
}

describe('buildJobSet matches what Trainer v2.3.0 built: the cases of trainer-cases.ts', () => {
  const rJobOf = (js: JobSet, name: string) => js.spec?.replicatedJobs?.find((r) => r.name === name);
  const containerOf = (js: JobSet, job: string, name: string, init = false) => {
    const spec = rJobOf(js, job)?.template?.spec?.template?.spec;
    return (init ? spec?.initContainers : spec?.containers)?.find((c) => c.name === name);
  };
  for (const name of Object.keys(CASES) as CaseName[]) {
    it(`${name}: every field built equals Trainer's`, () => {
      const ours = built(caseTrainJob(name), caseRuntime(name));
      const trainers = trainerJobSet(name);
      const [a, b] = name === 'xgboost' ? [envByName(ours), envByName(trainers)] : [ours, trainers];
      assert.deepEqual(subsetDiff(a, b), []);
    });
  }

  it("secrets: each initializer's Secret as envFrom (what a gated model's download reads its token from)", () => {
    const js = built(caseTrainJob('secrets'), caseRuntime('secrets'));
    for (const job of ['dataset-initializer', 'model-initializer']) {
      assert.deepEqual(containerOf(js, job, job)?.envFrom, [{ secretRef: { name: 'hf-token' } }]);
      assert.deepEqual(containerOf(trainerJobSet('secrets'), job, job)?.envFrom, [{ secretRef: { name: 'hf-token' } }]);
    }
  });

  it("extras: resourcesPerNode.requests merged over the runtime's GPU limit; PET_NPROC_PER_NODE from the TrainJob's CPUs", () => {
    const js = built(caseTrainJob('extras'), caseRuntime('extras'));
    assert.deepEqual(containerOf(js, 'node', 'node')?.resources, {
      limits: { 'nvidia.com/gpu': '2', cpu: '8', memory: '16Gi' },
      requests: { cpu: '2', memory: '8Gi' },
    });
    assert.equal(envOf(js).PET_NPROC_PER_NODE, '2');
  });

  it('extras: envInjection puts PET_* and the master on the targets (an init container, a container of another job)', () => {
    const js = built(caseTrainJob('extras'), caseRuntime('extras'));
    const names = (c: { env?: { name: string }[] } | undefined) => (c?.env ?? []).map((e) => e.name);
    const pet = ['PET_NNODES', 'PET_NPROC_PER_NODE', 'PET_NODE_RANK', 'PET_MASTER_ADDR', 'PET_MASTER_PORT'];
    assert.deepEqual(names(containerOf(js, 'node', 'preflight', true)), ['P', ...pet]);
    assert.deepEqual(names(containerOf(js, 'aux', 'aux')), pet);
  });

  it("extras: replicas 1 on the trainer's job, the runtime's on the others", () => {
    const js = built(caseTrainJob('extras'), caseRuntime('extras'));
    assert.deepEqual(
      js.spec?.replicatedJobs?.map((r) => [r.name, r.replicas, r.template?.spec?.parallelism]),
      [
        ['node', 1, 2],
        ['aux', 3, 2],
      ],
    );
  });

  it('jax: JAX_NUM_PROCESSES, JAX_PROCESS_ID, JAX_COORDINATOR_ADDRESS, then the TrainJob envs; port 29500', () => {
    const js = built(caseTrainJob('jax'), caseRuntime('jax'));
    assert.deepEqual(envOf(js), {
      JAX_NUM_PROCESSES: '2',
      JAX_PROCESS_ID: { fieldRef: { fieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']" } },
      JAX_COORDINATOR_ADDRESS: 'jax-node-0-0.jax:29500',
      B: '2',
    });
    assert.deepEqual(Object.keys(envOf(js)), ['JAX_NUM_PROCESSES', 'JAX_PROCESS_ID', 'JAX_COORDINATOR_ADDRESS', 'B']);
    assert.deepEqual(nodeContainer(js)?.ports, [{ containerPort: 29500 }]);
  });

  it('xgboost: DMLC_* with workers = nodes x GPUs per node, 1 per node without GPUs', () => {
    const js = built(caseTrainJob('xgboost'), caseRuntime('xgboost'));
    assert.equal(envOf(js).DMLC_NUM_WORKER, '4');
    assert.equal(envOf(js).DMLC_TRACKER_URI, 'xgboost-node-0-0.xgboost');
    const noGpu = caseTrainJob('xgboost');
    delete noGpu.spec!.trainer!.resourcesPerNode;
    assert.equal(envOf(built(noGpu, caseRuntime('xgboost'))).DMLC_NUM_WORKER, '2');
  });
});

describe('buildJobSet', () => {
  it('owner reference: the TrainJob, controller, blockOwnerDeletion', () => {
    assert.deepEqual(built(torch1()).metadata.ownerReferences, [
      {
        apiVersion: 'trainer.kubeflow.org/v1alpha1',
        kind: 'TrainJob',
        name: 'torch1',
        uid: 'trainjob-uid-torch1',
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
  });

  it('suspend is copied (absent counts as false)', () => {
    assert.equal(built(torch1()).spec?.suspend, true);
    assert.equal(built(torch1(1, (t) => (t.spec!.suspend = false))).spec?.suspend, false);
    assert.equal(built(torch1(1, (t) => delete t.spec!.suspend)).spec?.suspend, false);
  });

  it('numNodes: the TrainJob, else the runtime mlPolicy.numNodes, else 1; replicas 1 on the trainer', () => {
    const noCount = torch1(1, (t) => delete t.spec!.trainer!.numNodes);
    const r3 = { ...torch, spec: { ...torch.spec, mlPolicy: { numNodes: 3, torch: {} } } };
    assert.equal(node(built(noCount, r3))?.template?.spec?.parallelism, 3);
    assert.equal(envOf(built(noCount, r3)).PET_NNODES, '3');
    const r0 = { ...torch, spec: { ...torch.spec, mlPolicy: { torch: {} } } };
    assert.equal(node(built(noCount, r0))?.template?.spec?.completions, 1);
    assert.equal(node(built(torch1(5)))?.replicas, 1);
  });

  it('torch envs on the node container: PET_NNODES, PET_NPROC_PER_NODE, PET_NODE_RANK (completion index), PET_MASTER_ADDR, PET_MASTER_PORT; port 29500', () => {
    const js = built(torch1(4, (t) => (t.spec!.trainer!.numProcPerNode = 8)));
    assert.deepEqual(envOf(js), {
      A: '1',
      PET_NNODES: '4',
      PET_NPROC_PER_NODE: '8',
      PET_NODE_RANK: { fieldRef: { fieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']" } },
      PET_MASTER_ADDR: 'torch1-node-0-0.torch1',
      PET_MASTER_PORT: '29500',
    });
    assert.deepEqual(nodeContainer(js)?.ports, [{ containerPort: 29500 }]);
  });

  it('plain runtimes (no policy source) get the count and no PET_* envs', () => {
    const plain = { ...torch, spec: { ...torch.spec, mlPolicy: { numNodes: 1 } } };
    const js = built(torch1(3), plain);
    assert.equal(node(js)?.template?.spec?.parallelism, 3);
    assert.deepEqual(Object.keys(envOf(js)), ['A']);
  });

  it('runtimePatches: merged in order (strategic merge by name), labels and annotations over the runtime template', () => {
    const t = torch1(2, (tj) => {
      tj.spec!.runtimePatches = [
        {
          manager: 'kueue',
          trainingRuntimeSpec: {
            template: {
              metadata: { labels: { team: 'a' } },
              spec: {
                replicatedJobs: [
                  {
                    name: 'node',
                    template: {
                      spec: {
                        template: {
                          spec: {
                            nodeSelector: { pool: 'gpu' },
                            containers: [{ name: 'node', env: [{ name: 'B', value: '2' }] }],
                          },
                        },
                      },
                    },
                  },
                ],
              },
            },
          },
        },
        {
          manager: 'me',
          trainingRuntimeSpec: { template: { metadata: { labels: { team: 'b' }, annotations: { note: 'x' } } } },
        },
      ];
    });
    const js = built(t);
    assert.deepEqual(js.metadata.labels, { team: 'b' });
    assert.deepEqual(js.metadata.annotations, { note: 'x' });
    assert.deepEqual(node(js)?.template?.spec?.template?.spec?.nodeSelector, { pool: 'gpu' });
    assert.equal(nodeContainer(js)?.image, 'ghcr.io/acme/train:1');
    assert.deepEqual(Object.keys(envOf(js)), [
      'B',
      'A',
      'PET_NNODES',
      'PET_NPROC_PER_NODE',
      'PET_NODE_RANK',
      'PET_MASTER_ADDR',
      'PET_MASTER_PORT',
    ]);
  });

  it('initializer storageUri and env go to the initializer containers', () => {
    const t = trainJob(
      'ttpub',
      {
        trainer: { numNodes: 1 },
        initializer: { dataset: { storageUri: 'hf://me/data', env: [{ name: 'X', value: 'y' }] } },
      },
      'torchtune-llama3.2-1b',
    );
    const js = built(t, upstreamRuntime('torchtune'));
    const ds = node(js, 'dataset-initializer')?.template?.spec?.template?.spec?.containers?.[0];
    assert.deepEqual(ds?.env, [
      { name: 'STORAGE_URI', value: 'hf://me/data' },
      { name: 'X', value: 'y' },
    ]);
    const model = node(js, 'model-initializer')?.template?.spec?.template?.spec?.containers?.[0];
    assert.deepEqual(model?.env, [{ name: 'STORAGE_URI', value: 'hf://meta-llama/Llama-3.2-1B-Instruct' }]);
  });

  it('the runtime is not modified', () => {
    const before = JSON.stringify(torch);
    built(torch1(3));
    assert.equal(JSON.stringify(torch), before);
  });

  it('MPI, unknown policies and the torchtune entrypoint are refused as a whole, with a clear reason', () => {
    const mpi = buildJobSet(
      trainJob('m', { trainer: { numNodes: 2 } }, 'deepspeed-distributed'),
      upstreamRuntime('deepspeed'),
    );
    assert.equal(mpi.ok, false);
    assert.match(
      !mpi.ok ? mpi.reason : '',
      /ClusterTrainingRuntime deepspeed-distributed uses the MPI policy, which standalone mode does not build/,
    );
    const flux = buildJobSet(torch1(), { ...torch, spec: { ...torch.spec, mlPolicy: { flux: {} } } });
    assert.match(!flux.ok ? flux.reason : '', /"flux"/);
    const tune = buildJobSet(
      torch1(1, (t) => (t.spec!.trainer!.command = ['tune', 'run'])),
      torch,
    );
    assert.match(!tune.ok ? tune.reason : '', /torchtune entrypoint/);
  });
});

describe('buildJobSet: Trainer v2.3.0 details', () => {
  it('initializer envFrom: the Secret joins the envFrom the runtime has', () => {
    const runtime = upstreamRuntime('torchtune');
    const ds = runtime.spec.template!.spec!.replicatedJobs!.find((r) => r.name === 'dataset-initializer')!;
    ds.template!.spec!.template!.spec!.containers![0].envFrom = [{ configMapRef: { name: 'cfg' } }];
    const t = trainJob(
      'ttpub',
      { trainer: { numNodes: 1 }, initializer: { dataset: { secretRef: { name: 's' } } } },
      'torchtune-llama3.2-1b',
    );
    const c = node(built(t, runtime), 'dataset-initializer')?.template?.spec?.template?.spec?.containers?.[0];
    assert.deepEqual(c?.envFrom, [{ configMapRef: { name: 'cfg' } }, { secretRef: { name: 's' } }]);
    assert.equal(
      node(built(t, runtime), 'model-initializer')?.template?.spec?.template?.spec?.containers?.[0].envFrom,
      undefined,
    );
  });

  it('resourcesPerNode is not applied when the runtime has no mlPolicy (Trainer merges it only for one with a policy)', () => {
    const noPolicy: Runtime = { ...torch, spec: { ...torch.spec, mlPolicy: undefined } };
    assert.equal(nodeContainer(built(torch1(1), noPolicy))?.resources, undefined);
  });

  it('an envInjection target that is not in the template refuses the build', () => {
    const r = structuredClone(torch);
    r.spec.mlPolicy = {
      numNodes: 1,
      torch: { envInjection: { targets: [{ jobName: 'node', containerNames: ['nope'] }] } },
    };
    const out = buildJobSet(torch1(), r);
    assert.match(
      !out.ok ? out.reason : '',
      /envInjection target podSet "node" container "nope" not found in runtime template/,
    );
  });

  it("flux is refused with what it would need (Trainer's ConfigMap and Secret)", () => {
    const out = buildJobSet(torch1(), { ...torch, spec: { ...torch.spec, mlPolicy: { flux: {} } } });
    assert.match(!out.ok ? out.reason : '', /"flux".*entrypoint ConfigMap and CURVE Secret/);
  });
});

describe('mergeResources (MergeResourceRequirements)', () => {
  it('merges limits and requests by name, the TrainJob winning; claims by name', () => {
    assert.deepEqual(
      mergeResources({ limits: { 'nvidia.com/gpu': 2, cpu: '8' } }, { requests: { cpu: '2' }, limits: { cpu: '4' } }),
      { limits: { 'nvidia.com/gpu': 2, cpu: '4' }, requests: { cpu: '2' } },
    );
    assert.deepEqual(
      mergeResources({ claims: [{ name: 'a' }], limits: {} }, { claims: [{ name: 'b' }, { name: 'a', request: 'r' }] }),
      { claims: [{ name: 'a', request: 'r' }, { name: 'b' }] },
    );
    assert.deepEqual(mergeResources(undefined, {}), {});
  });
});

describe('upsertPort (apply.UpsertPort)', () => {
  it('replaces the port with the same number, or the first unnamed one when unnamed; else appends', () => {
    assert.deepEqual(upsertPort([{ containerPort: 29500, name: 'x' }], { containerPort: 29500 }), [
      { containerPort: 29500 },
    ]);
    assert.deepEqual(upsertPort([{ containerPort: 8080 }], { containerPort: 29500 }), [{ containerPort: 29500 }]);
    assert.deepEqual(upsertPort([{ containerPort: 8080, name: 'http' }], { containerPort: 29500 }), [
      { containerPort: 8080, name: 'http' },
      { containerPort: 29500 },
    ]);
  });
});

describe('numProcPerNode (Trainer v2.3.0)', () => {
  const row = (npp: number | string | undefined, resources: object | undefined) =>
    numProcPerNode(
      torch1(1, (t) => ((t.spec!.trainer!.numProcPerNode = npp), (t.spec!.trainer!.resourcesPerNode = resources))),
      undefined,
    );
  it('auto without GPUs counts CPUs (at least 1); with GPUs stays auto; cpu counts CPUs; numbers stay', () => {
    assert.equal(row(undefined, undefined), '1');
    assert.equal(row(undefined, { limits: { cpu: '3' } }), '3');
    assert.equal(row('auto', { requests: { cpu: '2500m' } }), '3');
    assert.equal(row('auto', { limits: { 'nvidia.com/gpu': 2 } }), 'auto');
    assert.equal(row('cpu', { limits: { 'nvidia.com/gpu': 2, cpu: 4 } }), '4');
    assert.equal(row(6, { limits: { cpu: 2 } }), '6');
    // Trainer reads the requests first, for CPUs and for GPUs.
    assert.equal(row(undefined, { limits: { cpu: 8 }, requests: { cpu: 2 } }), '2');
    assert.equal(row(undefined, { requests: { 'nvidia.com/gpu': 1 }, limits: { cpu: 4 } }), 'auto');
  });
  it('wholeCpus rounds up like resource.Quantity.Value()', () => {
    assert.deepEqual(
      ['1', '500m', '1.5', '2000m', 'x', undefined].map((q) => wholeCpus(q)),
      [1, 1, 2, 2, 0, 0],
    );
  });
});

describe('strategicMerge', () => {
  it('merges keyed lists, replaces the others, deletes on null, honours $patch', () => {
    const original = {
      containers: [{ name: 'a', image: 'x', env: [{ name: 'E', value: '1' }] }],
      tolerations: [{ key: 't1' }],
      keep: 1,
      drop: 2,
    };
    const patch = {
      containers: [
        { name: 'a', env: [{ name: 'F', value: '2' }] },
        { name: 'b', image: 'y' },
      ],
      tolerations: [{ key: 't2' }],
      drop: null,
    };
    assert.deepEqual(strategicMerge(original, patch), {
      containers: [
        {
          name: 'a',
          image: 'x',
          env: [
            { name: 'E', value: '1' },
            { name: 'F', value: '2' },
          ],
        },
        { name: 'b', image: 'y' },
      ],
      tolerations: [{ key: 't2' }],
      keep: 1,
    });
    assert.deepEqual(
      strategicMerge({ containers: [{ name: 'a' }, { name: 'b' }] }, { containers: [{ name: 'a', $patch: 'delete' }] }),
      { containers: [{ name: 'b' }] },
    );
    assert.deepEqual(strategicMerge({ nodeSelector: { a: '1' } }, { nodeSelector: { b: '2', $patch: 'replace' } }), {
      nodeSelector: { b: '2' },
    });
    assert.deepEqual(original.containers[0].env.length, 1, 'the original is not modified');
  });
});

describe('buildJobSet from a frozen TrainJob (the reconciler caches objects frozen)', () => {
  const ANCESTOR = { 'trainer.kubeflow.org/trainjob-ancestor-step': 'trainer' };
  const patched = (replicatedJob: Record<string, unknown>) =>
    torch1(2, (t) => {
      (t.spec as Record<string, unknown>).runtimePatches = [
        { manager: 'm', trainingRuntimeSpec: { template: { spec: { replicatedJobs: [replicatedJob] } } } },
      ];
      t.spec!.trainer = { ...t.spec!.trainer, resourcesPerNode: { limits: { cpu: '2' } } };
    });
  for (const [what, replicatedJob] of [
    [
      "a `$patch: replace` of the trainer's job template",
      {
        name: 'node',
        template: {
          $patch: 'replace',
          metadata: { labels: ANCESTOR },
          spec: { template: { spec: { containers: [{ name: 'node', image: 'x' }] } } },
        },
      },
    ],
    [
      'a whole replicated job added, labelled the trainer',
      {
        name: 'extra',
        template: {
          metadata: { labels: ANCESTOR },
          spec: { template: { spec: { containers: [{ name: 'node', image: 'x' }] } } },
        },
      },
    ],
  ] as const) {
    it(`${what}: built as from the same TrainJob unfrozen, which is left as it was`, () => {
      const live = patched(replicatedJob);
      const frozen = deepFreeze(structuredClone(live));
      const fromFrozen = buildJobSet(frozen, upstreamRuntime('torch'));
      assert.deepEqual(fromFrozen, buildJobSet(structuredClone(live), upstreamRuntime('torch')));
      assert.equal(fromFrozen.ok, true, fromFrozen.ok ? '' : fromFrozen.reason);
      assert.deepEqual(frozen, live);
    });
  }
});
