// The world pods run in: the real kube-scheduler binds pods to a few fake Nodes, and KWOK plays
// their kubelets with our own Stages (kwok/stages.yaml: fixed delays, no jitter). Started by
// startControlPlane beside kube-controller-manager (whose node lifecycle, pod GC, PV and Job
// controllers complete the picture).
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ControlPlaneBinaries } from './binaries.ts';
import type { KubectlOptions, KubectlResult } from './kubectl.ts';
import type { ServingCert } from './pki.ts';
import { kwokArgs, schedulerArgs } from './flags.ts';
import type { StartProcessOptions, TrackedProcess } from './process.ts';
import { freePort, httpsGet, waitFor } from './wait.ts';

/** What the world needs of the control plane it joins; controlplane.ts's ControlPlane extends it. */
export interface WorldHost {
  kubeconfigPath: string;
  kubectl(args: string[], opts?: KubectlOptions): Promise<KubectlResult>;
  /** Server-side apply of YAML text or a YAML file (field manager e2e-harness, forced). */
  applyYaml(textOrFile: string, opts?: KubectlOptions): Promise<KubectlResult>;
  issueServingCert(name: string): Promise<ServingCert>;
  /** Environment for a child process: admin KUBECONFIG, no proxy settings. */
  childEnv(extra?: NodeJS.ProcessEnv): NodeJS.ProcessEnv;
  /** A process stopped by stop() (before the control plane), logging to logsDir/<name>.log. */
  startProcess(name: string, cmd: string, args: string[], opts?: StartProcessOptions): TrackedProcess;
}

export const stagesFile = path.join(path.dirname(fileURLToPath(import.meta.url)), 'kwok/stages.yaml');

/** Nodes with this label are KWOK's; every node the world makes carries it. */
export const NODE_LABEL = { key: 'world.trainjob-webhook.test/kwok', value: 'true' } as const;
/** The default StorageClass, provisioned and bound by KWOK's volume stages. */
export const STORAGE_CLASS = 'kwok-volume';

export interface NodeShape {
  name: string;
  cpu?: string;
  memory?: string;
  gpus?: number;
  pods?: number;
  /** E.g. to keep every pod off it but those that tolerate it. */
  taints?: { key: string; value?: string; effect: 'NoSchedule' | 'NoExecute' | 'PreferNoSchedule' }[];
}

export interface WorldOptions {
  /** The fake nodes (default: three, world-0..2, 32 CPUs, 256Gi, 8 nvidia.com/gpu, 110 pods). */
  nodes?: NodeShape[];
}

export interface World {
  scheduler: TrackedProcess;
  kwok: TrackedProcess;
  /** Names of the nodes made at start. */
  nodes: string[];
  /** Makes a fake node and waits until it is Ready. */
  addNode(shape: NodeShape): Promise<void>;
}

export const defaultNodes = (n = 3): NodeShape[] => Array.from({ length: n }, (_, i) => ({ name: `world-${i}` }));

// A stable address per name in 10.1.0.0/16 (pods get theirs from kwok's --cidr).
function nodeIP(name: string): string {
  let h = 0;
  for (const c of name) h = (h * 31 + c.charCodeAt(0)) >>> 0;
  return `10.1.${(h >>> 8) % 256}.${(h % 254) + 1}`;
}

export function nodeObject(shape: NodeShape): Record<string, unknown> {
  const resources = {
    cpu: shape.cpu ?? '32',
    memory: shape.memory ?? '256Gi',
    pods: String(shape.pods ?? 110),
    'nvidia.com/gpu': String(shape.gpus ?? 8),
    'ephemeral-storage': '1Ti',
  };
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: shape.name,
      labels: {
        [NODE_LABEL.key]: NODE_LABEL.value,
        'kubernetes.io/hostname': shape.name,
        'kubernetes.io/os': 'linux',
        'kubernetes.io/arch': 'amd64',
        type: 'kwok',
      },
      annotations: { 'node.alpha.kubernetes.io/ttl': '0', 'kwok.x-k8s.io/node': 'fake' },
    },
    spec: { taints: shape.taints ?? [] },
    // A kubelet registers its node with its capacity and addresses; KWOK's node-initialize keeps them.
    status: {
      capacity: resources,
      allocatable: resources,
      addresses: [
        { type: 'InternalIP', address: nodeIP(shape.name) },
        { type: 'Hostname', address: shape.name },
      ],
    },
  };
}

const storageClass = {
  apiVersion: 'storage.k8s.io/v1',
  kind: 'StorageClass',
  metadata: { name: STORAGE_CLASS, annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' } },
  provisioner: 'kwok.x-k8s.io/volume',
  reclaimPolicy: 'Delete',
  volumeBindingMode: 'Immediate',
};

// Ready, and without the not-ready taint the API server puts on every new node (node lifecycle
// removes it once Ready), so the scheduler may use it at once.
async function nodeReady(cp: WorldHost, name: string): Promise<boolean> {
  const r = await cp.kubectl(
    ['get', 'node', name, '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].status} {.spec.taints[*].key}'],
    { check: false },
  );
  return r.code === 0 && r.stdout.startsWith('True') && !r.stdout.includes('node.kubernetes.io/not-ready');
}

export async function startWorld(
  cp: WorldHost,
  binaries: ControlPlaneBinaries,
  opts: WorldOptions = {},
  timeoutMs = 60_000,
): Promise<World> {
  // kube-scheduler, as the admin (like kube-controller-manager here: no per-component RBAC).
  const port = await freePort();
  const cert = await cp.issueServingCert('kube-scheduler');
  const scheduler = cp.startProcess(
    'kube-scheduler',
    binaries.kubeScheduler,
    schedulerArgs({ port, kubeconfig: cp.kubeconfigPath, servingCert: cert.certFile, servingKey: cert.keyFile }),
    { env: cp.childEnv() },
  );
  const kwok = cp.startProcess(
    'kwok',
    binaries.kwok,
    kwokArgs({
      kubeconfig: cp.kubeconfigPath,
      configFile: stagesFile,
      nodeLabelSelector: `${NODE_LABEL.key}=${NODE_LABEL.value}`,
    }),
    { env: cp.childEnv() },
  );
  await cp.applyYaml(JSON.stringify(storageClass) + '\n');
  await waitFor(
    'kube-scheduler /readyz',
    async () => (await httpsGet(`https://127.0.0.1:${port}/readyz`, { ca: cert.caPem })).status === 200,
    { timeoutMs, process: scheduler },
  );

  const addNode = async (shape: NodeShape) => {
    await cp.kubectl(['create', '-f', '-'], { input: JSON.stringify(nodeObject(shape)) });
    await waitFor(`node ${shape.name} Ready`, () => nodeReady(cp, shape.name), { timeoutMs, process: kwok });
  };
  const shapes = opts.nodes ?? defaultNodes();
  await Promise.all(shapes.map(addNode));
  return { scheduler, kwok, nodes: shapes.map((s) => s.name), addNode };
}
