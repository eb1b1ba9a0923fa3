// What the reconciler tells the user, on the TrainJob: one annotation (applied with SSA under the
// reconciler's own field manager) and an Event on every change of it. The annotation holds only
// stable facts (state, node counts, the replaced JobSet's uid, kept PVCs), no timestamps, so that
// re-applying it is a no-op and the update its own write causes finds nothing to do. Never a
// status condition in companion mode: Trainer v2.3.0 replaces status.conditions whole. Pure.
import { REPORT_ANNOTATION, TRAINJOB_API_VERSION, TRAINJOB_KIND } from '../api/names.ts';
import type { TrainJob } from '../api/objects.ts';
import { count, list, obj, oneOf, str } from '../api/wellformed.ts';

export type ReportState =
  /** Stale, but something still runs (or the JobSet is not suspended): retried. */
  | 'Waiting'
  /** Stale, and a rebuild cannot be made safe (a PVC cannot be kept): the reason says what to do. */
  | 'Blocked'
  /** The stale JobSet was deleted; its re-creation with the new count is awaited. */
  | 'Rebuilding'
  /** The JobSet was re-created with the new count. */
  | 'Rebuilt'
  /** The TrainJob's JobSet cannot be judged or built (unknown ML policy, not its JobSet...). */
  | 'Unsupported';

export interface RebuildReport {
  state: ReportState;
  numNodes?: number;
  replicatedJob?: string;
  parallelism?: { from?: number; to: number };
  replacedJobSetUID?: string;
  retainedPVCs?: string[];
  /**
   * A rebuild of a JobSet Trainer could no longer apply (refused-apply.ts), not of a count change:
   * the resume it was for (the TrainJob's Suspended=False transition time), so that it is done at
   * most once per resume.
   */
  resumedAt?: string;
  /** Stable wording: details that change from one retry to the next go into Events only. */
  reason?: string;
}

const REPORT_STATES: readonly ReportState[] = ['Waiting', 'Blocked', 'Rebuilding', 'Rebuilt', 'Unsupported'];

/** The annotation may have been edited by hand: what is not a report is treated as none. */
const wellFormedReport = obj(
  {
    state: oneOf(REPORT_STATES),
    numNodes: count,
    replicatedJob: str,
    parallelism: obj({ from: count, to: count }, ['to']),
    replacedJobSetUID: str,
    retainedPVCs: list(str),
    resumedAt: str,
    reason: str,
  },
  ['state'],
);

const KEY_ORDER: (keyof RebuildReport)[] = [
  'state',
  'numNodes',
  'replicatedJob',
  'parallelism',
  'replacedJobSetUID',
  'retainedPVCs',
  'resumedAt',
  'reason',
];

/** The annotation value: JSON with a fixed key order, so equal reports are equal strings. */
export function encodeReport(report: RebuildReport): string {
  const ordered: Record<string, unknown> = {};
  for (const k of KEY_ORDER) if (report[k] !== undefined) ordered[k] = report[k];
  return JSON.stringify(ordered);
}

export function previousReport(trainJob: TrainJob): RebuildReport | undefined {
  const raw = trainJob.metadata.annotations?.[REPORT_ANNOTATION];
  if (!raw) return undefined;
  try {
    const parsed: unknown = JSON.parse(raw);
    return wellFormedReport(parsed, 'report') === undefined ? (parsed as RebuildReport) : undefined;
  } catch {
    return undefined;
  }
}

export function sameReport(a: RebuildReport | undefined, b: RebuildReport | undefined): boolean {
  return (a ? encodeReport(a) : '') === (b ? encodeReport(b) : '');
}

/**
 * The SSA apply configuration for the annotation. Applying one without the annotation (report
 * undefined) removes it, as the field manager then no longer claims it.
 */
export function reportApplyConfiguration(
  trainJob: TrainJob,
  report: RebuildReport | undefined,
): Record<string, unknown> {
  return {
    apiVersion: trainJob.apiVersion ?? TRAINJOB_API_VERSION,
    kind: TRAINJOB_KIND,
    metadata: {
      name: trainJob.metadata.name,
      namespace: trainJob.metadata.namespace,
      ...(report ? { annotations: { [REPORT_ANNOTATION]: encodeReport(report) } } : {}),
    },
  };
}

export interface EventSpec {
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
}

function counts(r: RebuildReport): string {
  const p = r.parallelism;
  return p
    ? `${r.replicatedJob ?? 'trainer'} parallelism ${p.from ?? '?'} -> ${p.to} (numNodes ${r.numNodes ?? '?'})`
    : '';
}

/** The Event of a companion-mode suspend of a stale JobSet (the report stays Waiting). */
export function suspendEventFor(report: RebuildReport, jobSetUID: string | undefined, detail?: string): EventSpec {
  const extra = detail ? `: ${detail}` : '';
  return {
    type: 'Normal',
    reason: 'JobSetSuspended',
    message: `Suspended stale JobSet (uid ${jobSetUID ?? '?'}, ${counts(report)}) so that it can be rebuilt: Trainer's apply of the suspend with the new node count is refused (kubeflow/trainer#3008)${extra}`,
  };
}

/** The Event that announces a new report; `detail` adds what changes between retries. */
export function eventFor(report: RebuildReport, detail?: string): EventSpec {
  if (report.resumedAt !== undefined) return refusedApplyEventFor(report, detail);
  const extra = detail ? `: ${detail}` : '';
  switch (report.state) {
    case 'Waiting':
      return {
        type: 'Normal',
        reason: 'JobSetRebuildWaiting',
        message: `JobSet is stale (${counts(report)}); ${report.reason ?? 'waiting'}${extra}`,
      };
    case 'Blocked':
      return {
        type: 'Warning',
        reason: 'JobSetRebuildBlocked',
        message: `JobSet is stale (${counts(report)}) but is not rebuilt: ${report.reason ?? ''}${extra}`,
      };
    case 'Rebuilding':
      return {
        type: 'Normal',
        reason: 'JobSetDeleted',
        message: `Deleted stale JobSet (uid ${report.replacedJobSetUID}, ${counts(report)}) so that it is re-created with the new node count${report.retainedPVCs?.length ? `; kept PVCs ${report.retainedPVCs.join(', ')}` : ''}${extra}`,
      };
    case 'Rebuilt':
      return {
        type: 'Normal',
        reason: 'JobSetRebuilt',
        message: `JobSet re-created with the new node count (${counts(report)})${report.retainedPVCs?.length ? `; PVCs ${report.retainedPVCs.join(', ')} handed back` : ''}${extra}`,
      };
    case 'Unsupported':
      return { type: 'Warning', reason: 'JobSetNotReconciled', message: `${report.reason ?? 'not supported'}${extra}` };
  }
}

/** The Events of a rebuild of a JobSet Trainer could no longer apply: no count changes there. */
function refusedApplyEventFor(report: RebuildReport, detail?: string): EventSpec {
  const extra = detail ? `: ${detail}` : '';
  const why = report.reason ?? "Trainer's apply of the JobSet is refused";
  switch (report.state) {
    case 'Rebuilding':
      return {
        type: 'Normal',
        reason: 'JobSetDeleted',
        message: `Deleted JobSet (uid ${report.replacedJobSetUID}) so that Trainer re-creates it: ${why}${extra}`,
      };
    case 'Rebuilt':
      return { type: 'Normal', reason: 'JobSetRebuilt', message: `JobSet re-created by Trainer after ${why}${extra}` };
    case 'Blocked':
      return { type: 'Warning', reason: 'JobSetRebuildBlocked', message: `JobSet is not rebuilt: ${why}${extra}` };
    default:
      return { type: 'Normal', reason: 'JobSetRebuildWaiting', message: `${why}${extra}` };
  }
}
