// Whether the webhook admits a numNodes change the rule table allows, from what it read of the
// cluster: the TrainJob's JobSet, its runtime and the reconciler's Lease. Pure. A change is
// admitted only when it will be carried out: refused for good when the judgment
// (scale-judgment.ts) says it cannot be, with the reason and the way out; refused for now
// (transient: it clears by itself) while no reconciler leads or a read failed. A change that
// rebuilds nothing (no JobSet yet, or back to the count the JobSet was built with) is admitted,
// with one exception: an MPI JobSet whose runtime is unreadable or gone cannot tell a revert from
// a change (runLauncherAsNode, which only the runtime says, puts numNodes or numNodes - 1 on its
// `node` job), so both are refused for now.
import { ANCESTOR_LABEL, ANCESTOR_TRAINER, NODE, RECONCILER_MODE_ANNOTATION, type Mode } from '../api/names.ts';
import {
  controllerOf,
  intOf,
  runtimeLabel,
  type JobSet,
  type ReplicatedJob,
  type Runtime,
  type TrainJob,
} from '../api/objects.ts';
import type { TrainerLine } from '../api/trainer-line.ts';
import { mlPolicyOf } from './ml-policy.ts';
import { judgeScale, REVERT_RUNNING } from './scale-judgment.ts';
import { isJobSetStale } from './stale.ts';

/** What a read of one object gave. */
export type Read<T> = { kind: 'found'; value: T } | { kind: 'absent' } | { kind: 'failed'; error: string };

/** The parts of a coordination.k8s.io/v1 Lease this reads. */
export interface LeaseView {
  metadata?: { name?: string; namespace?: string; annotations?: Record<string, string> };
  spec?: { holderIdentity?: string; leaseDurationSeconds?: number; renewTime?: string };
}

export interface ScaleAdmissionFacts {
  /** The installed Trainer line's rules: the line of the CRD in force (src/rules/policy.ts). */
  trainer: TrainerLine;
  /** The TrainJob as it would be stored (the new numNodes). */
  trainJob: TrainJob;
  jobSet: Read<JobSet>;
  runtime: Read<Runtime>;
  /** The reconciler's Lease; 'unchecked' when the webhook is told not to require a reconciler. */
  lease: Read<LeaseView> | 'unchecked';
  /** The mode judged for when no leader's Lease says (unchecked; offline `review --mode`). Default companion. */
  mode?: Mode;
  nowMs: number;
}

/**
 * A refusal's `reason` names what was read (the JobSet, the runtime, the Lease's holder, what a
 * read's error said); `general` says the same in general words, naming no object but the request's
 * TrainJob and no count read from the cluster, with what to do: the answer to a caller not known
 * to be the API server (anyone who reaches the port can send a review, issue 26), whose details
 * go to the webhook's log instead (scale-check.ts).
 */
export type ScaleAdmission =
  | { kind: 'admit'; note?: string }
  | { kind: 'refuse'; transient: boolean; reason: string; general: string; metric: string };

/**
 * Slack on the Lease's expiry for clock skew between the reconciler's node and the webhook's: a
 * Lease is fresh while renewTime + leaseDurationSeconds + this is in the future on our clock.
 */
export const LEASE_SKEW_MS = 5_000;

type Leader = { leading: true; mode: Mode; holder: string } | { leading: false; why: string };

/** Does a reconciler lead, judged from its Lease on our clock (with LEASE_SKEW_MS of slack)? */
export function leaderOf(lease: LeaseView | undefined, nowMs: number): Leader {
  if (!lease) return { leading: false, why: 'its Lease does not exist (no reconciler has started)' };
  const holder = lease.spec?.holderIdentity ?? '';
  if (!holder) return { leading: false, why: 'its Lease has no holder (the last leader stopped)' };
  const renewed = Date.parse(lease.spec?.renewTime ?? '');
  const seconds = lease.spec?.leaseDurationSeconds;
  if (!Number.isFinite(renewed) || typeof seconds !== 'number' || !(seconds > 0))
    return { leading: false, why: 'its Lease has no renewTime or leaseDurationSeconds' };
  const age = nowMs - renewed;
  if (-age > seconds * 1000 + LEASE_SKEW_MS)
    return {
      leading: false,
      why: `its Lease's renewTime lies ${Math.round(-age / 1000)} s ahead of this webhook's clock (the clocks of the reconciler's node and the webhook's disagree)`,
    };
  if (age > seconds * 1000 + LEASE_SKEW_MS)
    return {
      leading: false,
      why: `its Lease was last renewed ${Math.round(age / 1000)} s ago by ${holder} (it expires after ${seconds} s)`,
    };
  return { leading: true, mode: modeOf(lease) ?? 'companion', holder };
}

/** The mode the reconciler wrote on its Lease (the last holder's, whether it still leads or not). */
function modeOf(lease: LeaseView | undefined): Mode | undefined {
  const mode = lease?.metadata?.annotations?.[RECONCILER_MODE_ANNOTATION];
  return mode === 'standalone' || mode === 'companion' ? mode : undefined;
}

/** Whether the JobSet was built for the new count; for an MPI JobSet without its runtime, maybe not knowable. */
type Built = boolean | { cannotTell: string };

const replicatedJobsOf = (jobSet: JobSet): ReplicatedJob[] =>
  Array.isArray(jobSet.spec?.replicatedJobs) ? jobSet.spec.replicatedJobs : [];
const trainerJobOf = (jobs: ReplicatedJob[]) =>
  jobs.find((r) => r?.template?.metadata?.labels?.[ANCESTOR_LABEL] === ANCESTOR_TRAINER);

/** A `node` job beside the trainer job: the shape Trainer's MPI plugin builds (the launcher is the trainer job). */
function mpiNodeJob(jobs: ReplicatedJob[]): ReplicatedJob | undefined {
  const nodeJob = jobs.find((r) => r?.name === NODE);
  return nodeJob && nodeJob !== trainerJobOf(jobs) ? nodeJob : undefined;
}

/**
 * Is the new count the one the JobSet was built with, judged without the staleness check (the
 * runtime unreadable, gone, or one that cannot be judged)? Its trainer job's parallelism equals
 * numNodes (torch, JAX, XGBoost, Flux, PlainML). With an MPI `node` job beside it, the node job has
 * numNodes, or max(numNodes - 1, 1) with runLauncherAsNode (Trainer's MPI plugin; ml-policy.ts):
 * only an MPI runtime says which, and without one a count that matches either reading cannot be
 * told from a change (`cannotTell`, why), unless both readings give the same count (numNodes 1).
 */
function builtWithThisCount(trainJob: TrainJob, jobSet: JobSet, runtime: Read<Runtime>): Built {
  const n = intOf(trainJob.spec?.trainer?.numNodes);
  const jobs = replicatedJobsOf(jobSet);
  const parallelismOf = (r: ReplicatedJob | undefined) => intOf(r?.template?.spec?.parallelism);
  const trainerJob = trainerJobOf(jobs);
  const nodeJob = mpiNodeJob(jobs);
  if (n === undefined || !trainerJob) return false;
  if (nodeJob) return mpiBuiltWith(parallelismOf(nodeJob), n, runtime);
  return parallelismOf(trainerJob) === n;
}

/** Does an MPI `node` job of parallelism p have numNodes n, as the runtime's runLauncherAsNode says? */
function mpiBuiltWith(p: number | undefined, n: number, runtime: Read<Runtime>): Built {
  const policy = runtime.kind === 'found' ? mlPolicyOf(runtime.value) : undefined;
  if (policy?.kind === 'mpi') return p === (policy.runLauncherAsNode ? Math.max(n - 1, 1) : n);
  const asNode = p === Math.max(n - 1, 1);
  if (p === n && asNode) return true;
  if (p === undefined || (p !== n && !asNode)) return false;
  const [on, off] = p === n ? [p + 1, n] : [n, p];
  return {
    cannotTell: `a ${NODE} job of parallelism ${p}, which Trainer builds for numNodes ${on} with the runtime's runLauncherAsNode on and for ${off} with it off, so without the runtime numNodes ${n} cannot be told apart from a change (a revert included)`,
  };
}

const FOR_NOW = 'the change is refused for now and can be applied again in a few seconds';

const transient = (reason: string, general: string, metric: string): ScaleAdmission => ({
  kind: 'refuse',
  transient: true,
  reason: `${reason}; ${FOR_NOW}`,
  general: `${general}; ${FOR_NOW}`,
  metric,
});

const permanent = (reason: string, general: string, metric: string): ScaleAdmission => ({
  kind: 'refuse',
  transient: false,
  reason,
  general,
  metric,
});

/** Why an MPI JobSet without its runtime cannot tell a revert from a change, in general words. */
const CANNOT_TELL =
  'without the runtime its MPI JobSet cannot tell this count from a change (a revert included): only the runtime says whether the launcher runs as a node';

/** The runtime unreadable or gone, and the count not known to be the built one: refused, for now or for good. */
function withoutRuntime(
  f: ScaleAdmissionFacts,
  runtime: Exclude<Read<Runtime>, { kind: 'found' }>,
  jobSet: JobSet,
  built: Built,
): ScaleAdmission {
  const name = f.trainJob.metadata?.name ?? '';
  const ref = f.trainJob.spec?.runtimeRef;
  const refName = `${ref?.kind ?? 'ClusterTrainingRuntime'} ${ref?.name ?? '?'}`;
  const cannotTell = typeof built === 'object';
  if (runtime.kind === 'failed')
    return transient(
      `the runtime could not be read (${runtime.error})${cannotTell ? `; JobSet ${name} has ${built.cannotTell}` : ''}`,
      `its runtime could not be read (the webhook's log says why)${cannotTell ? `, and ${CANNOT_TELL}` : ''}`,
      'read-failed',
    );
  if (cannotTell)
    return transient(
      `the runtime ${refName} does not exist; JobSet ${name} has ${built.cannotTell}; restore the runtime`,
      `the runtime its spec.runtimeRef names does not exist, and ${CANNOT_TELL}; restore the runtime`,
      'no-runtime',
    );
  const wayOut = (js: string) =>
    `${js} cannot be rebuilt; restore the runtime, or set numNodes back (${REVERT_RUNNING}${mpiNodeJob(replicatedJobsOf(jobSet)) ? '; for an MPI JobSet, a revert to 2 or more waits for the runtime too: only it says whether the launcher runs as a node' : ''})`;
  return permanent(
    `the runtime ${refName} does not exist, so the change cannot be judged and ${wayOut(`JobSet ${name}`)}`,
    `the runtime its spec.runtimeRef names does not exist, so the change cannot be judged and ${wayOut('its JobSet')}`,
    'no-runtime',
  );
}

// eslint-disable-next-line complexity -- the reads' failures, then no rebuild, then the judgment, then the leader
export function admitScale(f: ScaleAdmissionFacts): ScaleAdmission {
  const name = f.trainJob.metadata?.name ?? '';
  if (f.jobSet.kind === 'failed')
    return transient(
      `JobSet ${name} could not be read (${f.jobSet.error})`,
      "its JobSet could not be read (the webhook's log says why)",
      'read-failed',
    );
  if (f.jobSet.kind === 'absent')
    return { kind: 'admit', note: 'no JobSet exists yet: it is built with the new count' };
  const jobSet = f.jobSet.value;
  const owner = controllerOf(jobSet.metadata);
  if (f.trainJob.metadata?.uid && owner?.uid !== f.trainJob.metadata.uid)
    return permanent(
      `JobSet ${name} is not controlled by this TrainJob (its controller is ${owner ? `${owner.kind} ${owner.name}` : 'none'}), so the reconciler leaves it alone and it would not be rebuilt; leave numNodes as it is`,
      "its JobSet is not controlled by this TrainJob, so the reconciler leaves it alone and it would not be rebuilt; leave numNodes as it is (the JobSet's metadata.ownerReferences say what controls it)",
      'not-ours',
    );
  const built = builtWithThisCount(f.trainJob, jobSet, f.runtime);
  if (f.runtime.kind !== 'found' && built === true)
    return { kind: 'admit', note: `JobSet ${name} already has this count: nothing is rebuilt` };
  if (f.runtime.kind !== 'found') return withoutRuntime(f, f.runtime, jobSet, built);
  const runtime = f.runtime.value;
  const staleness = isJobSetStale(f.trainJob, runtime, jobSet);
  if (staleness.verdict === 'current')
    return { kind: 'admit', note: `JobSet ${name} already has this count: nothing is rebuilt` };
  if (staleness.verdict === 'unknown' && built === true)
    return { kind: 'admit', note: `JobSet ${name} already has this count: nothing is rebuilt` };
  if (staleness.verdict === 'unknown')
    return permanent(
      `JobSet ${name} of ${runtimeLabel(runtime)} cannot be judged (${staleness.reason}), so it would not be rebuilt; leave numNodes as it is`,
      'its JobSet cannot be judged against its runtime (its replicated jobs are not the ones the runtime builds, or are malformed), so it would not be rebuilt; leave numNodes as it is',
      'unjudgeable',
    );
  const leader =
    f.lease === 'unchecked'
      ? undefined
      : f.lease.kind === 'found'
        ? leaderOf(f.lease.value, f.nowMs)
        : f.lease.kind === 'absent'
          ? leaderOf(undefined, f.nowMs)
          : undefined;
  const judged = judgeScale({
    mode: leader?.leading
      ? leader.mode
      : (modeOf(f.lease !== 'unchecked' && f.lease.kind === 'found' ? f.lease.value : undefined) ??
        f.mode ??
        'companion'),
    trainer: f.trainer,
    trainJob: f.trainJob,
    runtime,
    jobSet,
  });
  if (judged.kind === 'refused')
    return permanent(`${judged.reason}; ${judged.wayOut}`, `${judged.general}; ${judged.wayOut}`, 'cannot-rebuild');
  if (f.lease === 'unchecked') return { kind: 'admit', note: judged.how };
  if (f.lease.kind === 'failed')
    return transient(
      `the reconciler's Lease could not be read (${f.lease.error}), so no one may carry the rebuild out`,
      "the reconciler's Lease could not be read (the webhook's log says why), so no one may carry the rebuild out",
      'read-failed',
    );
  if (leader && !leader.leading)
    return transient(
      `no reconciler leads to carry the rebuild out: ${leader.why}`,
      "no reconciler leads to carry the rebuild out (its administrator finds why in the webhook's log)",
      'no-reconciler',
    );
  return { kind: 'admit', note: judged.how };
}
