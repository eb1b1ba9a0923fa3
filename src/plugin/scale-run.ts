// `kubectl trainjob scale NAME --nodes N`, the I/O edge: the pre-checks (rights by
// SelfSubjectAccessReview, what cannot work, then one server-side dry run of the update that
// suspends and scales together), then the loop: observe, take the next step (scale-step.ts), show
// it, until done, refused, timed out or interrupted. Each of its writes carries the progress
// record (progress.ts), so an interrupted run is continued by the next.
import { TRAINER_MANAGED_BY } from '../api/names.ts';
import { intOf, type Runtime, type TrainJob } from '../api/objects.ts';
import type { ScaleArgs } from './args.ts';
import { ApiRefusal, showRight, WORKLOADS, type Cluster, type Right } from './cluster.ts';
import { refusalLines } from './kubectl-error.ts';
import { finishedReason, gracePeriodOf, isLive, KUEUE_QUEUE_LABEL, type Observed } from './observed.ts';
import { changePatch, progressOf, startingRecord, type ProgressRecord } from './progress.ts';
import { MAX_MESSAGE, printable } from './printable.ts';
import { elapsed, StepLines, type StepOutput } from './progress-line.ts';
import { nextScaleStep, type ScalePlan, type ScaleStep, type WaitFor } from './scale-step.ts';

export interface ScaleIo {
  /** Progress and results (stdout). */
  out: StepOutput;
  /** Errors and the API server's warnings (stderr). */
  err(text: string): void;
  /** SIGINT: the run stops at its next wait and says where the job is. */
  interrupted: AbortSignal;
  now?: () => number;
  pollMs?: number;
}

/** How the plugin is invoked, for the commands its messages suggest. */
export interface Invocation {
  program: string;
}

const RESOURCE = 'trainjob.trainer.kubeflow.org';
const nodesText = (n: number) => `${n} node${n === 1 ? '' : 's'}`;

/** Why a Workload write is needed: --no-resume's pause, or the end of the pause an earlier one holds. */
type WorkloadWrite = 'pause' | 'resume' | undefined;

function workloadWriteOf(tj: TrainJob, args: ScaleArgs): WorkloadWrite {
  if (!tj.metadata.labels?.[KUEUE_QUEUE_LABEL] || args.dryRun) return undefined;
  if (args.noResume) return 'pause';
  return progressOf(tj)?.step === 'held' ? 'resume' : undefined;
}

function rightsFor(
  args: ScaleArgs,
  ns: string,
  kueue: boolean,
  workloadWrite: WorkloadWrite,
): { required: Right[]; optional: Right[] } {
  const r = (verb: string, group: string, resource: string): Right => ({ verb, group, resource, namespace: ns });
  const required = [
    r('get', 'trainer.kubeflow.org', 'trainjobs'),
    r('patch', 'trainer.kubeflow.org', 'trainjobs'),
    r('get', 'jobset.x-k8s.io', 'jobsets'),
    r('list', '', 'pods'),
  ];
  if (workloadWrite) required.push(r('patch', WORKLOADS.group, 'workloads'));
  return { required, optional: kueue ? [r('list', WORKLOADS.group, 'workloads')] : [] };
}

function describeJob(o: Observed | undefined, tj: TrainJob): string {
  const live = o ? o.pods.filter(isLive).length : undefined;
  return `TrainJob ${tj.metadata.namespace}/${tj.metadata.name} is ${tj.spec?.suspend === true ? 'suspended' : 'not suspended'} with numNodes ${intOf(tj.spec?.trainer?.numNodes) ?? 'unset'}${live === undefined ? '' : `; ${live} pod${live === 1 ? '' : 's'} left`}`;
}

const WAIT_TITLES: Record<WaitFor, (n: number) => string> = {
  'pods-gone': () => 'waiting for the pods to stop',
  suspended: () => 'waiting for Kueue to suspend the job',
  rebuild: (n) => `waiting for the JobSet to be built for ${nodesText(n)}`,
  admission: () => 'waiting for Kueue to admit the job',
  scheduled: () => 'waiting for the pods to be scheduled',
};

/** What cannot work, read from the TrainJob before anything is written. */
function refusalBeforeWrite(tj: TrainJob, args: ScaleArgs): string | undefined {
  const managedBy = tj.spec?.managedBy;
  if (managedBy && managedBy !== TRAINER_MANAGED_BY)
    return `TrainJob ${tj.metadata.name} is managed by ${managedBy} (spec.managedBy), not by Trainer's controller in this cluster (MultiKueue runs it in a worker cluster): its pods cannot be paused and rebuilt from here. Create a new TrainJob with the count you want, or ask your platform team.`;
  const finished = finishedReason(tj);
  if (finished)
    return `TrainJob ${tj.metadata.name} is finished (${finished}): Trainer never runs it again, so its node count cannot change. Create a new TrainJob with ${args.nodes} nodes instead.`;
  return undefined;
}

async function preChecks(c: Cluster, args: ScaleArgs, io: ScaleIo, p: Invocation): Promise<TrainJob | number> {
  const probe = rightsFor(args, c.namespace, false, undefined);
  for (const right of probe.required.slice(0, 1)) if (!(await c.allowed(right))) return missing(io, right, p);
  const tj = await c.getTrainJob(args.name);
  const kueue = Boolean(tj.metadata.labels?.[KUEUE_QUEUE_LABEL]);
  const workloadWrite = workloadWriteOf(tj, args);
  const { required, optional } = rightsFor(args, c.namespace, kueue, workloadWrite);
  for (const right of required.slice(1))
    if (!(await c.allowed(right)))
      return missing(io, right, p, right.resource === 'workloads' ? workloadWrite : undefined);
  for (const right of optional)
    if (!(await c.allowed(right)))
      io.err(`Warning: you may not ${showRight(right)}: Kueue's reason for holding the job back cannot be shown`);
  const refusal = refusalBeforeWrite(tj, args);
  if (refusal) {
    io.err(`error: ${refusal}`);
    return 1;
  }
  return tj;
}

function missing(io: ScaleIo, right: Right, p: Invocation, workloadWrite?: WorkloadWrite): number {
  const editor = `(Kueue's workload-editor-role has it; workload-viewer-role does not)`;
  const why =
    workloadWrite === 'pause'
      ? `--no-resume under Kueue pauses the job through its Workload's spec.active: false, and you may not ${showRight(right)} ${editor}. Run without --no-resume, or ask your batch admin for that right`
      : workloadWrite === 'resume'
        ? `the job is paused by "${p.program} scale --no-resume" through its Workload's spec.active: false; resuming it sets spec.active: true, and you may not ${showRight(right)} ${editor}. Ask your batch admin to resume it, or for that right`
        : `you may not ${showRight(right)}, which ${p.program} scale needs. Ask your namespace admin for it (kubectl auth can-i ${right.verb} ${right.resource}${right.group ? `.${right.group}` : ''} -n ${right.namespace} checks it)`;
  io.err(`error: ${why}`);
  return 1;
}

function showRefusal(io: ScaleIo, err: unknown): number {
  if (!(err instanceof ApiRefusal)) throw err;
  for (const line of refusalLines(err.status)) io.err(line);
  return 1;
}

/** Dry runs tried before a conflict is shown: Kueue and the reconciler write the job too. */
const DRY_RUN_ATTEMPTS = 5;

/**
 * The one server-side dry run: the update that suspends and scales together, judged as a real one.
 * A conflict (another writer between the read and the dry run: Kueue's writes of a queued job,
 * the reconciler's report) reads the job again and tries again: nothing was written.
 */
async function dryRun(c: Cluster, first: TrainJob, args: ScaleArgs, io: ScaleIo): Promise<number | undefined> {
  let tj = first;
  let warnings: string[];
  try {
    for (let attempt = 1; ; attempt++) {
      try {
        ({ warnings } = await c.patchTrainJob(
          args.name,
          changePatch(tj, { suspend: true, numNodes: args.nodes }, undefined),
          true,
        ));
        break;
      } catch (err) {
        if (!(err instanceof ApiRefusal && err.status.code === 409) || attempt === DRY_RUN_ATTEMPTS) throw err;
        tj = await c.getTrainJob(args.name);
      }
    }
  } catch (err) {
    return showRefusal(io, err);
  }
  if (!args.dryRun) return undefined;
  for (const w of warnings) io.err(`Warning: ${printable(w, MAX_MESSAGE)}`);
  io.out.write(
    `${RESOURCE}/${args.name} scaled to ${nodesText(args.nodes)} (server dry run): the update that suspends and sets numNodes together is admitted; nothing changed\n`,
  );
  return 0;
}

export async function runScale(c: Cluster, args: ScaleArgs, io: ScaleIo, p: Invocation): Promise<number> {
  let tj: TrainJob;
  let paused: boolean;
  try {
    const checked = await preChecks(c, args, io, p);
    if (typeof checked === 'number') return checked;
    tj = checked;
    const dry = await dryRun(c, tj, args, io);
    if (dry !== undefined) return dry;
    paused = await pausedNow(c, tj);
  } catch (err) {
    return showRefusal(io, err);
  }
  return loop(c, args, io, p, tj, paused);
}

/**
 * Whether the job is paused as the scale begins. Under Kueue a suspended job is mostly Kueue's
 * doing (queued, preempted) and resumed by it once admitted; its pause is an inactive Workload.
 * Workloads the user may not read: not paused (the scale then waits for Kueue, saying why).
 */
async function pausedNow(c: Cluster, tj: TrainJob): Promise<boolean> {
  if (!tj.metadata.labels?.[KUEUE_QUEUE_LABEL]) return tj.spec?.suspend === true;
  const w = (await c.observe(tj)).kueue?.workloads;
  return Array.isArray(w) && w.some((x) => !x.active);
}

interface LoopState {
  record: ProgressRecord;
  plan: ScalePlan;
  lines: StepLines;
  runtimes: Map<string, Runtime | undefined>;
  graceShown: boolean;
}

// eslint-disable-next-line complexity -- the loop: observe, step, act, each outcome once
async function loop(
  c: Cluster,
  args: ScaleArgs,
  io: ScaleIo,
  p: Invocation,
  first: TrainJob,
  paused: boolean,
): Promise<number> {
  const now = io.now ?? Date.now;
  const started = now();
  const record = startingRecord(first, args.nodes, paused);
  const s: LoopState = {
    record,
    plan: { nodes: args.nodes, noResume: args.noResume, resume: !record.pausedBefore && !args.noResume },
    lines: new StepLines(io.out, now),
    runtimes: new Map(),
    graceShown: false,
  };
  if (record.pausedBefore && !args.noResume)
    io.out.write(
      first.metadata.labels?.[KUEUE_QUEUE_LABEL]
        ? `TrainJob ${args.name}'s Workload was inactive before (spec.active: false): it is scaled and stays paused\n`
        : `TrainJob ${args.name} was suspended before: it is scaled and stays suspended\n`,
    );
  let tj = first;
  let o: Observed | undefined;
  for (;;) {
    const timedOut = args.timeoutMs > 0 && now() - started > args.timeoutMs; // 0: no limit
    const stop = io.interrupted.aborted ? 'interrupted' : timedOut ? 'timeout' : undefined;
    if (stop) return stopped(io, s, stop, describeJob(o, tj), args, p, now() - started);
    try {
      tj = await c.getTrainJob(args.name);
      o = await c.observe(tj, s.runtimes);
    } catch (err) {
      if (err instanceof ApiRefusal && err.status.code === 404) return showRefusal(io, err);
      s.lines.step('reading the job', `failed (${(err as Error).message.slice(0, 200)}); trying again`);
      await sleep(io.pollMs ?? 1000, io.interrupted);
      continue;
    }
    const step = nextScaleStep(o, s.plan);
    const outcome = await act(c, o, step, s, io, args);
    if (typeof outcome === 'number') {
      // ", suspended" as the job is, not as planned: the last observation is after the last write.
      if (outcome === 0)
        io.out.write(
          `${RESOURCE}/${args.name} scaled to ${nodesText(args.nodes)}${o.trainJob.spec?.suspend === true ? ', suspended' : ''} (${elapsed(now() - started)})\n`,
        );
      return outcome;
    }
    if (outcome === 'wait') await sleep(io.pollMs ?? 1000, io.interrupted);
  }
}

function stopped(
  io: ScaleIo,
  s: LoopState,
  why: 'interrupted' | 'timeout',
  state: string,
  args: ScaleArgs,
  p: Invocation,
  ms: number,
): number {
  s.lines.end('✗');
  const again = `${p.program} scale ${args.name} -n ${args.namespace ?? 'default'} --nodes ${args.nodes}${args.noResume ? ' --no-resume' : ''}`;
  io.err(
    `${why === 'interrupted' ? 'interrupted' : `error: timed out after ${elapsed(ms)}`}: ${state}. Its progress is recorded on the TrainJob: run "${again}" to continue from here, or "${p.program} status ${args.name} -n ${args.namespace ?? 'default'}" to see where it is.`,
  );
  return why === 'interrupted' ? 130 : 1;
}

interface Write {
  title: string;
  detail?: string;
  change: { suspend?: boolean; numNodes?: number };
  /** The record written with it (undefined: removed). */
  record: ProgressRecord | undefined;
}

/** A write of the TrainJob: 'again' once written or on a conflict (someone else wrote it: observe again). */
async function write(c: Cluster, io: ScaleIo, s: LoopState, tj: TrainJob, w: Write): Promise<'again' | number> {
  s.lines.step(w.title);
  try {
    const { warnings } = await c.patchTrainJob(tj.metadata.name ?? '', changePatch(tj, w.change, w.record));
    s.lines.end('✓', w.detail ?? '');
    for (const text of warnings) io.err(`Warning: ${printable(text, MAX_MESSAGE)}`);
    if (w.record) s.record = w.record;
    return 'again';
  } catch (err) {
    if (err instanceof ApiRefusal && err.status.code === 409) return 'again';
    s.lines.end('✗');
    return showRefusal(io, err);
  }
}

/** Kueue's pause for --no-resume: the record first (the pause is the plugin's), then spec.active: false. */
async function deactivate(c: Cluster, io: ScaleIo, s: LoopState, tj: TrainJob, workloads: string[]) {
  if (s.record.step !== 'held') {
    const r = await recordHeld(c, io, s, tj);
    if (r !== 'again') return r;
  }
  return setActive(c, io, s, workloads, false);
}

/** The record's step `held`: the pause is the plugin's, so that a later scale ends it. */
const recordHeld = (c: Cluster, io: ScaleIo, s: LoopState, tj: TrainJob) =>
  write(c, io, s, tj, {
    title: 'recording the pause on the TrainJob',
    change: {},
    record: { ...s.record, step: 'held' },
  });

/**
 * spec.active of the Workloads: false is the pause, true (once numNodes is set) its end, after
 * which Kueue admits the Workload and resumes the job.
 */
async function setActive(c: Cluster, io: ScaleIo, s: LoopState, workloads: string[], active: boolean) {
  s.lines.step(`${active ? 'activating' : 'deactivating'} Workload ${workloads.join(', ')} (spec.active: ${active})`);
  try {
    for (const w of workloads) await c.setWorkloadActive(w, active);
  } catch (err) {
    s.lines.end('✗');
    return showRefusal(io, err);
  }
  s.lines.end(
    '✓',
    active ? 'Kueue admits it when it fits and resumes the job' : 'Kueue evicts it and suspends the job',
  );
  return 'again' as const;
}

/** The end: a pause the plugin holds keeps its record (step held); otherwise the record is removed. */
async function finish(c: Cluster, io: ScaleIo, s: LoopState, tj: TrainJob, held: boolean) {
  s.lines.end('✓', '');
  const has = progressOf(tj);
  if (held && !s.record.pausedBefore) {
    return has?.step === 'held' ? 0 : recordHeld(c, io, s, tj);
  }
  if (!has) return 0;
  return write(c, io, s, tj, { title: 'removing the progress record', change: {}, record: undefined });
}

async function act(
  c: Cluster,
  o: Observed,
  step: ScaleStep,
  s: LoopState,
  io: ScaleIo,
  args: ScaleArgs,
): Promise<'again' | 'wait' | number> {
  const tj = o.trainJob;
  const grace = gracePeriodOf(o.jobSet, tj, o.runtime);
  switch (step.kind) {
    case 'refuse':
    case 'blocked':
      s.lines.end('✗');
      io.err(`error: ${printable(step.why, MAX_MESSAGE)}`);
      return 1;
    case 'pause':
      return write(c, io, s, tj, {
        title:
          step.numNodes === undefined
            ? 'pausing the job (spec.suspend: true)'
            : `pausing and scaling in one update (spec.suspend: true, numNodes: ${step.numNodes})`,
        detail: `its pods have ${grace}s to checkpoint (terminationGracePeriodSeconds)`,
        change: { suspend: true, ...(step.numNodes === undefined ? {} : { numNodes: step.numNodes }) },
        record: { ...s.record, step: step.numNodes === undefined ? 'paused' : 'scaled' },
      });
    case 'deactivate':
      return deactivate(c, io, s, tj, step.workloads);
    case 'activate':
      return setActive(c, io, s, step.workloads, true);
    case 'set-nodes':
      return write(c, io, s, tj, {
        title: `setting numNodes to ${args.nodes}`,
        change: { numNodes: args.nodes },
        record: { ...s.record, step: args.noResume ? 'held' : 'scaled' },
      });
    case 'resume':
      return write(c, io, s, tj, {
        title: 'resuming the job (spec.suspend: false)',
        change: { suspend: false },
        record: { ...s.record, step: 'resumed' },
      });
    case 'wait':
      s.lines.step(
        WAIT_TITLES[step.for](args.nodes),
        step.for === 'pods-gone'
          ? `${step.detail}; they have ${grace}s to checkpoint (terminationGracePeriodSeconds)`
          : step.detail,
      );
      return 'wait';
    case 'done':
      return finish(c, io, s, tj, step.held);
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
