// Whether the end-to-end suites can run here, and making the binaries when Go can build them.
// Under CI=true a missing control plane is an error (the suites must run there), never a skip.
import { spawn, spawnSync } from 'node:child_process';
import {
  buildScript,
  currentCell,
  goAvailable,
  kueueComponent,
  locateControlPlaneBinaries,
  locateControllerBinaries,
  locateKueueBinaries,
  locateCoschedulingBinaries,
  type CoschedulingBinaries,
  type ControlPlaneBinaries,
  type ControllerBinaries,
  type KueueBinaries,
  type Lookup,
  type TrainerLine,
} from './binaries.ts';

export type Availability = { available: true; needsBuild: boolean } | { available: false; reason: string };

const HOW_TO_ENABLE =
  'run `hack/build-binaries.sh controlplane` (needs Go; builds from the Go module proxy into ~/.cache/trainjob-webhook/bin), ' +
  'or set KUBEBUILDER_ASSETS to an envtest assets folder plus TEST_ASSET_KUBE_CONTROLLER_MANAGER, TEST_ASSET_KUBE_SCHEDULER and TEST_ASSET_KWOK';

function decide(lookup: Lookup<unknown>, what: string, howTo: string, env: NodeJS.ProcessEnv): Availability {
  if (lookup.found) return { available: true, needsBuild: false };
  // With Go at hand the harness builds what is missing (minutes, cold) unless told not to.
  if (goAvailable(env) && env.TJW_NO_BUILD !== '1') return { available: true, needsBuild: true };
  const reason = `${what} not available (missing ${lookup.missing.join(', ')}; looked in ${lookup.searched.join(', ')}); to enable: ${howTo}`;
  if (env.CI === 'true') throw new Error(`CI=true: the end-to-end suites must run, but ${reason}`);
  return { available: false, reason };
}

export function controlPlaneAvailability(env: NodeJS.ProcessEnv = process.env): Availability {
  return decide(
    locateControlPlaneBinaries(env),
    'real control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, kwok)',
    HOW_TO_ENABLE,
    env,
  );
}

/** The build-binaries.sh components that build a Trainer line's managers (main runs beside the default JobSet). */
const CONTROLLER_COMPONENTS: Readonly<Record<TrainerLine, readonly Component[]>> = {
  'v2.3.0': ['controllers'],
  'v2.2.1': ['previous'],
  main: ['controllers', 'main'],
};

/** Kubeflow Trainer's and JobSet's managers of a line, built by `hack/build-binaries.sh` (CONTROLLER_COMPONENTS). */
export function upstreamControllersAvailability(
  env: NodeJS.ProcessEnv = process.env,
  line: TrainerLine = currentCell(env).trainer,
): Availability {
  return decide(
    locateControllerBinaries(env, line),
    `upstream Trainer and JobSet controllers (Trainer ${line})`,
    `run \`hack/build-binaries.sh ${CONTROLLER_COMPONENTS[line].join(' ')}\` (needs Go)`,
    env,
  );
}

/** `unshare` flags for a private mount namespace (and, without root, a user namespace mapping us to root). */
export function mountNamespaceFlags(): string[] {
  return ['--mount', '--propagation', 'private', ...(process.getuid?.() !== 0 ? ['--map-root-user'] : [])];
}

// Kueue runs in a mount namespace of its own (upstream.ts says why); some sandboxes forbid one.
function mountNamespaceProblem(): string | undefined {
  const probe = spawnSync('unshare', [...mountNamespaceFlags(), 'true'], { stdio: 'ignore', timeout: 10_000 });
  if (probe.error) return `\`unshare\` (util-linux) could not run: ${probe.error.message}`;
  if (probe.status !== 0)
    return `\`unshare ${mountNamespaceFlags().join(' ')} true\` failed (exit ${probe.status}): this machine forbids the mount namespace Kueue's manager runs in`;
  return undefined;
}

/** The cell's Kueue, built by `hack/build-binaries.sh kueue` (or `kueue-next`); for the suites that queue jobs. */
export function kueueAvailability(
  env: NodeJS.ProcessEnv = process.env,
  namespaceProblem = mountNamespaceProblem,
): Availability {
  const binaries = decide(
    locateKueueBinaries(env),
    'Kueue',
    `run \`hack/build-binaries.sh ${kueueComponent(currentCell(env))}\` (needs Go), or set TEST_ASSET_KUEUE`,
    env,
  );
  const problem = binaries.available ? namespaceProblem() : undefined;
  if (!problem) return binaries;
  if (env.CI === 'true') throw new Error(`CI=true: the end-to-end suites must run, but Kueue cannot: ${problem}`);
  return { available: false, reason: `Kueue cannot run here: ${problem}` };
}

/** scheduler-plugins' scheduler and PodGroup CRD, built by `hack/build-binaries.sh coscheduling`. */
export function coschedulingAvailability(env: NodeJS.ProcessEnv = process.env): Availability {
  return decide(
    locateCoschedulingBinaries(env),
    "scheduler-plugins' scheduler (Coscheduling)",
    'run `hack/build-binaries.sh coscheduling` (needs Go), or set TEST_ASSET_COSCHEDULING_SCHEDULER and TEST_ASSET_COSCHEDULING_CRD',
    env,
  );
}

// Runs the build script with its progress on stderr (stdout belongs to the test reporter).
/** hack/build-binaries.sh's components (`next`: the matrix's other Kubernetes; `previous`, `main`: other Trainers). */
type Component =
  'controlplane' | 'controllers' | 'kueue' | 'kueue-next' | 'coscheduling' | 'next' | 'previous' | 'main';

async function runBuild(components: readonly Component[]): Promise<void> {
  const component = components.join(' ');
  process.stderr.write(`[harness] building missing ${component} binaries with ${buildScript} (cold: many minutes)\n`);
  const child = spawn('bash', [buildScript, ...components], { stdio: ['ignore', 2, 2] });
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', resolve);
  });
  if (code !== 0) throw new Error(`${buildScript} ${component} failed with exit code ${code}`);
}

async function ensure<T>(
  locate: () => Lookup<T>,
  components: readonly Component[],
  availability: Availability,
): Promise<T> {
  if (!availability.available) throw new Error(availability.reason);
  let lookup = locate();
  if (!lookup.found && availability.needsBuild) {
    await runBuild(components);
    lookup = locate();
  }
  if (!lookup.found)
    throw new Error(
      `${components.join(' ')} binaries still missing: ${lookup.missing.join(', ')} (looked in ${lookup.searched.join(', ')})`,
    );
  return lookup.paths;
}

/** The control plane's binaries, building them first when missing and Go is available. */
export function ensureControlPlaneBinaries(env: NodeJS.ProcessEnv = process.env): Promise<ControlPlaneBinaries> {
  // Another Kubernetes than the default cell's is the `next` component (its kwok is controlplane's).
  const components: Component[] = currentCell(env).k8sMinor === '1.35' ? ['controlplane'] : ['controlplane', 'next'];
  return ensure(() => locateControlPlaneBinaries(env), components, controlPlaneAvailability(env));
}

/** Trainer's and JobSet's managers of a Trainer line (default: the current cell's). */
export function ensureControllerBinaries(
  env: NodeJS.ProcessEnv = process.env,
  line: TrainerLine = currentCell(env).trainer,
): Promise<ControllerBinaries> {
  return ensure(
    () => locateControllerBinaries(env, line),
    CONTROLLER_COMPONENTS[line],
    upstreamControllersAvailability(env, line),
  );
}

export function ensureKueueBinaries(env: NodeJS.ProcessEnv = process.env): Promise<KueueBinaries> {
  return ensure(() => locateKueueBinaries(env), [kueueComponent(currentCell(env))], kueueAvailability(env));
}

export function ensureCoschedulingBinaries(env: NodeJS.ProcessEnv = process.env): Promise<CoschedulingBinaries> {
  return ensure(() => locateCoschedulingBinaries(env), ['coscheduling'], coschedulingAvailability(env));
}

/**
 * A suite's `skip`: the reason of the first of `needs` that is not available, else false. Every
 * end-to-end suite needs the control plane; most also need the upstream controllers.
 */
export function skipUnless(...needs: Availability[]): string | false {
  const missing = needs.find((a) => !a.available);
  return missing && !missing.available ? missing.reason : false;
}
