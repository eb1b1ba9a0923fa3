// The Trainer lines this project knows, and what each one does differently where the sidecar and
// the enforcers depend on it. Pure data: which line is installed is found from the live TrainJob
// CRD (trainer-line-detect.ts), never assumed.
//
// - Finished for good. Trainer v2.2.1 and v2.3.0 drop a Failed condition at the start of every
//   reconcile unless its reason is DeadlineExceeded (trainjob_controller.go `removeFailedCondition`:
//   v2.2.1 :115 and :271-277, v2.3.0 :100 and :246-252), then build the JobSet only while
//   `!IsTrainJobFinished` (Complete or Failed True, pkg/util/trainjob/trainjob.go). So a Failed job
//   is reconciled again, and a deleted JobSet comes back. Trainer's main line dropped
//   `removeFailedCondition` (kubeflow/trainer#3891, a1f74d48c): Failed stays, and the JobSet of a
//   Failed TrainJob is never built again (upstream/trainer-main-8c0f5059/pkg/controller/
//   trainjob_controller.go:101-113; the jobset plugin's Status keeps the TrainJob's own conditions,
//   plugins/jobset/jobset.go:460).
// - numNodes bounds: 0 or more on every line. v2.2.1 and v2.3.0's CRDs have no bound (the table's
//   rule adds it); main's has `minimum: 0` (#3809, 8f6c5f067: "numNodes allows 0 to keep the API
//   aligned with JobSet's replicas"), and 0 builds what it builds on v2.3.0 (the plugins copy it
//   into the trainer PodSet's count: parallelism and completions 0, PET_NNODES=0).
// - The JobSet build (standalone mode, src/rebuild/trainer-jobset/): Trainer v2.3.0's torch, JAX,
//   XGBoost and PlainML JobSets. Main builds the same for those: between v2.3.0 and 8c0f5059 their
//   plugins are unchanged, and #3889 only moves SyncParallelCount into the JobSet plugin's
//   PreBuildSync, which still runs after every Enforce* plugin and before Build
//   (runtime/core/trainingruntime.go RuntimeInfo, framework/core/framework.go); the status plugin
//   that moved to EnforcePodSpec is behind the TrainJobStatus feature gate (plugins/registry.go) and
//   is not built by standalone mode on either line. v2.2.1 builds differently (its JobSet builder
//   replaces the node container's resources with resourcesPerNode, plugins/jobset/builder.go:145-159
//   in v2.2.1, where v2.3.0 merges them into the runtime info; replicas of other jobs fixed at 1;
//   no torch envInjection), so standalone mode does not build there.
// - An unknown CRD (none of the three: a later Trainer, a patch release with a changed schema) gets
//   the most careful rules: Failed is terminal, and standalone mode builds nothing.

export type KnownTrainerLine = 'v2.2.1' | 'v2.3.0' | 'main-8c0f5059';

export interface TrainerLine {
  id: KnownTrainerLine | 'unknown';
  /** For messages: "Trainer v2.3.0". */
  label: string;
  /** Failed (any reason) is terminal: a deleted JobSet of a Failed TrainJob is never built again. */
  failedIsTerminal: boolean;
  /** The standalone builder builds this line's JobSet (verified identical for its runtimes). */
  standaloneBuilds: boolean;
}

export const TRAINER_LINES: Readonly<Record<KnownTrainerLine, TrainerLine>> = {
  'v2.2.1': { id: 'v2.2.1', label: 'Trainer v2.2.1', failedIsTerminal: false, standaloneBuilds: false },
  'v2.3.0': { id: 'v2.3.0', label: 'Trainer v2.3.0', failedIsTerminal: false, standaloneBuilds: true },
  'main-8c0f5059': {
    id: 'main-8c0f5059',
    label: "Trainer's main line at 8c0f5059 (stands in for v2.4)",
    failedIsTerminal: true,
    standaloneBuilds: true,
  },
};

/** The most careful rules, for a CRD that is none of the known lines (or none at all). */
export const UNKNOWN_TRAINER_LINE: TrainerLine = {
  id: 'unknown',
  label: 'an unknown Trainer version',
  failedIsTerminal: true,
  standaloneBuilds: false,
};

export const KNOWN_TRAINER_LINES = Object.keys(TRAINER_LINES) as KnownTrainerLine[];

/** The lowest numNodes the enforcers admit, on every line (see above). */
export const NUM_NODES_MINIMUM = 0;
