// The vocabulary between the pure decision (decide.ts) and the I/O edge (reconcile.ts): what was
// observed, what more to read, and the ordered steps to take.
import type { TrainerLine } from '../api/trainer-line.ts';
import type { Mode } from '../api/names.ts';
import type { Job, JobSet, PersistentVolumeClaim, Pod, Runtime, TrainJob } from '../api/objects.ts';
import type { InitializerObject, InitializerObjectRef } from './initializers.ts';
import type { ObservedPodGroup, PodGroupDeletion } from './podgroup.ts';
import type { PvcPatch } from './pvc-plan.ts';
import type { EventSpec, RebuildReport } from './report.ts';
import type { StatusStep } from './status.ts';
import type { TrainerRefusal } from './refused-apply.ts';

/** `snapshot`: read from Trainer's runtime snapshot ConfigMap of this TrainJob (see runtime-memo.ts). */
export type RuntimeRead = { found: true; runtime: Runtime; snapshot?: boolean } | { found: false; reason: string };

/**
 * Would the API server (JobSet's webhook included) admit the JobSet's re-creation while its
 * workspace PVCs exist? Asked with a server-side dry-run create of the same JobSet: an
 * AlreadyExists answer means admission passed. JobSet v0.12.0's webhook refuses when a
 * volumeClaimPolicies claim exists unless whenDeleted is Retain and the specs are equal.
 */
export type RecreateCheck = { admitted: true } | { admitted: false; reason: string };

export interface Observation {
  mode: Mode;
  /** The installed Trainer line's rules (from the live CRD, src/api/trainer-line-detect.ts). */
  trainer: TrainerLine;
  trainJob: TrainJob;
  /** Absent: the TrainJob has no JobSet (of that name). */
  jobSet: JobSet | undefined;
  /** Read on demand (see Need). */
  runtime?: RuntimeRead;
  /**
   * The JobSet's Jobs as the watch holds them: a Job that still runs there means waiting without a
   * request. Never enough to delete on (pods are not watched, and a cache may lag).
   */
  cachedJobs?: Job[];
  /** The JobSet's Jobs and pods read live, right before a delete. */
  children?: { jobs: Job[]; pods: Pod[] };
  /** Every PVC of the namespace: a JobSet may own any of them. */
  pvcs?: PersistentVolumeClaim[];
  /** The PVCs retained for this TrainJob during an earlier rebuild. */
  retained?: PersistentVolumeClaim[];
  recreate?: RecreateCheck;
  /** The objects of the data cache initializer's first run that exist now, read live (initializers.ts). */
  initializerObjects?: InitializerObject[];
  /**
   * Companion mode, a runtime with a podGroupPolicy: the TrainJob's PodGroups (named after it) of the
   * schedulers the policy names, read live right before a delete (none: absent, or no such CRD).
   */
  podGroups?: ObservedPodGroup[];
  /**
   * Companion mode, a resumed TrainJob whose JobSet stays suspended: Trainer's Events that say its
   * apply of the TrainJob's objects failed (refused-apply.ts), read live.
   */
  trainerRefusals?: TrainerRefusal[];
  /** RFC 3339, for condition transition times. */
  now: string;
  /** The reconciler's field manager: does it own a JobSet's spec.suspend (it suspended it)? */
  fieldManager?: string;
}

export type Need =
  | 'runtime'
  | 'cached-jobs'
  | 'children'
  | 'pvcs'
  | 'retained'
  | 'recreate'
  | 'initializer-objects'
  | 'podgroups'
  | 'trainer-refusals';

export type Step =
  | { kind: 'release-pvc'; patch: PvcPatch }
  | { kind: 'hand-back-pvc'; patch: PvcPatch }
  | { kind: 'delete-jobset'; name: string; uid: string; resourceVersion: string }
  /**
   * Companion mode: set only the stale JobSet's `spec.suspend` to true (uid and resourceVersion
   * tested), because Trainer's whole-JobSet apply of the suspend is refused (kubeflow/trainer#3008).
   * Not an apply of the JobSet: nothing else of it is written.
   */
  | { kind: 'suspend-jobset'; name: string; uid: string; resourceVersion: string }
  /**
   * Companion mode: undo the sidecar's own suspend of a JobSet Trainer cannot apply (workspace
   * claims), once the TrainJob is resumed: spec.suspend alone set to false, preconditions tested.
   */
  | { kind: 'resume-jobset'; name: string; uid: string; resourceVersion: string }
  /**
   * An object an initializer's first run made, which its second run (after the rebuild) must not
   * find (initializers.ts): deleted with uid and resourceVersion preconditions, foreground.
   */
  | { kind: 'delete-initializer-object'; ref: InitializerObjectRef; uid: string; resourceVersion: string }
  | { kind: 'apply-jobset'; jobSet: JobSet }
  /**
   * Companion mode: delete the TrainJob's PodGroup whose minMember is not what Trainer builds for the
   * new count (uid and resourceVersion preconditions), so that Trainer creates it again (podgroup.ts).
   */
  | { kind: 'delete-podgroup'; podGroup: PodGroupDeletion }
  | StatusStep
  /** Apply the report annotation (undefined removes it). */
  | { kind: 'report'; report: RebuildReport | undefined }
  /**
   * Companion mode: record the fold of Trainer's refusal Events last answered on the TrainJob
   * (refused-apply.ts; undefined removes it), its resourceVersion tested. The write changes the
   * TrainJob's resourceVersion, so that Trainer's next refusal is a new Event with its own note.
   */
  | { kind: 'record-refusal-fold'; fold: string | undefined }
  | { kind: 'event'; event: EventSpec };

/** What a reconcile ended in, for metrics and logs. */
export type Outcome =
  | 'current'
  | 'no-jobset'
  | 'finished'
  | 'applied'
  | 'waiting'
  | 'suspended'
  | 'blocked'
  | 'deleted'
  | 'rebuilt'
  | 'unsupported';

export type Decision =
  | { kind: 'need'; what: Need }
  | { kind: 'skip'; reason: string }
  | { kind: 'act'; outcome: Outcome; steps: Step[]; requeueAfterMs?: number; detail?: string };
