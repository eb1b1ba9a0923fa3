// What Trainer's controller image says beside the line the reconciler found from the TrainJob CRD:
// reported (a log line when it changes, trainjob_reconciler_trainer_line_hint and
// trainjob_reconciler_trainer_line_hint_disagreement), never used to choose the rules. The line
// comes from trainer-line-source.ts, the Deployment from trainer-manager-source.ts; `reportHint`
// is the pure part (what to say, at which level), `createLineHint` logs each new report once and
// keeps the metrics.
import type { Logger } from '../observability/logger.ts';
import { judgeImageHint, managerImageOf, type HintVerdict } from '../api/trainer-image-hint.ts';
import { UNKNOWN_TRAINER_LINE, type TrainerLine } from '../api/trainer-line.ts';
import type { ReconcilerMetrics } from './metrics.ts';

export interface DeploymentRef {
  namespace: string;
  name: string;
}

/** What the follower of Trainer's Deployment last saw. */
export type ManagerObservation =
  | { state: 'pending' }
  | { state: 'read'; deployment: unknown }
  /** No such Deployment: an empty list, a 404 or a delete. */
  | { state: 'absent' }
  | { state: 'forbidden'; error: string }
  | { state: 'failing'; error: string };

export type HintState = HintVerdict | 'absent' | 'forbidden' | 'failing' | 'pending' | 'off';
export const HINT_STATES: readonly HintState[] = [
  'agrees',
  'disagrees',
  'uninformative',
  'unreadable',
  'unknown-line',
  'absent',
  'forbidden',
  'failing',
  'pending',
  'off',
];

export interface HintReport {
  state: HintState;
  level: 'debug' | 'info' | 'warn';
  message: string;
  imageTag: string;
  /** The manager container and its image, when one was read. */
  container?: string;
  image?: string;
  /** Two reports with the same key say the same: the second is not logged again. */
  key: string;
}

/** The Role that grants the read (manifests/rbac/reconciler). */
export const TRAINER_DEPLOYMENT_ROLE = 'trainjob-webhook-reconciler-trainer-deployment';

/** The report for the line in force and what was seen of the Deployment (undefined: --no-trainer-deployment). */
export function reportHint(target: DeploymentRef | undefined, line: TrainerLine, seen: ManagerObservation): HintReport {
  const plain = (state: HintState, level: HintReport['level'], message: string): HintReport => ({
    state,
    level,
    message,
    imageTag: '',
    key: state,
  });
  if (!target) return plain('off', 'debug', "Trainer's controller image is not read (--no-trainer-deployment)");
  const ref = `${target.namespace}/${target.name}`;
  const crdAlone = 'the TrainJob CRD alone finds the line';
  switch (seen.state) {
    case 'pending':
      return plain('pending', 'debug', `Trainer's controller-manager Deployment ${ref} not read yet`);
    case 'absent':
      return plain(
        'absent',
        'info',
        `Trainer's controller-manager Deployment ${ref} is not there (Trainer installed under another Helm release name, in another namespace, or not as that Deployment): no image tag to read as a hint, ${crdAlone}; --trainer-deployment NS/NAME names another one`,
      );
    case 'forbidden':
      return plain(
        'forbidden',
        'warn',
        `cannot read Trainer's controller-manager Deployment ${ref} (${seen.error}): no right to it (the Role ${TRAINER_DEPLOYMENT_ROLE} in ${target.namespace}, manifests/rbac/reconciler), so its image tag, a hint only, is not read and ${crdAlone}; grant the Role there, or pass --no-trainer-deployment. Said once; retried with backoff`,
      );
    case 'failing':
      return plain(
        'failing',
        'warn',
        `reading Trainer's controller-manager Deployment ${ref} failed (${seen.error}); retrying with backoff, and meanwhile ${crdAlone}`,
      );
    case 'read': {
      const image = managerImageOf(seen.deployment);
      const judged = judgeImageHint(line, image);
      return {
        state: judged.verdict,
        level: judged.verdict === 'disagrees' ? 'warn' : 'info',
        message: `Trainer's controller image (${ref}): ${judged.message}`,
        imageTag: judged.imageTag,
        ...(image.ok ? { container: image.container, image: image.image } : {}),
        key: `${judged.verdict}|${line.id}|${judged.imageTag}|${image.ok ? image.image : judged.message}`,
      };
    }
  }
}

export interface LineHint {
  /** The line in force changed (or was first found). */
  line(line: TrainerLine): void;
  observe(seen: ManagerObservation): void;
  report(): HintReport;
}

/** Keeps the last line and observation, logs each new report once and sets the two gauges. */
export function createLineHint(opts: {
  target: DeploymentRef | undefined;
  logger: Logger;
  metrics: Pick<ReconcilerMetrics, 'trainerLineHint' | 'trainerLineHintDisagreement'>;
}): LineHint {
  let line: TrainerLine = UNKNOWN_TRAINER_LINE;
  let seen: ManagerObservation = { state: 'pending' };
  let last: HintReport | undefined;
  const update = () => {
    const next = reportHint(opts.target, line, seen);
    const { metrics } = opts;
    metrics.trainerLineHint.reset();
    metrics.trainerLineHint.set({ state: next.state }, 1);
    metrics.trainerLineHintDisagreement.reset();
    metrics.trainerLineHintDisagreement.set(
      { line: line.id, image_tag: next.imageTag },
      next.state === 'disagrees' ? 1 : 0,
    );
    if (next.key === last?.key) return;
    last = next;
    const fields = {
      trainerDeployment: opts.target ? `${opts.target.namespace}/${opts.target.name}` : 'off',
      lineHint: next.state,
      line: line.id,
      ...(next.imageTag ? { imageTag: next.imageTag } : {}),
      ...(next.container === undefined ? {} : { container: next.container, image: next.image }),
    };
    opts.logger[next.level](fields, next.message);
  };
  update();
  return {
    line(l) {
      line = l;
      update();
    },
    observe(s) {
      seen = s;
      update();
    },
    report: () => reportHint(opts.target, line, seen),
  };
}
