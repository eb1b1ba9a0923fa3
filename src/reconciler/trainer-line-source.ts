// The installed Trainer line, for the reconciler's decisions: found by feature from the live
// TrainJob CRD (src/api/trainer-line-detect.ts), read with a watch on that one CRD (by name,
// follow-by-name.ts; raw JSON: a typed client would rename x-kubernetes-validations) and followed,
// so a Trainer upgrade changes the rules within a watch event. Until the CRD is read, or when it cannot be (no right,
// deleted, unreadable), the careful rules apply (UNKNOWN_TRAINER_LINE), with a warning.
// Read-only: putting the CRD patch back after an upgrade is not this module's concern.
import type { ApiClient } from '../cluster/api-request.ts';
import { CORE, resourcePath } from '../cluster/resource-path.ts';
import type { Logger } from '../observability/logger.ts';
import { TRAINJOB_CRD } from '../api/names.ts';
import { detectTrainerLine, type LineDetection } from '../api/trainer-line-detect.ts';
import { UNKNOWN_TRAINER_LINE, type TrainerLine } from '../api/trainer-line.ts';
import { followByName, type FollowedObject } from './follow-by-name.ts';

export interface TrainerLineSource {
  current(): TrainerLine;
  detection(): LineDetection | undefined;
  start(): Promise<void>;
  stop(): Promise<void>;
}

export function followTrainerLine(
  client: ApiClient,
  opts: {
    logger: Logger;
    /** Told every line adopted: the metric (one gauge per line id). */
    onLine?: (detection: LineDetection) => void;
    restartDelayMs?: number;
  },
): TrainerLineSource {
  let detection: LineDetection | undefined;
  const adopt = (crd: FollowedObject) => {
    const next = detectTrainerLine(crd);
    const changed = next.line.id !== detection?.line.id || next.fingerprint !== detection?.fingerprint;
    detection = next;
    if (!changed) return;
    opts.onLine?.(next);
    const fields = { crd: TRAINJOB_CRD, line: next.line.id, fingerprint: next.fingerprint, resembles: next.resembles };
    if (next.line.id === 'unknown') opts.logger.warn(fields, next.summary);
    else opts.logger.info(fields, `Trainer line: ${next.summary}`);
  };
  const follower = followByName(
    client,
    { path: resourcePath(CORE.crds), name: TRAINJOB_CRD },
    {
      onObject: adopt,
      onDeleted: () =>
        opts.logger.warn({ crd: TRAINJOB_CRD }, 'the TrainJob CRD was deleted; the last line found stays in force'),
      onError: (error) =>
        opts.logger.warn(
          { crd: TRAINJOB_CRD, error },
          detection
            ? 'the TrainJob CRD watch failed; the last line found stays in force; restarting it'
            : 'the TrainJob CRD cannot be read, so no Trainer line is known: the most careful rules apply (Failed is terminal; standalone mode builds no JobSet); retrying',
        ),
    },
    // A fixed delay: the line is what the decisions follow, worth a retry every few seconds.
    { initialMs: opts.restartDelayMs ?? 5_000, maxMs: opts.restartDelayMs ?? 5_000 },
  );
  return {
    current: () => detection?.line ?? UNKNOWN_TRAINER_LINE,
    detection: () => detection,
    start: () => follower.start(),
    stop: () => follower.stop(),
  };
}
