// This project's status field on the TrainJob, status.trainjobWebhook: what `kubectl get
// trainjobs` shows in its columns and the scale subresource reads (the CRD patch adds both:
// src/rules/generate/scale-subresource.ts), and what the `kubectl trainjob` plugin reads.
// - nodes: the numNodes the current JobSet is built for (statusReplicasPath); absent while there is
//   no JobSet. Beside spec.trainer.numNodes (the count asked for) it shows a pending rebuild.
// - selector: the label selector of the training nodes' pods (labelSelectorPath),
//   `jobset.sigs.k8s.io/jobset-name=<name>,jobset.sigs.k8s.io/replicatedjob-name=<node job>`:
//   JobSet puts both labels on every pod it makes, and Trainer names the JobSet after the TrainJob.
//   The second names the replicated job whose count is numNodes (the one `nodes` is read from), so
//   an autoscaler reading pod metrics through it sees the nodes, not the initializers' pods or an
//   MPI launcher. Without a JobSet, or one without that job, the JobSet's name alone.
// - rebuild and reason: the report's state and reason (report.ts), as plain fields: a printer column
//   reads a plain field, not the JSON in the report annotation. The report is an annotation, which
//   anyone who may patch the TrainJob can write, so the reason is cut to the schema's maxLength
//   (REASON_MAX_CHARS): longer, every apply of the field would fail. It is cut rather than left out
//   when it is not the reconciler's: the reconciler cannot tell who wrote the annotation (its cache
//   keeps no managedFields), its own reasons can be long too (they name claims), and the
//   annotation it comes from is shown to the same readers anyway.
// Written by the reconciler with SSA on the status subresource under a field manager of its own
// (src/reconciler/status-field.ts). Trainer never drops it: v2.2.1 to main write the TrainJob's
// status as a merge patch of their typed diff (client.MergeFrom), which names only the fields their
// types know. Stable facts only, no timestamps: applying it again is a no-op. Pure.
import {
  ANCESTOR_LABEL,
  ANCESTOR_TRAINER,
  JOBSET_NAME_LABEL,
  NODE,
  REPLICATED_JOB_NAME_LABEL,
  STATUS_FIELD,
  TRAINJOB_API_VERSION,
  TRAINJOB_KIND,
} from '../api/names.ts';
import { intOf, type JobSet, type ReplicatedJob, type TrainJob } from '../api/objects.ts';
import { isObject } from '../json/object.ts';
import { expectedNodeShape, findReplicatedJob, type NodeShape } from '../scale/ml-policy.ts';
import type { RuntimeRead } from './decision.ts';
import type { RebuildReport, ReportState } from './report.ts';

export interface StatusField {
  nodes?: number;
  selector: string;
  rebuild?: ReportState;
  reason?: string;
}

const KEY_ORDER: (keyof StatusField)[] = ['nodes', 'selector', 'rebuild', 'reason'];

/**
 * The selector of the training nodes' pods: those of the TrainJob's JobSet (named after the
 * TrainJob) in its node job, when that is known.
 */
export const podSelector = (trainJobName: string, nodeJob?: string): string =>
  `${JOBSET_NAME_LABEL}=${trainJobName}${nodeJob ? `,${REPLICATED_JOB_NAME_LABEL}=${nodeJob}` : ''}`;

/** status.trainjobWebhook.reason's maxLength in the CRD patch (src/rules/generate/scale-subresource.ts). */
export const REASON_MAX_CHARS = 32768;

/**
 * `text` cut to at most `max` characters, with `…` at the end when cut. The API server counts a
 * string's maxLength in code points; a JavaScript string's length counts UTF-16 units, at least as
 * many, so a cut by units keeps within it, and a cut never splits a surrogate pair.
 */
export function cutToChars(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = max - 1;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  return `${text.slice(0, end)}…`;
}

const parallelismOf = (r: ReplicatedJob | undefined): number | undefined =>
  r ? (intOf(r.template?.spec?.parallelism) ?? 1) : undefined;

/** The stored field's nodes, as last written (a value that is not a count: none). */
const storedNodes = (trainJob: TrainJob): number | undefined => {
  const field = trainJob.status?.[STATUS_FIELD];
  return isObject(field) ? intOf(field.nodes) : undefined;
};

/**
 * The numNodes the JobSet is built for. With the runtime: the TrainJob's own count when the JobSet
 * has the count Trainer builds for it, else the JobSet's count read back per ML policy (MPI with
 * the launcher as a node: the node job has numNodes - 1, at least 1, so a node job of 1 is 1 or 2
 * nodes: the count last written, if one of those, else 2). Without the runtime (or one that cannot
 * be judged): the trainer job's parallelism, unless an MPI node job beside it makes that ambiguous
 * (then the count last written stays).
 */
export function builtNodes(
  trainJob: TrainJob,
  jobSet: JobSet,
  runtime: RuntimeRead | undefined,
  previous: number | undefined,
): number | undefined {
  const expected = runtime?.found ? expectedNodeShape(trainJob, runtime.runtime) : undefined;
  return expected?.known
    ? readBack(expected.shape, jobSet, previous)
    : withoutRuntime(jobSet.spec?.replicatedJobs ?? [], previous);
}

/**
 * The replicated job of the training nodes, the one builtNodes reads: by the runtime's shape, else
 * the trainer job, or an MPI node job beside it (the launcher then has the trainer label).
 */
export function nodeJobOf(trainJob: TrainJob, jobSet: JobSet, runtime: RuntimeRead | undefined): string | undefined {
  return nodeReplicatedJob(trainJob, jobSet, runtime)?.name;
}

/** nodeJobOf's replicated job itself (the kubectl plugin reads its pod template). */
export function nodeReplicatedJob(
  trainJob: TrainJob,
  jobSet: JobSet,
  runtime: RuntimeRead | undefined,
): ReplicatedJob | undefined {
  const jobs = Array.isArray(jobSet.spec?.replicatedJobs) ? jobSet.spec.replicatedJobs : [];
  const expected = runtime?.found ? expectedNodeShape(trainJob, runtime.runtime) : undefined;
  if (expected?.known) return findReplicatedJob(jobs, expected.shape);
  const { trainer, mpiNode } = byLabels(jobs);
  return mpiNode ?? trainer;
}

/** Without the runtime: the trainer job by Trainer's label, and an MPI node job beside it, if any. */
function byLabels(jobs: ReplicatedJob[]): { trainer?: ReplicatedJob; mpiNode?: ReplicatedJob } {
  const trainer = jobs.find((r) => r.template?.metadata?.labels?.[ANCESTOR_LABEL] === ANCESTOR_TRAINER);
  return { trainer, mpiNode: jobs.find((r) => r.name === NODE && r !== trainer) };
}

/** The JobSet's count as numNodes, by the shape Trainer builds for this runtime. */
function readBack(shape: NodeShape, jobSet: JobSet, previous: number | undefined): number | undefined {
  const p = parallelismOf(findReplicatedJob(jobSet.spec?.replicatedJobs, shape));
  if (p === undefined) return previous;
  if (p === shape.count) return shape.numNodes;
  if (shape.policy.kind !== 'mpi' || !shape.policy.runLauncherAsNode) return p;
  if (p > 1) return p + 1;
  return previous === 1 || previous === 2 ? previous : 2;
}

/** The trainer job's parallelism, unless an MPI node job beside it makes that ambiguous. */
function withoutRuntime(jobs: ReplicatedJob[], previous: number | undefined): number | undefined {
  const { trainer, mpiNode } = byLabels(jobs);
  return mpiNode ? previous : (parallelismOf(trainer) ?? previous);
}

/** The field for this TrainJob, its JobSet (if any), the runtime read (if any) and its report. */
export function statusFieldOf(args: {
  trainJob: TrainJob;
  jobSet: JobSet | undefined;
  runtime?: RuntimeRead | undefined;
  report: RebuildReport | undefined;
}): StatusField {
  const { trainJob, jobSet, runtime, report } = args;
  const previous = storedNodes(trainJob);
  const nodes = jobSet ? builtNodes(trainJob, jobSet, runtime, previous) : undefined;
  const nodeJob = jobSet ? nodeJobOf(trainJob, jobSet, runtime) : undefined;
  const field: StatusField = { selector: podSelector(trainJob.metadata.name ?? '', nodeJob) };
  if (nodes !== undefined) field.nodes = nodes;
  if (report) field.rebuild = report.state;
  if (report?.reason) field.reason = cutToChars(report.reason, REASON_MAX_CHARS);
  return ordered(field);
}

function ordered(field: StatusField): StatusField {
  const out: Record<string, unknown> = {};
  for (const k of KEY_ORDER) if (field[k] !== undefined) out[k] = field[k];
  return out as unknown as StatusField;
}

/** Whether the stored field is already this one, key for key (then nothing is written). */
export function sameStatusField(trainJob: TrainJob, field: StatusField): boolean {
  const stored = trainJob.status?.[STATUS_FIELD];
  if (!isObject(stored)) return false;
  const keys = Object.keys(stored);
  const wanted = field as unknown as Record<string, unknown>;
  return (
    keys.length === Object.keys(field).length &&
    keys.every((k) => (k === 'nodes' ? intOf(stored[k]) : stored[k]) === wanted[k])
  );
}

/** The SSA apply configuration for the status subresource: this field alone. */
export function statusFieldApplyConfiguration(trainJob: TrainJob, field: StatusField): Record<string, unknown> {
  return {
    apiVersion: trainJob.apiVersion ?? TRAINJOB_API_VERSION,
    kind: TRAINJOB_KIND,
    metadata: { name: trainJob.metadata.name, namespace: trainJob.metadata.namespace },
    status: { [STATUS_FIELD]: field },
  };
}
