// A JobSet the installed Trainer can no longer apply: JobSet refuses Trainer's apply because an
// immutable part of it differs from what this Trainer builds (an upgrade of Trainer that builds the
// JobSet differently, e.g. v2.2.1 -> v2.3.0 adds the MPI SSH volume's defaultMode,
// kubeflow/trainer#3649; a runtime edited under v2.2.1, which keeps no runtime snapshot). Trainer
// says so only through an Event on the TrainJob (pkg/controller/trainjob_controller.go, identical
// in v2.2.1, v2.3.0 and main 8c0f5059: reason TrainJobResourcesCreationFailed, note "TrainJob
// resources reconciliation failed: <the apply's error>", cut after 950 characters) and sets
// Suspended=False/Resumed all the same, so a resumed TrainJob says it runs while its JobSet stays
// suspended with no pods. Pure.
//
// Acted on at the resume only: while the TrainJob is suspended the refused apply harms nothing
// (the JobSet is suspended as asked), and Kueue's admission (runtimePatches and the resume in one
// update) then finds the JobSet re-created from the admitted TrainJob. See docs/reconciler.md, "The cases it handles".
//
// Trainer's refusals fold. It records Events with client-go's events/v1 broadcaster
// (mgr.GetEventRecorder in v2.2.1, v2.3.0 and main; k8s.io/client-go v0.35 and v0.36
// tools/events/event_broadcaster.go), which keys them on type, action, reason, reporting
// controller and instance and the regarding and related references, not on the note; the
// TrainJob's reference holds its resourceVersion. A later refusal of the same TrainJob version is
// folded into the first one's Event: its series (count 2, lastObservedTime) is written once, later
// counts only when the series ends (a check every 6 minutes drops one unobserved for 6) or every
// 30 minutes, and the note stays the first one's. Trainer retries a refused apply with
// controller-runtime's backoff (5 ms, doubling, at most 1000 s), under 6 minutes apart for about
// 11 minutes: a refusal a rebuild cures that follows one it does not (JobSet's webhook down for a
// moment) stays hidden behind the first note for 20 minutes or more. Any update of the TrainJob
// makes Trainer reconcile it at once (its TrainJob watch's predicate passes every update) at a new
// version, so into a new Event with that refusal's own note. The reconciler makes that update
// (refusalFold, REFUSAL_SEEN_ANNOTATION) when the latest refusal is not one a rebuild cures (or is
// not judged, stored in the second the JobSet was created) and its series says Trainer refused
// again at the TrainJob's current version: once per fold seen.
import { isObject, type JsonObject } from '../json/object.ts';
import { intOf, type JobSet, type TrainJob } from '../api/objects.ts';
import { REFUSAL_SEEN_ANNOTATION } from '../api/names.ts';
import type { RebuildReport } from './report.ts';

/** Trainer's Event reason for a failed apply of the TrainJob's objects. */
export const TRAINER_REFUSAL_REASON = 'TrainJobResourcesCreationFailed';
/** The controller Trainer's TrainJob Events are reported by (pkg/controller/setup.go:44 in every line). */
export const TRAINER_EVENT_REPORTER = 'trainer-trainjob-controller';

/**
 * One of Trainer's refusal Events on the TrainJob. `at`: when Trainer first recorded it (eventTime,
 * Trainer's clock: the note is that first refusal's, as the events library folds later ones of the
 * same TrainJob resourceVersion into a series without changing the note). `created`: when the API
 * server stored it (metadata.creationTimestamp, the API server's clock, as a JobSet's). `event`: its
 * name; `version`: the TrainJob resourceVersion it regards; `series`: the later refusals folded into
 * it, what of it is readable (absent: none, or nothing readable).
 */
export interface TrainerRefusal {
  at: string;
  created: string;
  message: string;
  event?: string;
  version?: string;
  series?: { count?: number; lastObserved?: string };
}

/** The fold a refusal's series shows, as recorded on the TrainJob; undefined without a series. */
export function refusalFold(r: TrainerRefusal): string | undefined {
  return r.series && `${r.event ?? ''}/${r.series.count ?? '?'}@${r.series.lastObserved ?? '?'}`;
}

// The fold is recorded in an annotation of its own, not in the report (report.ts): the report holds
// stable facts only, each change of it announced by an Event, while a fold changes with every write
// by design; a Waiting report written at such a resume would replace a Rebuilt one of the same
// resume, whose replaced JobSet is what keeps a second rebuild from happening (`again`), and
// `settle` reads a report as a count change not carried out. A fold left behind misleads no one
// (only a later Event's fold is compared with it, and never equals it); it is removed once the
// resume is over. Written by a merge patch: the report's apply, which does not name it, keeps it.

/** The fold the reconciler last recorded on the TrainJob (REFUSAL_SEEN_ANNOTATION). */
export function refusalSeen(tj: TrainJob): string | undefined {
  const v: unknown = tj.metadata.annotations?.[REFUSAL_SEEN_ANNOTATION];
  return typeof v === 'string' ? v : undefined;
}

// JobSet's immutable parts, as its admission reports a change to them (sigs.k8s.io/jobset@v0.12.0
// and @v0.11.1):
// - pkg/webhooks/jobset_webhook.go ValidateUpdate: spec.replicatedJobs whole (its JSON value follows,
//   so Trainer's 950-character cut usually drops the trailing "field is immutable"; no other check
//   of an update reports at that exact path), and spec.managedBy;
// - the CRD's x-kubernetes-validations `self == oldSelf` ("Value is immutable"): failurePolicy,
//   network, startupPolicy, successPolicy, replicatedJobs[*].dependsOn and volumeClaimPolicies.
//   volumeClaimPolicies is left out: JobSet v0.12.0 refuses every Trainer apply of a JobSet with
//   claims (decide.ts pauses and resumes those itself), and its re-creation beside them is refused.
const WEBHOOK_IMMUTABLE =
  /\b(spec\.replicatedJobs): Invalid value: [[{]|\b(spec\.managedBy): Invalid value: .*?field is immutable/g;
const CEL_IMMUTABLE =
  /\b(spec\.(?:failurePolicy|network|startupPolicy|successPolicy|replicatedJobs\[\d+\]\.dependsOn)): Invalid value: "[a-z]+": Value is immutable/g;

/** The JobSet's immutable parts a refusal names (none: not a refusal a rebuild cures). */
export function immutablePartsRefused(message: string): string[] {
  if (!/jobset/i.test(message)) return [];
  const found = [...message.matchAll(WEBHOOK_IMMUTABLE), ...message.matchAll(CEL_IMMUTABLE)]
    .sort((a, b) => a.index - b.index)
    .map((m) => m[1] ?? m[2] ?? '');
  return [...new Set(found)];
}

/** When the TrainJob's Suspended condition turned False (Trainer's Resumed), as stored and in ms. */
export function resumedAt(tj: TrainJob): { text: string; ms: number } | undefined {
  const conditions: unknown = tj.status?.conditions;
  const c = Array.isArray(conditions)
    ? (conditions as unknown[]).find((x): x is Record<string, unknown> => isObject(x) && x.type === 'Suspended')
    : undefined;
  if (c?.status !== 'False' || typeof c.lastTransitionTime !== 'string') return undefined;
  const ms = Date.parse(c.lastTransitionTime);
  return Number.isFinite(ms) ? { text: c.lastTransitionTime, ms } : undefined;
}

/**
 * The refusal that tells why Trainer's apply of this resume failed, for this JobSet: recorded at or
 * after the resume (the condition's time is cut to the second; the refusal of the resume's own
 * reconcile comes just before Trainer sets Resumed, and the reconcile its status patch causes
 * records another at once), stored after the JobSet was created (whole seconds: a later second,
 * so that a refusal of the JobSet this one replaced never counts), the latest such.
 */
export function refusalOfResume(
  refusals: readonly TrainerRefusal[],
  resumedMs: number,
  jobSet: JobSet,
): TrainerRefusal | undefined {
  const stamp = jobSet.metadata.creationTimestamp;
  const created = stamp instanceof Date ? stamp.getTime() : typeof stamp === 'string' ? Date.parse(stamp) : NaN;
  if (!Number.isFinite(created)) return undefined;
  return latestSince(
    refusals.filter((r) => Date.parse(r.created) > created),
    resumedMs,
  );
}

/** The latest refusal recorded at or after `ms` (Trainer's eventTime). */
function latestSince(refusals: readonly TrainerRefusal[], ms: number): TrainerRefusal | undefined {
  let latest: TrainerRefusal | undefined;
  for (const r of refusals) {
    const at = Date.parse(r.at);
    if (at >= ms && (!latest || at > Date.parse(latest.at))) latest = r;
  }
  return latest;
}

export type RefusedResume =
  /**
   * Not this case: the other rules decide. `forgetFold`: the resume is over (applied, or the
   * TrainJob suspended again) and a fold is still recorded: remove it.
   */
  | { kind: 'no'; forgetFold?: true }
  /** Resumed just now: Trainer gets its grace to apply the resume. */
  | { kind: 'wait'; afterMs: number }
  /** Trainer's refusals on the TrainJob are needed (one live list of its Events). */
  | { kind: 'need' }
  /**
   * No refusal of this resume yet, or one a rebuild does not cure (the other rules decide; look
   * again later). `recordFold`: Trainer refused again at this version of the TrainJob, hidden behind
   * that note: record this fold on the TrainJob, so that its next refusal is a new Event.
   */
  | { kind: 'unexplained'; detail: string; recordFold?: string }
  /** Trainer cannot apply this JobSet: rebuild it (the stale path's gates still apply). */
  | { kind: 'rebuild'; report: Pick<RebuildReport, 'reason' | 'resumedAt'>; detail: string }
  /** The JobSet Trainer re-created after such a rebuild, in this same resume, is refused too: never again. */
  | { kind: 'again'; report: Pick<RebuildReport, 'reason' | 'resumedAt' | 'replacedJobSetUID'>; detail: string };

export interface RefusedResumeFacts {
  trainJob: TrainJob;
  jobSet: JobSet;
  /** The TrainJob's report before this reconcile. */
  previous: RebuildReport | undefined;
  /** Trainer's refusals, once read. */
  refusals: readonly TrainerRefusal[] | undefined;
  nowMs: number;
  graceMs: number;
}

/**
 * Companion mode, a current (by count) JobSet of a TrainJob Trainer still reconciles: is it one
 * Trainer can no longer apply, found at the resume? Gates first (no request): the TrainJob is
 * resumed and Trainer says so (Suspended=False) for `graceMs`, and its JobSet is still suspended
 * and has no workspace claims.
 */
// eslint-disable-next-line complexity -- the gates in order, then the refusal's verdict
export function judgeRefusedResume(f: RefusedResumeFacts): RefusedResume {
  const { trainJob: tj, jobSet: js } = f;
  if (tj.spec?.suspend === true || js.spec?.suspend !== true)
    return refusalSeen(tj) === undefined ? { kind: 'no' } : { kind: 'no', forgetFold: true };
  if ((js.spec?.volumeClaimPolicies?.length ?? 0) > 0) return { kind: 'no' };
  const resumed = resumedAt(tj);
  if (!resumed) return { kind: 'no' };
  const waited = f.nowMs - resumed.ms;
  if (!(waited >= f.graceMs)) return { kind: 'wait', afterMs: Math.max(f.graceMs - Math.max(waited, 0), 1) };
  if (!f.refusals) return { kind: 'need' };
  const refusal = refusalOfResume(f.refusals, resumed.ms, js);
  const name = js.metadata.name ?? '';
  if (!refusal) return noRefusal(tj, js, latestSince(f.refusals, resumed.ms), waited);
  const parts = immutablePartsRefused(refusal.message);
  if (!parts.length) return notCured(tj, refusal);
  // The report of a rebuild for this resume names the JobSet it replaced; this one is another.
  const p = f.previous;
  if (p?.resumedAt === resumed.text && p.replacedJobSetUID !== undefined && p.replacedJobSetUID !== js.metadata.uid)
    return {
      kind: 'again',
      report: {
        resumedAt: p.resumedAt,
        replacedJobSetUID: p.replacedJobSetUID,
        reason: `Trainer's apply of JobSet ${name}, which it re-created after the rebuild for this resume, is refused as well (immutable ${parts.join(', ')}): a rebuild does not cure it, so it is not rebuilt again; suspend and resume the TrainJob to try once more, or look at Trainer's TrainJobResourcesCreationFailed Events`,
      },
      detail: refusal.message,
    };
  return {
    kind: 'rebuild',
    report: {
      reason: `the installed Trainer can no longer apply JobSet ${name}: JobSet refuses the change of its immutable ${parts.join(', ')} (Trainer builds it differently than the Trainer that created it, e.g. after an upgrade), so the TrainJob stayed resumed with its JobSet suspended; the JobSet is deleted once nothing of it runs and Trainer re-creates it`,
      resumedAt: resumed.text,
    },
    detail: refusal.message,
  };
}

/**
 * The fold to record for a refusal: its Event folds later refusals of the TrainJob's current
 * version (not an older one: any update since makes Trainer's next refusal a new Event anyway), and
 * that fold is not recorded yet. So at most one write per fold, and the reconcile that write causes
 * finds it recorded.
 */
function foldToRecord(tj: TrainJob, r: TrainerRefusal | undefined): string | undefined {
  const fold = r && refusalFold(r);
  if (fold === undefined || fold === refusalSeen(tj)) return undefined;
  return r?.version === undefined || r.version === tj.metadata.resourceVersion ? fold : undefined;
}

/** An unexplained resume: `detail`, and the fold to record when there is one (`recorded` then ends the detail). */
function unexplained(
  detail: string,
  recordFold: string | undefined,
  ends: { recorded: string; notRecorded?: string },
): Extract<RefusedResume, { kind: 'unexplained' }> {
  if (recordFold === undefined) return { kind: 'unexplained', detail: `${detail}${ends.notRecorded ?? ''}` };
  return { kind: 'unexplained', detail: `${detail}${ends.recorded}`, recordFold };
}

/** The latest refusal of the resume is not one a rebuild cures: when later ones are folded behind it, record that. */
function notCured(tj: TrainJob, refusal: TrainerRefusal): Extract<RefusedResume, { kind: 'unexplained' }> {
  const detail = `Trainer's apply of the resume is refused, for a reason a rebuild does not cure: ${refusal.message}`;
  if (!refusal.series) return { kind: 'unexplained', detail };
  const times = refusal.series.count === undefined ? 'again' : `${refusal.series.count} times`;
  return unexplained(detail, foldToRecord(tj, refusal), {
    recorded: ` (refused ${times} at this version of the TrainJob, this note the first's; the fold is recorded on the TrainJob, so that Trainer's next refusal comes as a new Event with its own note)`,
    notRecorded: ` (refused ${times}, this note the first's; Trainer's next refusal comes as a new Event)`,
  });
}

/**
 * No refusal explains the resume. One recorded since but stored in the second the JobSet was
 * created may be of the JobSet it replaced, so it is not judged; when Trainer's later refusals are
 * folded into it, they would stay there: the fold is recorded as well, and the next refusal, a new
 * Event, is stored in a later second.
 */
function noRefusal(
  tj: TrainJob,
  js: JobSet,
  since: TrainerRefusal | undefined,
  waitedMs: number,
): Extract<RefusedResume, { kind: 'unexplained' }> {
  const name = js.metadata.name ?? '';
  const detail = `JobSet ${name} is still suspended ${Math.round(waitedMs / 1000)} s after the resume, and Trainer reported no refusal of it since`;
  return unexplained(detail, foldToRecord(tj, since), {
    recorded: ` but in an Event stored in the second the JobSet was created, into which later ones are folded: the fold is recorded on the TrainJob, so that Trainer's next refusal comes as a new Event`,
  });
}

/** Trainer's refusal Events as listed (core/v1), each checked: a malformed one is skipped, never thrown on. */
export function refusalsFromEvents(items: readonly unknown[]): TrainerRefusal[] {
  return items.flatMap((e) => {
    const r = refusalFromEvent(e);
    return r ? [r] : [];
  });
}

function refusalFromEvent(e: unknown): TrainerRefusal | undefined {
  if (!isObject(e) || e.reason !== TRAINER_REFUSAL_REASON) return undefined;
  const meta = isObject(e.metadata) ? e.metadata : {};
  const created = timeText(meta.creationTimestamp);
  const at = timeText(e.eventTime) ?? timeText(e.firstTimestamp) ?? created;
  const message = typeof e.message === 'string' ? e.message : typeof e.note === 'string' ? e.note : undefined;
  if (!created || !at || message === undefined) return undefined;
  return { at, created, message, ...foldOf(e, meta) };
}

/** Which Event, regarding which TrainJob version, with which series: what of them is readable. */
function foldOf(e: JsonObject, meta: JsonObject): Pick<TrainerRefusal, 'event' | 'version' | 'series'> {
  const regarding = isObject(e.involvedObject) ? e.involvedObject : isObject(e.regarding) ? e.regarding : {};
  const event = typeof meta.name === 'string' ? meta.name : undefined;
  const version = typeof regarding.resourceVersion === 'string' ? regarding.resourceVersion : undefined;
  const series = seriesOf(e.series);
  return { ...(event && { event }), ...(version && { version }), ...(series && { series }) };
}

/** An Event's series (core/v1 and events/v1: count, lastObservedTime), what of it is readable. */
function seriesOf(v: unknown): TrainerRefusal['series'] {
  if (!isObject(v)) return undefined;
  const count = intOf(v.count);
  const lastObserved = timeText(v.lastObservedTime);
  if (count === undefined && lastObserved === undefined) return undefined;
  return { ...(count !== undefined && { count }), ...(lastObserved && { lastObserved }) };
}

function timeText(v: unknown): string | undefined {
  const text = v instanceof Date ? (Number.isFinite(v.getTime()) ? v.toISOString() : undefined) : v;
  return typeof text === 'string' && Number.isFinite(Date.parse(text)) ? text : undefined;
}
