// Is the JobSet stale: would Trainer build different immutable parts for this TrainJob's numNodes?
// Only the node-count-bearing parts are compared (per ML policy, see ml-policy.ts): anything else
// that differs is not this reconciler's business. Pure.
import { describeReplicatedJob, expectedNodeShape, findReplicatedJob, type MlPolicy } from './ml-policy.ts';
import { intOf, type JobSet, type Runtime, type TrainJob } from '../api/objects.ts';
import { malformedJobSet } from '../api/wellformed.ts';

export interface NodeCounts {
  /** The TrainJob's effective numNodes. */
  numNodes: number;
  /** The replicated job that carries the count, and its parallelism in the JobSet and as wanted. */
  replicatedJob: string;
  from: number | undefined;
  to: number;
}

export type Staleness =
  | { verdict: 'current'; policy: MlPolicy; counts: NodeCounts }
  | { verdict: 'stale'; policy: MlPolicy; counts: NodeCounts; differences: string[] }
  /** Cannot be judged (unknown ML policy, no such replicated job, a malformed object): left alone and reported. */
  | { verdict: 'unknown'; reason: string };

// eslint-disable-next-line complexity -- every count-bearing part compared in one place, all differences listed
export function isJobSetStale(trainJob: TrainJob, runtime: Runtime, jobSet: JobSet): Staleness {
  const expected = expectedNodeShape(trainJob, runtime);
  if (!expected.known) return { verdict: 'unknown', reason: expected.reason };
  const { shape } = expected;
  const malformed = malformedJobSet(jobSet);
  if (malformed) return { verdict: 'unknown', reason: malformed };
  const rJob = findReplicatedJob(jobSet.spec?.replicatedJobs, shape);
  if (!rJob)
    return { verdict: 'unknown', reason: `JobSet ${jobSet.metadata.name} has no ${describeReplicatedJob(shape)}` };

  const spec = rJob.template?.spec;
  const parallelism = intOf(spec?.parallelism) ?? 1;
  const completions = intOf(spec?.completions) ?? parallelism;
  const counts: NodeCounts = { numNodes: shape.numNodes, replicatedJob: rJob.name, from: parallelism, to: shape.count };
  const differences: string[] = [];
  const at = `spec.replicatedJobs[${rJob.name}].template.spec`;
  if (parallelism !== shape.count) differences.push(`${at}.parallelism is ${parallelism}, want ${shape.count}`);
  if (completions !== shape.count) differences.push(`${at}.completions is ${completions}, want ${shape.count}`);
  if (shape.env) {
    const container = spec?.template?.spec?.containers?.find((c) => c.name === shape.env?.container);
    const env = container?.env?.find((e) => e.name === shape.env?.name);
    if (env && env.value !== shape.env.value) {
      differences.push(
        `${at}.template.spec.containers[${shape.env.container}].env[${shape.env.name}] is ${JSON.stringify(env.value ?? null)}, want "${shape.env.value}"`,
      );
    }
  }
  return differences.length
    ? { verdict: 'stale', policy: shape.policy, counts, differences }
    : { verdict: 'current', policy: shape.policy, counts };
}
