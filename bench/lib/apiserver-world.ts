// What a numNodes change of bench/apiserver.bench.ts is judged by, as in a cluster where Trainer
// built the TrainJob's JobSet and a reconciler leads: the upstream torch-distributed
// ClusterTrainingRuntime, the JobSet Trainer v2.3.0 built for the TrainJob `torch1`
// (test/rebuild/fixtures, owned by the bench's TrainJob), two of its Jobs (suspended, no pods), and
// the reconciler's Lease, renewed every 2 s as the reconciler renews it (reconciler/config.ts).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { projectRoot } from '../../test/harness/index.ts';
import type { Obj } from '../../test/e2e/support/trainjobs.ts';

export type Send = (
  method: string,
  urlPath: string,
  body: unknown,
  contentType?: string,
) => Promise<{ status: number; body: Obj }>;

export const SCALED = 'torch1';
export const LEASE_NAME = 'trainjob-webhook-reconciler';

/** The TrainJob the torch1 fixture's JobSet was built from (test/rebuild/fixtures.ts torch1), suspended. */
export function scaledTrainJob(namespace: string): Obj {
  return {
    apiVersion: 'trainer.kubeflow.org/v1alpha1',
    kind: 'TrainJob',
    metadata: { name: SCALED, namespace },
    spec: {
      runtimeRef: { apiGroup: 'trainer.kubeflow.org', kind: 'ClusterTrainingRuntime', name: 'torch-distributed' },
      suspend: true,
      managedBy: 'trainer.kubeflow.org/trainjob-controller',
      trainer: {
        numNodes: 1,
        image: 'ghcr.io/acme/train:1',
        command: ['torchrun', 'train.py'],
        env: [{ name: 'A', value: '1' }],
        resourcesPerNode: { limits: { cpu: '3' } },
      },
    },
  };
}

/** metav1.MicroTime: RFC 3339 with six fractional digits. */
const microTime = (d: Date) => d.toISOString().replace(/Z$/, '000Z');

async function create(send: Send, urlPath: string, object: Obj): Promise<Obj> {
  const res = await send('POST', urlPath, object);
  if (res.status !== 201) throw new Error(`creating ${urlPath}: HTTP ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

function job(namespace: string, name: string, replicatedJob: string): Obj {
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name,
      namespace,
      labels: { 'jobset.sigs.k8s.io/jobset-name': SCALED, 'jobset.sigs.k8s.io/replicatedjob-name': replicatedJob },
    },
    spec: {
      suspend: true,
      template: {
        spec: { restartPolicy: 'Never', containers: [{ name: 'node', image: 'ghcr.io/acme/train:1' }] },
      },
    },
  };
}

/** Creates the runtime, the JobSet (owned by `trainJob`), two Jobs and the Lease; returns the renewer's stop. */
export async function buildJudgedWorld(send: Send, namespace: string, trainJob: Obj): Promise<() => void> {
  const runtime = parse(readFileSync(path.join(projectRoot, 'upstream/runtimes/torch_distributed.yaml'), 'utf8'));
  await create(send, '/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes', runtime);
  const jobSet = JSON.parse(
    readFileSync(path.join(projectRoot, 'test/rebuild/fixtures/trainer-v2.3.0-jobset-torch1.json'), 'utf8'),
  );
  jobSet.metadata = {
    name: SCALED,
    namespace,
    ownerReferences: jobSet.metadata.ownerReferences.map((o: Obj) => ({ ...o, uid: trainJob.metadata.uid })),
  };
  await create(send, `/apis/jobset.x-k8s.io/v1alpha2/namespaces/${namespace}/jobsets`, jobSet);
  for (const [name, rj] of [
    [`${SCALED}-node-0`, 'node'],
    [`${SCALED}-dataset-initializer-0`, 'dataset-initializer'],
  ])
    await create(send, `/apis/batch/v1/namespaces/${namespace}/jobs`, job(namespace, name, rj));
  const leases = `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`;
  await create(send, leases, {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: { name: LEASE_NAME, namespace },
    spec: { holderIdentity: 'bench-reconciler', leaseDurationSeconds: 15, renewTime: microTime(new Date()) },
  });
  const timer = setInterval(() => {
    void send(
      'PATCH',
      `${leases}/${LEASE_NAME}`,
      { spec: { renewTime: microTime(new Date()) } },
      'application/merge-patch+json',
    ).then((res) => {
      if (res.status !== 200) process.stderr.write(`renewing the Lease: HTTP ${res.status}\n`);
    });
  }, 2_000);
  return () => clearInterval(timer);
}
