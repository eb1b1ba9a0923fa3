// Where the real binaries are. Configuration (env, hack/versions.env) is read here, once, and
// nowhere else in the harness. Lookup order per binary, like envtest: an explicit
// TEST_ASSET_* path, then the KUBEBUILDER_ASSETS folder, then hack/build-binaries.sh's cache.
import { accessSync, constants, existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
/** The vendored upstream CRDs and runtimes (upstream/SOURCES.md says where each comes from). */
export const upstreamDir = path.resolve(projectRoot, 'upstream');
export const buildScript = path.join(projectRoot, 'hack/build-binaries.sh');

export interface Versions {
  k8s: string;
  etcd: string;
  trainer: string;
  jobset: string;
  kwok: string;
  kueue: string;
  schedulerPlugins: string;
}

export interface ControlPlaneBinaries {
  kubeApiserver: string;
  kubeControllerManager: string;
  kubeScheduler: string;
  etcd: string;
  kubectl: string;
  /** KWOK's controller: the fake nodes' kubelets (test/harness/world.ts). */
  kwok: string;
}

export interface ControllerBinaries {
  /** The Trainer line these are (a cell's, or the one an upgrade test asked for). */
  line: TrainerLine;
  trainer: string;
  jobset: string;
  /** Upstream webhook manifests copied by the build script beside each binary. */
  trainerManifests: string;
  jobsetManifests: string;
}

/** scheduler-plugins' kube-scheduler (the Coscheduling plugin) and its PodGroup CRD, kept beside it. */
export interface CoschedulingBinaries {
  scheduler: string;
  podGroupCrd: string;
}

/** Kueue's manager (its CRDs and webhook manifests are vendored in upstream/kueue-<version>/). */
export interface KueueBinaries {
  kueue: string;
}

export type Lookup<T> = { found: true; paths: T } | { found: false; missing: string[]; searched: string[] };

/** hack/versions.env's KEY=value lines. */
export function readVersionsFile(file = path.join(projectRoot, 'hack/versions.env')): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const m = /^\s*([A-Z0-9_]+)=(\S*)\s*$/.exec(line);
    if (m) vars[m[1]] = m[2].replace(/^["']|["']$/g, '');
  }
  return vars;
}

/** The Trainer lines of the version matrix: its previous release, the default, its main line. */
export type TrainerLine = 'v2.2.1' | 'v2.3.0' | 'main';
export const TRAINER_LINES: readonly TrainerLine[] = ['v2.2.1', 'v2.3.0', 'main'];

/** One cell of the version matrix: a Trainer line (with its JobSet) on a Kubernetes release. */
export interface Cell {
  /** e.g. `trainer-v2.3.0/k8s-v1.35.8`: what a failure names, what TJW_CELL selects. */
  name: string;
  trainer: TrainerLine;
  k8sMinor: '1.35' | '1.37';
}

/**
 * The cells CI runs (docs/versions.md, "Supported versions"): the first runs every suite, the others the
 * compatibility suite.
 */
export function matrixCells(file = path.join(projectRoot, 'hack/versions.env')): Cell[] {
  const v = readVersionsFile(file);
  const cell = (trainer: TrainerLine, k8sMinor: Cell['k8sMinor']): Cell => {
    const k8s = k8sMinor === '1.35' ? v.K8S_VERSION : v.K8S_NEXT_VERSION;
    return { name: `trainer-${trainer}/k8s-${k8s}`, trainer, k8sMinor };
  };
  return [
    cell('v2.3.0', '1.35'),
    cell('v2.3.0', '1.37'),
    cell('v2.2.1', '1.35'),
    cell('main', '1.35'),
    cell('main', '1.37'),
  ];
}

/** True for the default cell (the first of the matrix), which runs every suite. */
export function isDefaultCell(cell: Pick<Cell, 'name'>, file?: string): boolean {
  return cell.name === matrixCells(file)[0].name;
}

/** The cell this process runs in: TJW_CELL (a cell's name), else the default cell (the first). */
export function currentCell(env: NodeJS.ProcessEnv = process.env, file?: string): Cell {
  const cells = matrixCells(file);
  if (!env.TJW_CELL) return cells[0];
  const found = cells.find((c) => c.name === env.TJW_CELL);
  if (!found)
    throw new Error(`TJW_CELL=${env.TJW_CELL} is not a cell of the matrix (${cells.map((c) => c.name).join(', ')})`);
  return found;
}

/**
 * The versions of one cell (default: the current one): Kubernetes and the etcd it ships with, a
 * Trainer line and the JobSet its go.mod requires, and the Kueue of that Kubernetes (KUEUE_VERSION
 * on v1.35, KUEUE_NEXT_VERSION on the newer one: Kueue v0.19 is built against Kubernetes v1.36's
 * modules); KWOK and scheduler-plugins are the same in every cell.
 */
export function readVersions(
  file = path.join(projectRoot, 'hack/versions.env'),
  cell: Pick<Cell, 'trainer' | 'k8sMinor'> = currentCell(process.env, file),
): Versions {
  const vars = readVersionsFile(file);
  const need = (k: string): string => {
    if (!vars[k]) throw new Error(`${file}: ${k} is not set`);
    return vars[k];
  };
  const next = cell.k8sMinor === '1.37';
  const trainer = {
    'v2.2.1': () => ({ trainer: need('TRAINER_PREVIOUS_VERSION'), jobset: need('JOBSET_PREVIOUS_VERSION') }),
    'v2.3.0': () => ({ trainer: need('TRAINER_VERSION'), jobset: need('JOBSET_VERSION') }),
    main: () => ({ trainer: `main-${need('TRAINER_MAIN_COMMIT').slice(0, 8)}`, jobset: need('JOBSET_VERSION') }),
  }[cell.trainer]();
  return {
    k8s: need(next ? 'K8S_NEXT_VERSION' : 'K8S_VERSION'),
    etcd: need(next ? 'ETCD_NEXT_VERSION' : 'ETCD_VERSION'),
    ...trainer,
    kwok: need('KWOK_VERSION'),
    kueue: need(next ? 'KUEUE_NEXT_VERSION' : 'KUEUE_VERSION'),
    schedulerPlugins: need('SCHEDULER_PLUGINS_VERSION'),
  };
}

export function binCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.TJW_BIN_CACHE || path.join(env.HOME || homedir(), '.cache/trainjob-webhook/bin');
}

/** The folders hack/build-binaries.sh writes, keyed by version. */
export function cacheDirs(versions = readVersions(), env: NodeJS.ProcessEnv = process.env) {
  const root = binCacheDir(env);
  return {
    k8s: path.join(root, `k8s-${versions.k8s}`),
    etcd: path.join(root, `etcd-${versions.etcd}`),
    trainer: path.join(root, `trainer-${versions.trainer}`),
    jobset: path.join(root, `jobset-${versions.jobset}`),
    kwok: path.join(root, `kwok-${versions.kwok}`),
    kueue: path.join(root, `kueue-${versions.kueue}`),
    coscheduling: path.join(root, `scheduler-plugins-${versions.schedulerPlugins}`),
  };
}

export function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

// First existing executable among the candidates; an explicit env path that is not
// executable is an error of configuration, reported rather than silently skipped.
function pick(explicit: string | undefined, candidates: string[], searched: string[]): string | undefined {
  if (explicit) {
    searched.push(explicit);
    return isExecutable(explicit) ? explicit : undefined;
  }
  searched.push(...candidates);
  return candidates.find(isExecutable);
}

function lookup<K extends string>(
  specs: Record<K, { env: string; candidates: string[] }>,
  env: NodeJS.ProcessEnv,
): Lookup<Record<K, string>> {
  const paths = {} as Record<K, string>;
  const missing: string[] = [];
  const searched: string[] = [];
  for (const key of Object.keys(specs) as K[]) {
    const found = pick(env[specs[key].env], specs[key].candidates, searched);
    if (found) paths[key] = found;
    else missing.push(path.basename(specs[key].candidates.at(-1) ?? key));
  }
  return missing.length ? { found: false, missing, searched } : { found: true, paths };
}

export function locateControlPlaneBinaries(env: NodeJS.ProcessEnv = process.env): Lookup<ControlPlaneBinaries> {
  const dirs = cacheDirs(readVersions(undefined, currentCell(env)), env);
  const assets = env.KUBEBUILDER_ASSETS;
  // envtest's assets hold etcd, kube-apiserver and kubectl but no kube-controller-manager,
  // kube-scheduler or kwok: those then come from TEST_ASSET_* or the build cache.
  const spec = (envName: string, name: string, cacheDir: string) => ({
    env: envName,
    candidates: [...(assets ? [path.join(assets, name)] : []), path.join(cacheDir, name)],
  });
  return lookup(
    {
      kubeApiserver: spec('TEST_ASSET_KUBE_APISERVER', 'kube-apiserver', dirs.k8s),
      kubeControllerManager: spec('TEST_ASSET_KUBE_CONTROLLER_MANAGER', 'kube-controller-manager', dirs.k8s),
      kubeScheduler: spec('TEST_ASSET_KUBE_SCHEDULER', 'kube-scheduler', dirs.k8s),
      etcd: spec('TEST_ASSET_ETCD', 'etcd', dirs.etcd),
      kubectl: spec('TEST_ASSET_KUBECTL', 'kubectl', dirs.k8s),
      kwok: { env: 'TEST_ASSET_KWOK', candidates: [path.join(dirs.kwok, 'kwok')] },
    },
    env,
  );
}

/** Trainer's and JobSet's managers of a Trainer line (default: the current cell's). */
export function locateControllerBinaries(
  env: NodeJS.ProcessEnv = process.env,
  line: TrainerLine = currentCell(env).trainer,
): Lookup<ControllerBinaries> {
  const dirs = cacheDirs(readVersions(undefined, { trainer: line, k8sMinor: currentCell(env).k8sMinor }), env);
  const found = lookup(
    {
      trainer: {
        env: 'TEST_ASSET_TRAINER_CONTROLLER_MANAGER',
        candidates: [path.join(dirs.trainer, 'trainer-controller-manager')],
      },
      jobset: {
        env: 'TEST_ASSET_JOBSET_CONTROLLER_MANAGER',
        candidates: [path.join(dirs.jobset, 'jobset-controller-manager')],
      },
    },
    env,
  );
  if (!found.found) return found;
  // TEST_ASSET_UPSTREAM_WEBHOOK_MANIFESTS: one folder holding jobset/ and trainer/.
  const given = env.TEST_ASSET_UPSTREAM_WEBHOOK_MANIFESTS;
  const trainerManifests = given ? path.join(given, 'trainer') : path.join(dirs.trainer, 'manifests');
  const jobsetManifests = given ? path.join(given, 'jobset') : path.join(dirs.jobset, 'manifests');
  const absent = [trainerManifests, jobsetManifests].filter((d) => !existsSync(path.join(d, 'manifests.yaml')));
  if (absent.length > 0) return { found: false, missing: ['upstream webhook manifests'], searched: absent };
  return { found: true, paths: { ...found.paths, line, trainerManifests, jobsetManifests } };
}

/** hack/build-binaries.sh's component that builds a cell's Kueue (readVersions: it follows the Kubernetes). */
export function kueueComponent(cell: Pick<Cell, 'k8sMinor'>): 'kueue' | 'kueue-next' {
  return cell.k8sMinor === '1.35' ? 'kueue' : 'kueue-next';
}

/** Kueue's manager of the current cell (readVersions: KUEUE_VERSION or KUEUE_NEXT_VERSION). */
export function locateKueueBinaries(env: NodeJS.ProcessEnv = process.env): Lookup<KueueBinaries> {
  return lookup(
    {
      kueue: {
        env: 'TEST_ASSET_KUEUE',
        candidates: [path.join(cacheDirs(readVersions(undefined, currentCell(env)), env).kueue, 'kueue')],
      },
    },
    env,
  );
}

export function locateCoschedulingBinaries(env: NodeJS.ProcessEnv = process.env): Lookup<CoschedulingBinaries> {
  const dir = cacheDirs(readVersions(undefined, currentCell(env)), env).coscheduling;
  const found = lookup(
    { scheduler: { env: 'TEST_ASSET_COSCHEDULING_SCHEDULER', candidates: [path.join(dir, 'kube-scheduler')] } },
    env,
  );
  if (!found.found) return found;
  const podGroupCrd = env.TEST_ASSET_COSCHEDULING_CRD || path.join(dir, 'manifests/podgroups.yaml');
  if (!existsSync(podGroupCrd)) return { found: false, missing: ['PodGroup CRD'], searched: [podGroupCrd] };
  return { found: true, paths: { ...found.paths, podGroupCrd } };
}

/** True when a `go` command is on PATH, so the build script can make missing binaries. */
export function goAvailable(env: NodeJS.ProcessEnv = process.env): boolean {
  return (env.PATH ?? '').split(path.delimiter).some((dir) => dir && isExecutable(path.join(dir, 'go')));
}
