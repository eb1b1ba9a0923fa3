// Trainer's controller-manager Deployment, followed by name (follow-by-name.ts) for its image tag:
// a hint beside the line found from the TrainJob CRD (trainer-line-hint.ts), never the rules. Every
// outcome is an observation: a Deployment read, none there (an empty list, a 404, a delete), no
// right (403), another failure; after a failure it starts again with backoff (5 s doubling to
// 5 min: a hint is not worth more requests).
import type { ApiClient } from '../cluster/api-request.ts';
import { CORE, resourcePath } from '../cluster/resource-path.ts';
import { followByName, type ByNameFollower } from './follow-by-name.ts';
import type { DeploymentRef, ManagerObservation } from './trainer-line-hint.ts';

export type TrainerManagerSource = ByNameFollower;

export function followTrainerManager(
  client: ApiClient,
  opts: {
    target: DeploymentRef;
    onObservation: (seen: ManagerObservation) => void;
    restartDelayMs?: number;
    maxRestartDelayMs?: number;
  },
): TrainerManagerSource {
  const { namespace, name } = opts.target;
  const observe = opts.onObservation;
  return followByName(
    client,
    { path: resourcePath(CORE.deployments, { namespace }), name },
    {
      onObject: (deployment) => observe({ state: 'read', deployment }),
      onDeleted: () => observe({ state: 'absent' }),
      onNone: () => observe({ state: 'absent' }),
      onError: (described, code) => {
        const error = code && !described.includes(`HTTP ${code}`) ? `HTTP ${code}: ${described}` : described;
        observe(
          code === 403
            ? { state: 'forbidden', error }
            : code === 404
              ? { state: 'absent' }
              : { state: 'failing', error },
        );
      },
    },
    { initialMs: opts.restartDelayMs ?? 5_000, maxMs: opts.maxRestartDelayMs ?? 300_000 },
  );
}
