// `kubectl trainjob scale`'s next step, from what it observes of the job and its progress record:
// a state machine without state of its own, so that a run after Ctrl-C (or a conflict with another
// writer) continues from whatever it finds. Pure.
//
// The order: pause (non-Kueue: spec.suspend; under Kueue the update that suspends and sets numNodes
// together, as Kueue undoes a lone suspend of an admitted job; with --no-resume under Kueue, the
// Workload's spec.active: false), wait until no pod runs or terminates, set numNodes, wait until
// the JobSet is built for it (the reconciler rebuilds a suspended JobSet once its pods are gone),
// resume (never under Kueue: Kueue resumes an admitted job; a pause --no-resume held through the
// Workload ends with spec.active: true once numNodes is set), wait until its pods are scheduled.
import { intOf } from '../api/objects.ts';
import { finishedReason, isLive, jobSetNodes, reportFor, scheduledPods, type Observed } from './observed.ts';
import { printable } from './printable.ts';

export interface ScalePlan {
  nodes: number;
  /** Resume at the end: not with --no-resume, nor a job that was paused before the first run. */
  resume: boolean;
  noResume: boolean;
}

export type WaitFor = 'pods-gone' | 'suspended' | 'rebuild' | 'admission' | 'scheduled';

export type ScaleStep =
  | { kind: 'refuse'; why: string }
  | { kind: 'pause'; numNodes?: number }
  | { kind: 'deactivate'; workloads: string[] }
  /** Under Kueue, the end of a pause held through the Workload: Kueue then admits and resumes the job. */
  | { kind: 'activate'; workloads: string[] }
  | { kind: 'set-nodes' }
  | { kind: 'resume' }
  | { kind: 'wait'; for: WaitFor; detail: string }
  /** The reconciler cannot rebuild for this count: its report says why. */
  | { kind: 'blocked'; why: string }
  /** held: the job stays paused by this plugin (--no-resume): its record stays. */
  | { kind: 'done'; held: boolean };

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

function podsStillThere(o: Observed): string | undefined {
  const live = o.pods.filter(isLive);
  if (live.length === 0) return undefined;
  const terminating = live.filter((p) => p.deleting).length;
  return `${plural(live.length, 'pod')} left (${terminating} terminating)`;
}

function kueueHold(o: Observed): string {
  const w = o.kueue?.workloads;
  if (!w) return 'waiting for Kueue to admit the job';
  if ('unreadable' in w) return `waiting for Kueue to admit the job (its Workload cannot be read: ${w.unreadable})`;
  const current = w.find((x) => x.active) ?? w[0];
  if (!current) return 'waiting for Kueue to create the Workload for the new count';
  if (!current.active)
    return `Workload ${current.name} is inactive (spec.active: false): Kueue admits it once it is active again`;
  if (current.admitted) return `Workload ${current.name} is admitted: Kueue resumes the job`;
  return `Kueue has not admitted Workload ${current.name}${current.reason ? `: ${current.reason}` : ''}${current.message ? `: ${current.message}` : ''}`;
}

function rollout(o: Observed, nodes: number): ScaleStep | undefined {
  const js = o.jobSet;
  const built = jobSetNodes(o.trainJob, js, o.runtime);
  if (!js || built !== nodes)
    return {
      kind: 'wait',
      for: 'rebuild',
      detail: !js
        ? 'the JobSet is being re-created'
        : `the JobSet is built for ${built ?? 'another count'}; the reconciler rebuilds it for ${nodes}`,
    };
  return undefined;
}

// eslint-disable-next-line complexity -- the scale's steps in their order, one branch each
export function nextScaleStep(o: Observed, plan: ScalePlan): ScaleStep {
  const tj = o.trainJob;
  const finished = finishedReason(tj);
  if (finished) return { kind: 'refuse', why: `the TrainJob is finished (${finished}): Trainer never runs it again` };
  const suspended = tj.spec?.suspend === true;
  const atCount = intOf(tj.spec?.trainer?.numNodes) === plan.nodes;
  const kueue = o.kueue !== undefined;
  const report = reportFor(tj, plan.nodes);
  if (atCount && (report?.state === 'Blocked' || report?.state === 'Unsupported'))
    return { kind: 'blocked', why: `${report.state}: ${report.reason ? printable(report.reason) : 'no reason given'}` };

  // Kueue's own pause: every active Workload of the job made inactive (the Workload for the new
  // count too, which Kueue creates active).
  const workloads = o.kueue && !('unreadable' in o.kueue.workloads) ? o.kueue.workloads : [];
  const active = workloads.filter((w) => w.active).map((w) => w.name);
  if (kueue && plan.noResume && active.length) return { kind: 'deactivate', workloads: active };

  // --no-resume pauses a running job even when its count is already the one asked for.
  if (!suspended && (!atCount || plan.noResume)) {
    if (kueue && plan.noResume)
      return { kind: 'wait', for: 'suspended', detail: 'Kueue suspends the job once its Workload is evicted' };
    return kueue ? { kind: 'pause', numNodes: plan.nodes } : { kind: 'pause' };
  }
  const left = podsStillThere(o);
  if (suspended && left) return { kind: 'wait', for: 'pods-gone', detail: left };
  if (!atCount) return { kind: 'set-nodes' };

  if (suspended) {
    if (!plan.resume) {
      // A paused job is done once numNodes is set; its JobSet is rebuilt meanwhile (without Kueue, waited for).
      const pending = kueue ? undefined : rollout(o, plan.nodes);
      return pending && o.jobSet ? pending : { kind: 'done', held: plan.noResume };
    }
    // plan.resume under Kueue: no Workload was inactive when the scale began but the one this
    // plugin's --no-resume made so, so an inactive one now is that pause.
    const inactive = workloads.filter((w) => !w.active).map((w) => w.name);
    if (kueue && inactive.length) return { kind: 'activate', workloads: inactive };
    if (kueue) return { kind: 'wait', for: 'admission', detail: kueueHold(o) };
    return rollout(o, plan.nodes) ?? { kind: 'resume' };
  }
  const pending = rollout(o, plan.nodes);
  if (pending) return pending;
  const { scheduled, want } = scheduledPods(o.jobSet!, o.pods);
  if (scheduled < want)
    return { kind: 'wait', for: 'scheduled', detail: `${scheduled} of ${plural(want, 'pod')} scheduled` };
  return { kind: 'done', held: false };
}
