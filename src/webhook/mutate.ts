// The mutating webhook: upstream Trainer's defaulting of `spec.runtimePatches[].time`, answered
// as a minimal JSONPatch (no patch at all when nothing needs a time).
import type { FastifyInstance } from 'fastify';
import { defaultRuntimePatchTimes } from './defaulting.ts';
import type { AdmissionReviewRequest } from './envelope.ts';
import { admissionRoute } from './route.ts';
import type { EdgeDeps, Outcome } from './route.ts';

export const MUTATE_PATH = '/mutate-trainer-kubeflow-org-v1alpha1-trainjob';

export interface MutateDeps extends EdgeDeps {
  /** The clock the defaulting stamps with (tests pass a fixed one). */
  now: () => Date;
}

export function registerMutateRoute(app: FastifyInstance, deps: MutateDeps): void {
  admissionRoute(app, MUTATE_PATH, 'mutate', async (req) => mutate(req, deps), deps);
}

function mutate(req: AdmissionReviewRequest, deps: MutateDeps): Outcome {
  const patch = defaultRuntimePatchTimes(req.operation, req.object, req.oldObject, deps.now());
  return { parts: { allowed: true, patch }, patchOps: patch.length };
}
