// Installing the project's kustomize overlays into the test control plane: rendered with the
// harness's kubectl (its built-in kustomize), applied server-side, and a ServiceAccount's own
// token (TokenRequest) for processes that run as the installed account.
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import {
  freePorts,
  httpGet,
  projectRoot,
  waitFor,
  type ControlPlane,
  type TrackedProcess,
} from '../../harness/index.ts';

export type Obj = Record<string, any>;

export const manifestsDir = path.join(projectRoot, 'manifests');

/** `kubectl kustomize DIR`, parsed. */
export async function renderOverlay(cp: ControlPlane, dir: string): Promise<Obj[]> {
  const out = await cp.kubectl(['kustomize', dir]);
  return parseAllDocuments(out.stdout)
    .map((d) => d.toJSON() as Obj | null)
    .filter((d): d is Obj => !!d?.kind);
}

/**
 * An overlay of the user's own in a temp folder: `body` is a kustomization whose `MANIFESTS`
 * stands for the relative path to manifests/ (kustomize takes directories outside the root,
 * but only by relative path).
 */
export async function userOverlay(cp: ControlPlane, name: string, body: string): Promise<string> {
  const dir = await cp.tempDir(name);
  await writeFile(path.join(dir, 'kustomization.yaml'), body.replaceAll('MANIFESTS', path.relative(dir, manifestsDir)));
  return dir;
}

export const toYaml = (docs: Obj[]): string => docs.map((d) => stringify(d)).join('---\n');

export const byKind = (docs: Obj[], kind: string, name?: string): Obj[] =>
  docs.filter((d) => d.kind === kind && (name === undefined || d.metadata?.name === name));

/** A kubeconfig that authenticates with a fresh token of the ServiceAccount (TokenRequest). */
export async function serviceAccountKubeconfig(cp: ControlPlane, namespace: string, name: string): Promise<string> {
  const token = (await cp.kubectl(['create', 'token', name, '-n', namespace, '--duration', '2h'])).stdout.trim();
  const file = path.join(await cp.tempDir(`sa-${namespace}-${name}`), 'kubeconfig');
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'test',
        cluster: { server: cp.server, 'certificate-authority-data': Buffer.from(cp.caPem).toString('base64') },
      },
    ],
    users: [{ name, user: { token } }],
    contexts: [{ name: 'test', context: { cluster: 'test', user: name, namespace } }],
    'current-context': 'test',
  };
  await writeFile(file, stringify(config), { mode: 0o600 });
  return file;
}

/** Every webhook of the configurations pointed at 127.0.0.1:port by URL, with no caBundle (the rotation injects it). */
export function pointAtLoopback(configs: Obj[], port: number): Obj[] {
  return configs.map((c) => ({
    ...c,
    webhooks: c.webhooks.map((w: Obj) => ({
      ...w,
      clientConfig: { url: `https://127.0.0.1:${port}${w.clientConfig.service.path}` },
    })),
  }));
}

/** The listening ports a container's args name (a pod has its own network namespace; here they get free ports). */
const PORT_FLAGS = ['--port', '--ops-port', '--handoff-port'];

export interface PodContainerProcess {
  name: string;
  proc: TrackedProcess;
  /** The container's rendered args as run (ports and mount paths of this machine, plus the run's additions). */
  args: string[];
  /** A rendered port (container port or flag value) to the port it got here. */
  port(rendered: number): number;
  /** /readyz on the container's ops port answers 200. */
  ready(): Promise<boolean>;
  /** Prometheus samples of the ops port, summed over the label sets matching the filter. */
  metric(name: string, labelFilter?: RegExp): Promise<number>;
}

export interface PodRunOptions {
  /** A kubeconfig per ServiceAccount name (the pod's serviceAccountName picks one). */
  kubeconfigs: Record<string, string>;
  /**
   * Args a container gets after its rendered ones, by container name (what a pod would have had
   * from its surroundings).
   */
  extraArgs?: Record<string, string[]>;
  /** Containers of the pod not to run. */
  skip?: string[];
  /** Rendered ports that must get a given port here (one a webhook configuration already calls). */
  fixedPorts?: Record<number, number>;
}

/**
 * Runs the containers of a rendered Deployment's pod as processes of `bin/trainjob-webhook.js`
 * with the container's own args, environment (the downward API's namespace) and mounts, and the
 * ServiceAccount's token: every listening port the args name gets one free port (the same in
 * every container of the pod, so loopback between them works as in the pod), every mount path a
 * folder of its volume (shared by the pod's containers).
 */
export async function runPod(cp: ControlPlane, deployment: Obj, opts: PodRunOptions): Promise<PodContainerProcess[]> {
  const spec = deployment.spec.template.spec;
  const namespace: string = deployment.metadata.namespace;
  const kubeconfig = opts.kubeconfigs[spec.serviceAccountName];
  if (!kubeconfig) throw new Error(`no kubeconfig for the ServiceAccount ${spec.serviceAccountName}`);
  const containers: Obj[] = spec.containers.filter((c: Obj) => !(opts.skip ?? []).includes(c.name));
  // Ports: every value of a port flag and every named container port, renumbered once per pod.
  const rendered = new Set<number>();
  for (const c of containers) {
    const args: string[] = c.args ?? [];
    args.forEach((a, i) => PORT_FLAGS.includes(args[i - 1]) && rendered.add(Number(a)));
    for (const p of c.ports ?? []) rendered.add(p.containerPort);
  }
  const free = await freePorts(rendered.size);
  const ports = new Map([...rendered].map((p, i) => [p, opts.fixedPorts?.[p] ?? free[i]]));
  const volumes = new Map<string, string>();
  for (const v of spec.volumes ?? []) volumes.set(v.name, await cp.tempDir(`${deployment.metadata.name}-${v.name}`));

  const localArgs = (c: Obj): string[] =>
    (c.args as string[]).map((a, i, all) => {
      if (PORT_FLAGS.includes(all[i - 1])) return String(ports.get(Number(a)));
      const url = /^(https?:\/\/127\.0\.0\.1:)(\d+)(\/.*)?$/.exec(a);
      if (url && ports.has(Number(url[2]))) return `${url[1]}${ports.get(Number(url[2]))}${url[3] ?? ''}`;
      const mount = (c.volumeMounts ?? []).find((m: Obj) => a === m.mountPath || a.startsWith(`${m.mountPath}/`));
      return mount ? volumes.get(mount.name)! + a.slice(mount.mountPath.length) : a;
    });
  const envOf = (c: Obj): Record<string, string> =>
    Object.fromEntries(
      ((c.env ?? []) as Obj[]).map((e) => {
        if (e.value !== undefined) return [e.name, String(e.value)];
        if (e.valueFrom?.fieldRef?.fieldPath === 'metadata.namespace') return [e.name, namespace];
        throw new Error(`container ${c.name}: env ${e.name} from ${JSON.stringify(e.valueFrom)} is not emulated`);
      }),
    );
  const opsPortOf = (c: Obj): number | undefined => {
    const named = (c.ports ?? []).find((p: Obj) => /ops$/.test(p.name));
    return named ? ports.get(named.containerPort) : undefined;
  };

  const out: PodContainerProcess[] = [];
  for (const c of containers) {
    const args = [...localArgs(c), '--kubeconfig', kubeconfig, ...(opts.extraArgs?.[c.name] ?? [])];
    const name = `${deployment.metadata.name}-${c.name}`;
    const proc = cp.startProcess(name, process.execPath, [path.join(projectRoot, 'bin/trainjob-webhook.js'), ...args], {
      env: cp.childEnv(envOf(c)),
      cwd: projectRoot,
      stopTimeoutMs: 10_000,
    });
    const ops = opsPortOf(c);
    out.push({
      name: c.name,
      proc,
      args,
      port: (p) => {
        const local = ports.get(p);
        if (local === undefined) throw new Error(`port ${p} is not one of the pod's`);
        return local;
      },
      ready: async () =>
        ops !== undefined &&
        (await httpGet(`http://127.0.0.1:${ops}/readyz`).catch(() => ({ status: 0 }))).status === 200,
      metric: async (metric, labelFilter) =>
        (await httpGet(`http://127.0.0.1:${ops}/metrics`)).body
          .split('\n')
          .filter(
            (l) => (l.startsWith(`${metric} `) || l.startsWith(`${metric}{`)) && (!labelFilter || labelFilter.test(l)),
          )
          .reduce((sum, l) => sum + Number(l.split(' ').pop()), 0),
    });
  }
  for (const p of out) await waitFor(`${p.proc.name} ready`, () => p.ready(), { process: p.proc, timeoutMs: 60_000 });
  return out;
}
