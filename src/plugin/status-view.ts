// `kubectl trainjob status`: what a user needs to know about a job's node count, read from the
// observation (status.ts of the rebuild is the reconciler's; this is the user's view). One job as
// a short block, all of a namespace as a table, or the view itself as JSON/YAML. The text renderings
// print every string read from the cluster through printable.ts (the JSON/YAML view keeps them as
// they are). Pure.
import { intOf } from '../api/objects.ts';
import { isObject } from '../json/object.ts';
import { previousReport } from '../rebuild/report.ts';
import { initializersOf, isLive, jobSetNodes, trainerState, type Observed } from './observed.ts';
import { printable } from './printable.ts';
import { progressOf } from './progress.ts';

export interface StatusView {
  name: string;
  namespace: string;
  /** spec.trainer.numNodes (absent: the runtime's default). */
  nodes?: number;
  /** The count the JobSet is built for. */
  jobSetNodes?: number;
  state: string;
  suspended: boolean;
  pods: { live: number; running: number };
  rebuild: { state: 'none' | 'pending' | 'done' | 'blocked'; report?: string; reason?: string };
  kueue?: {
    queue: string;
    admitted?: boolean;
    workload?: string;
    reason?: string;
    message?: string;
    unreadable?: string;
  };
  /** The initializers a rebuild runs again. */
  initializers: string[];
  /** kubectl trainjob scale's record: a scale under way or interrupted, or a pause it holds. */
  scale?: { nodes: number; step: string; pausedBefore: boolean };
  /** The project's status field, when the CRD patch has it (status.trainjobWebhook). */
  trainjobWebhook?: Record<string, unknown>;
  next: string;
}

const REBUILD_STATE = {
  Waiting: 'pending',
  Rebuilding: 'pending',
  Rebuilt: 'done',
  Blocked: 'blocked',
  Unsupported: 'blocked',
} as const;

function rebuildOf(o: Observed, nodes: number | undefined, built: number | undefined): StatusView['rebuild'] {
  const report = previousReport(o.trainJob);
  const stale = nodes !== undefined && built !== undefined && nodes !== built;
  if (!report) return stale ? { state: 'pending', reason: `the JobSet is built for ${built}` } : { state: 'none' };
  const state = stale && report.state === 'Rebuilt' ? 'pending' : REBUILD_STATE[report.state];
  return { state, report: report.state, ...(report.reason ? { reason: report.reason } : {}) };
}

function kueueOf(o: Observed): StatusView['kueue'] {
  if (!o.kueue) return undefined;
  const w = o.kueue.workloads;
  if ('unreadable' in w) return { queue: o.kueue.queue, unreadable: w.unreadable };
  const current = w.find((x) => x.active) ?? w[0];
  if (!current) return { queue: o.kueue.queue };
  return {
    queue: o.kueue.queue,
    admitted: current.admitted,
    workload: current.name,
    ...(current.reason ? { reason: current.reason } : {}),
    ...(current.message ? { message: current.message } : {}),
  };
}

// eslint-disable-next-line complexity -- one line of advice per state, most pressing first
function nextOf(v: Omit<StatusView, 'next'>, kubectl: string): string {
  const ns = `-n ${v.namespace}`;
  if (v.state === 'Complete' || v.state === 'Failed')
    return `nothing: the job is ${v.state}; create a new TrainJob to train again`;
  if (v.rebuild.state === 'blocked')
    return `the rebuild is blocked: ${v.rebuild.reason ?? 'see the Events of the TrainJob'}`;
  if (v.scale && v.scale.step === 'held' && v.suspended)
    return `paused by "${kubectl} scale --no-resume" at ${v.scale.nodes} nodes: "${kubectl} scale ${v.name} ${ns} --nodes ${v.scale.nodes}" resumes it`;
  if (v.scale && v.scale.step !== 'held')
    return `a scale to ${v.scale.nodes} nodes did not finish: "${kubectl} scale ${v.name} ${ns} --nodes ${v.scale.nodes}" continues it`;
  if (v.rebuild.state === 'pending') return 'wait: the reconciler rebuilds the JobSet once none of its pods runs';
  if (v.kueue && v.suspended && v.kueue.admitted === false)
    return `wait for Kueue to admit it${v.kueue.reason ? ` (${v.kueue.reason})` : ''}, or scale it to fewer nodes`;
  if (v.suspended && !v.kueue)
    return `resume it: kubectl patch trainjob ${v.name} ${ns} --type=merge -p '{"spec":{"suspend":false}}'`;
  return `to change its node count: ${kubectl} scale ${v.name} ${ns} --nodes N`;
}

export function statusView(o: Observed, kubectl = 'kubectl trainjob'): StatusView {
  const tj = o.trainJob;
  const nodes = intOf(tj.spec?.trainer?.numNodes);
  const built = jobSetNodes(tj, o.jobSet, o.runtime);
  const record = progressOf(tj);
  const own = isObject(tj.status) && isObject(tj.status.trainjobWebhook) ? tj.status.trainjobWebhook : undefined;
  const live = o.pods.filter((p) => isLive(p) && !p.deleting);
  const view: Omit<StatusView, 'next'> = {
    name: tj.metadata.name ?? '?',
    namespace: tj.metadata.namespace ?? '',
    ...(nodes === undefined ? {} : { nodes }),
    ...(built === undefined ? {} : { jobSetNodes: built }),
    state: trainerState(o),
    suspended: tj.spec?.suspend === true,
    pods: { live: live.length, running: live.filter((p) => p.phase === 'Running').length },
    rebuild: rebuildOf(o, nodes, built),
    ...(o.kueue ? { kueue: kueueOf(o) } : {}),
    initializers: initializersOf(o.jobSet, o.runtime),
    ...(record ? { scale: record } : {}),
    ...(own ? { trainjobWebhook: own } : {}),
  };
  return { ...view, next: nextOf(view, kubectl) };
}

const orDash = (v: unknown) => (v === undefined || v === '' ? '-' : String(v));

function rebuildText(v: StatusView): string {
  const r = v.rebuild;
  if (r.state === 'none') return 'none';
  return `${r.state}${r.report ? ` (${r.report})` : ''}${r.reason ? `: ${r.reason}` : ''}`;
}

function kueueText(k: NonNullable<StatusView['kueue']>): string {
  if (k.unreadable) return `queue ${k.queue}; its Workload cannot be read (${k.unreadable})`;
  if (k.admitted === undefined) return `queue ${k.queue}; no Workload yet`;
  if (k.admitted) return `queue ${k.queue}; admitted (Workload ${k.workload})`;
  return `queue ${k.queue}; not admitted${k.reason ? `: ${k.reason}` : ''}${k.message ? `: ${k.message}` : ''}`;
}

/** The view with every string read from the cluster made printable (its `next` left to be redone). */
function printableView(v: StatusView): StatusView {
  const opt = <K extends string>(key: K, s: string | undefined) =>
    (s === undefined ? {} : { [key]: printable(s) }) as Partial<Record<K, string>>;
  const { rebuild: r, kueue: k } = v;
  return {
    ...v,
    name: printable(v.name),
    namespace: printable(v.namespace),
    state: printable(v.state),
    rebuild: { state: r.state, ...opt('report', r.report), ...opt('reason', r.reason) },
    ...(k
      ? {
          kueue: {
            queue: printable(k.queue),
            ...(k.admitted === undefined ? {} : { admitted: k.admitted }),
            ...opt('workload', k.workload),
            ...opt('reason', k.reason),
            ...opt('message', k.message),
            ...opt('unreadable', k.unreadable),
          },
        }
      : {}),
    initializers: v.initializers.map((i) => printable(i)),
  };
}

/**
 * One job, as a short block of `Field: value` lines. Its strings from the cluster are printable
 * (printable.ts), in the advice of its `Next:` line too, which is written again from them.
 */
export function renderBlock(view: StatusView, kubectl = 'kubectl trainjob'): string {
  const shown = printableView(view);
  const v = { ...shown, next: nextOf(shown, kubectl) };
  const lines: [string, string][] = [
    ['Name', `${v.namespace}/${v.name}`],
    ['Nodes', `${orDash(v.nodes)} asked; the JobSet is built for ${orDash(v.jobSetNodes)}`],
    [
      'State',
      `${v.state}${v.suspended && v.state !== 'Suspended' ? ' (suspended)' : ''}; ${v.pods.running} of ${v.pods.live} pods running`,
    ],
    ['Rebuild', rebuildText(v)],
  ];
  if (v.kueue) lines.push(['Kueue', kueueText(v.kueue)]);
  if (v.scale)
    lines.push([
      'Scale',
      `to ${v.scale.nodes} nodes, last step ${v.scale.step}${v.scale.pausedBefore ? ' (paused before)' : ''}`,
    ]);
  if (v.initializers.length) lines.push(['Initializers', `${v.initializers.join(', ')}: a rebuild runs them again`]);
  lines.push(['Next', v.next]);
  return lines.map(([k, val]) => `${`${k}:`.padEnd(14)}${val}`).join('\n');
}

/** All jobs of a namespace, as kubectl's table: columns padded, three spaces apart. */
export function renderTable(views: StatusView[]): string {
  const rows = [
    ['NAME', 'NODES', 'JOBSET', 'STATE', 'REBUILD', 'KUEUE'],
    ...views.map((v) => [
      v.name,
      orDash(v.nodes),
      orDash(v.jobSetNodes),
      `${v.state}`,
      v.rebuild.state === 'none' ? '-' : v.rebuild.state,
      v.kueue
        ? v.kueue.admitted === true
          ? 'admitted'
          : v.kueue.admitted === false
            ? (v.kueue.reason ?? 'pending')
            : '-'
        : '-',
    ]),
  ].map((row) => row.map((cell) => printable(cell)));
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return rows
    .map((r) =>
      r
        .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] + 3)))
        .join('')
        .trimEnd(),
    )
    .join('\n');
}
