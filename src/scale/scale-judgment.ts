// Can a numNodes change be carried out? One judgment for both processes: the webhook refuses a
// change it says cannot be, with the reason and the way out (src/scale/scale-admission.ts); the
// reconciler reports and leaves alone what it says cannot be (decide.ts). Pure. It answers for
// the TrainJob as it would be stored (its new numNodes), the runtime Trainer builds it from and
// its JobSet as it is (absent: nothing to rebuild, Trainer builds the new count from the start).
//
// The rules follow Trainer v2.3.0's plugins (github.com/kubeflow/trainer/v2@v2.3.0/pkg/runtime/
// framework/plugins/) and JobSet v0.12.0's webhook: see each reason below.
import { ANCESTOR_LABEL, ANCESTOR_TRAINER, NODE, type Mode } from '../api/names.ts';
import { isAbsent, runtimeLabel, type JobSet, type Runtime, type TrainJob } from '../api/objects.ts';
import type { TrainerLine } from '../api/trainer-line.ts';
import { neverReconciledAgain } from './finished.ts';
import { mlPolicyOf, type MlPolicy } from './ml-policy.ts';

export type ScaleJudgment =
  /** The change is carried out: `how` says by whom, for the warning. */
  | { kind: 'carried-out'; policy: MlPolicy['kind']; how: string }
  /**
   * It cannot be: `reason` says why, `wayOut` what to do instead. Permanent for this job.
   * `general` is `reason` naming no object but the TrainJob ("its runtime", "its JobSet"), for an
   * answer to a caller not known to be the API server (scale-admission.ts); `wayOut` is built
   * from the TrainJob alone, so it suits both.
   */
  | { kind: 'refused'; reason: string; wayOut: string; general: string };

export interface ScaleFacts {
  mode: Mode;
  /** The installed Trainer line's rules (src/api/trainer-line.ts). */
  trainer: TrainerLine;
  /** The TrainJob with the new numNodes. */
  trainJob: TrainJob;
  runtime: Runtime;
  /** Its JobSet as it is; undefined when there is none (yet). */
  jobSet: JobSet | undefined;
  /** The reconciler asks the API server (a dry-run create) whether the JobSet is re-created beside its claims. */
  claimsJudgedLive?: boolean;
}

/**
 * ML policies whose JobSet the standalone builder (trainer-jobset/) builds as Trainer does. MPI
 * needs Trainer's SSH Secret and hostfile ConfigMap, Flux its entrypoint ConfigMap and curve
 * Secret: none of those is built here.
 */
export const STANDALONE_POLICIES: ReadonlySet<MlPolicy['kind']> = new Set(['torch', 'plain', 'jax', 'xgboost']);

/**
 * Gang schedulers whose PodGroup follows a rebuild in companion mode. Trainer v2.3.0 re-applies an
 * existing PodGroup only while the TrainJob is suspended and stops at the first failed apply
 * (plugins/coscheduling, plugins/volcano), so the rebuild deletes a stale PodGroup with the JobSet
 * and Trainer creates it from the new count (podgroup.ts). Standalone mode builds no PodGroup.
 */
export const GANG_SCHEDULERS_FOLLOWED: ReadonlySet<string> = new Set(['coscheduling', 'volcano']);

/**
 * How a revert is made on a running job: the CRD's rule lets numNodes change only while the
 * TrainJob is suspended before or after the update, so numNodes alone is refused (422, before any
 * webhook); with the suspend in the same update it is admitted, and the resume after it changes no
 * count. `settle --revert` makes the same two updates.
 */
export const REVERT_RUNNING = 'if it runs, with "suspend": true in the same update, then resume it';

const WAY_OUT_NEW_JOB = (n: string): string =>
  `create a new TrainJob with numNodes ${n} (it resumes from the checkpoint if the training writes one), or set numNodes back (${REVERT_RUNNING})`;

/** The refusal, its reason told twice: naming the runtime and JobSet (`named`), and naming neither. */
function refused(reason: (named: boolean) => string, wayOut: string): ScaleJudgment {
  return { kind: 'refused', reason: reason(true), wayOut, general: reason(false) };
}

const countText = (tj: TrainJob): string =>
  tj.spec?.trainer?.numNodes === undefined ? "the runtime's default" : String(tj.spec.trainer.numNodes);

/** The replicated job the count lands in, present in the runtime (MPI: `node`; else the trainer ancestor). */
function countBearingJob(runtime: Runtime, policy: MlPolicy): string | undefined {
  const jobs = runtime.spec.template?.spec?.replicatedJobs ?? [];
  const job =
    policy.kind === 'mpi'
      ? jobs.find((r) => r.name === NODE)
      : jobs.find((r) => r.template?.metadata?.labels?.[ANCESTOR_LABEL] === ANCESTOR_TRAINER);
  return job?.name;
}

function gangScheduler(runtime: Runtime): string | undefined {
  const policy = runtime.spec.podGroupPolicy;
  if (!policy || typeof policy !== 'object') return undefined;
  const [source] = Object.keys(policy).filter((k) => !isAbsent((policy as Record<string, unknown>)[k]));
  return source;
}

/** Whether the count change can be carried out, in the order a user would fix things. */
// eslint-disable-next-line complexity -- one refusal per way a rebuild cannot be carried out, in order
export function judgeScale({ mode, trainer, trainJob, runtime, jobSet, claimsJudgedLive }: ScaleFacts): ScaleJudgment {
  const n = countText(trainJob);
  const policy = mlPolicyOf(runtime);
  const rt = (named: boolean) => (named ? runtimeLabel(runtime) : 'its runtime');
  if (policy.kind === 'unknown')
    return refused(
      (named) =>
        `the ML policy ${named ? `"${policy.name}" ` : ''}of ${rt(named)} is not one whose JobSet can be rebuilt (torch, mpi, jax, xgboost, flux, or none)`,
      WAY_OUT_NEW_JOB(n),
    );
  // Trainer v2.3.0's Flux plugin reads spec.trainer.numNodes without a nil check (flux.go
  // generateFluxEntrypoint): without it every reconcile of the job fails.
  if (policy.kind === 'flux' && trainJob.spec?.trainer?.numNodes === undefined)
    return refused(
      (named) =>
        `${rt(named)} uses the Flux policy, whose plugin in Trainer v2.3.0 needs spec.trainer.numNodes set: without it the JobSet is never built`,
      'set numNodes to a count instead of removing it',
    );
  const job = countBearingJob(runtime, policy);
  if (!job)
    return refused(
      (named) =>
        policy.kind === 'mpi'
          ? `${rt(named)} has no replicated job named "${NODE}", where Trainer puts an MPI job's node count`
          : `${rt(named)} has no replicated job labelled ${ANCESTOR_LABEL}=${ANCESTOR_TRAINER}, so Trainer puts numNodes nowhere`,
      'leave numNodes as it is, or use a runtime with such a job',
    );
  if (mode === 'standalone' && !trainer.standaloneBuilds)
    return refused(
      () => standaloneRefusal(trainer),
      `run Kubeflow Trainer's controller with the reconciler in companion mode, or ${WAY_OUT_NEW_JOB(n)}`,
    );
  if (mode === 'standalone' && !STANDALONE_POLICIES.has(policy.kind))
    return refused(
      () =>
        `in standalone mode the reconciler builds the JobSet itself, and it does not build the ${policy.kind} policy's JobSet (only ${[...STANDALONE_POLICIES].join(', ')})`,
      WAY_OUT_NEW_JOB(n),
    );
  if (!jobSet) return carriedOut(mode, policy, 'Trainer builds the JobSet with the new count');
  if (neverReconciledAgain(trainJob, jobSet, trainer))
    return refused(
      (named) =>
        `${neverReconciledAgain(trainJob, jobSet, trainer, named)}: ${trainer.label} never reconciles it again, so its JobSet is never rebuilt`,
      WAY_OUT_NEW_JOB(n),
    );
  const claims = jobSet.spec?.volumeClaimPolicies ?? runtime.spec.template?.spec?.volumeClaimPolicies ?? [];
  if (claims.length > 0 && !claimsJudgedLive)
    return refused(
      (named) =>
        `${named ? `JobSet ${jobSet.metadata.name}` : 'its JobSet'} has workspace claims (spec.volumeClaimPolicies): JobSet v0.12.0 refuses to re-create it beside the existing claims (their retention defaults to Delete, and a bound claim never equals its template), and deleting the claims loses their data`,
      `copy the data out of the claims and ${WAY_OUT_NEW_JOB(n)}`,
    );
  const gang = gangScheduler(runtime);
  if (gang && (mode === 'standalone' || !GANG_SCHEDULERS_FOLLOWED.has(gang)))
    return refused(
      (named) =>
        mode === 'standalone'
          ? `${rt(named)} is gang-scheduled (podGroupPolicy ${gang}), and in standalone mode the reconciler builds no PodGroup, so the gang would not follow the new count`
          : `${rt(named)} is gang-scheduled by ${gang}, whose PodGroup is not rebuilt (only coscheduling's and Volcano's are)`,
      WAY_OUT_NEW_JOB(n),
    );
  // A second run of the data-cache initializer is made safe by the rebuild itself (initializers.ts
  // deletes the cache objects its first run made); the other stock initializers are idempotent.
  return carriedOut(mode, policy, `JobSet ${jobSet.metadata.name} is rebuilt`);
}

/**
 * Why standalone mode builds no JobSet under this line: it builds Trainer v2.3.0's JobSets, which
 * main builds the same (src/api/trainer-line.ts); v2.2.1 builds them differently, and an unknown
 * line's build is not known.
 */
export function standaloneRefusal(trainer: TrainerLine): string {
  return trainer.id === 'unknown'
    ? `in standalone mode the reconciler builds the JobSet itself as Trainer v2.3.0 and main@8c0f5059 build it, and the installed TrainJob CRD is ${trainer.label}'s, whose JobSet is not known to be the same`
    : `in standalone mode the reconciler builds the JobSet itself as Trainer v2.3.0 and main@8c0f5059 build it, and ${trainer.label} builds it differently (the node container's resources replaced by resourcesPerNode, no torch envInjection)`;
}

function carriedOut(mode: Mode, policy: MlPolicy, how: string): ScaleJudgment {
  const builder = mode === 'standalone' ? 'by the reconciler' : 'by Trainer';
  return { kind: 'carried-out', policy: policy.kind, how: `${how} (${policy.kind}, ${builder})` };
}
