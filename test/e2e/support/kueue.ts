// Kueue's queue in the world where pods run: one flavor on the KWOK nodes, a ClusterQueue with a
// CPU quota of QUOTA_NODES nodes, a LocalQueue; preemption by priority within it; and readers of
// what Kueue writes. Shared by the Kueue suites (kueue.test.ts, kubectl-trainjob-kueue.test.ts) and
// the version matrix's compatibility suite.
import { CustomObjectsApi } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { NODE_LABEL, waitFor, type ControlPlane } from '../../harness/index.ts';
import type { TrainJob } from '../../../src/api/objects.ts';

export type Obj = Record<string, any>;
export const KUEUE = { group: 'kueue.x-k8s.io', version: 'v1beta2' } as const;
export const QUEUE_LABEL = 'kueue.x-k8s.io/queue-name';
/** trainjob_controller.go: runtimePatchManagerName. */
export const KUEUE_PATCH_MANAGER = 'kueue.x-k8s.io/manager';
/** Each node pod requests this many CPUs; the ClusterQueue's quota holds QUOTA_NODES of them. */
export const CPU_PER_NODE = 8;
export const QUOTA_NODES = 4;

export const isTrue = (o: Obj | undefined, type: string) =>
  (o?.status?.conditions as Obj[] | undefined)?.some((c) => c.type === type && c.status === 'True') ?? false;
export const condition = (o: Obj | undefined, type: string) =>
  (o?.status?.conditions as Obj[] | undefined)?.find((c) => c.type === type);
export const kueuePatch = (tj: TrainJob) =>
  ((tj.spec?.runtimePatches ?? []) as Obj[]).find((p) => p.manager === KUEUE_PATCH_MANAGER);
export const podCount = (wl: Obj) => (wl.spec.podSets as Obj[]).reduce((n, ps) => n + ps.count, 0);
/** The label naming a Workload's WorkloadPriorityClass (pkg/controller/constants: WorkloadPriorityClassLabel). */
export const PRIORITY_LABEL = 'kueue.x-k8s.io/priority-class';

/** The queue: one flavor whose node labels Kueue writes into the TrainJob (pods then carry them as nodeSelector). */
export const queueObjects = (ns: string) =>
  [
    {
      apiVersion: `${KUEUE.group}/${KUEUE.version}`,
      kind: 'ResourceFlavor',
      metadata: { name: 'kwok' },
      spec: { nodeLabels: { [NODE_LABEL.key]: NODE_LABEL.value } },
    },
    {
      apiVersion: `${KUEUE.group}/${KUEUE.version}`,
      kind: 'ClusterQueue',
      metadata: { name: 'cluster-queue' },
      spec: {
        namespaceSelector: {},
        resourceGroups: [
          {
            coveredResources: ['cpu'],
            flavors: [{ name: 'kwok', resources: [{ name: 'cpu', nominalQuota: String(CPU_PER_NODE * QUOTA_NODES) }] }],
          },
        ],
      },
    },
    {
      apiVersion: `${KUEUE.group}/${KUEUE.version}`,
      kind: 'LocalQueue',
      metadata: { name: 'queue', namespace: ns },
      spec: { clusterQueue: 'cluster-queue' },
    },
  ]
    .map((o) => stringify(o))
    .join('---\n');

/** Applies the queue (queueObjects) in `ns` and waits until Kueue has the ClusterQueue Active. */
export async function startQueue(cp: ControlPlane, ns: string): Promise<void> {
  await cp.applyYaml(queueObjects(ns));
  const objects = cp.kubeConfig.makeApiClient(CustomObjectsApi);
  await waitFor('the ClusterQueue Active', async () =>
    isTrue(
      (await objects.getClusterCustomObject({ ...KUEUE, plural: 'clusterqueues', name: 'cluster-queue' })) as Obj,
      'Active',
    ),
  );
}

/** The WorkloadPriorityClass a preemptor names (PRIORITY_LABEL); its value is above the default 0. */
export const URGENT = 'urgent';

/**
 * Preemption within the queue: the WorkloadPriorityClass URGENT, and the ClusterQueue's
 * `withinClusterQueue: LowerPriority`, without which Kueue preempts nothing.
 */
export async function allowPreemption(cp: ControlPlane): Promise<void> {
  await cp.applyYaml(
    stringify({
      apiVersion: `${KUEUE.group}/${KUEUE.version}`,
      kind: 'WorkloadPriorityClass',
      metadata: { name: URGENT },
      value: 1000,
    }),
  );
  await cp.kubectl([
    'patch',
    'clusterqueue',
    'cluster-queue',
    '--type',
    'merge',
    '-p',
    JSON.stringify({ spec: { preemption: { withinClusterQueue: 'LowerPriority' } } }),
  ]);
}
