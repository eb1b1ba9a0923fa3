// status.trainjobWebhook, as the reconciler writes it: the count the JobSet is built for (per ML
// policy, read back from what Trainer built), the training nodes' pods' selector (the node job's,
// not the initializers' or an MPI launcher's), and the report's state and reason (cut to the
// schema's maxLength: the annotation is anyone's who may patch the TrainJob); and no write when the
// stored field is already that.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  builtNodes,
  cutToChars,
  nodeJobOf,
  REASON_MAX_CHARS,
  podSelector,
  sameStatusField,
  statusFieldApplyConfiguration,
  statusFieldOf,
} from '../../src/rebuild/status-field.ts';
import type { RuntimeRead } from '../../src/rebuild/decision.ts';
import { STATUS_FIELD_SCHEMA } from '../../src/rules/generate/scale-subresource.ts';
import type { JobSet } from '../../src/api/objects.ts';
import { torch1, trainerJobSet, trainJob, upstreamRuntime, withCount } from './fixtures.ts';

const NODES = 'jobset.sigs.k8s.io/jobset-name=torch1,jobset.sigs.k8s.io/replicatedjob-name=node';

const torch: RuntimeRead = { found: true, runtime: upstreamRuntime('torch') };
const deepspeed: RuntimeRead = { found: true, runtime: upstreamRuntime('deepspeed') };

describe('the status field', () => {
  it('a current JobSet: its count is the TrainJob numNodes; the selector names the node job pods', () => {
    const field = statusFieldOf({
      trainJob: torch1(1),
      jobSet: trainerJobSet('torch1'),
      runtime: torch,
      report: undefined,
    });
    assert.deepEqual(field, { nodes: 1, selector: NODES });
    assert.equal(podSelector('a'), 'jobset.sigs.k8s.io/jobset-name=a');
    assert.equal(
      podSelector('a', 'node'),
      'jobset.sigs.k8s.io/jobset-name=a,jobset.sigs.k8s.io/replicatedjob-name=node',
    );
  });

  it('a stale JobSet (numNodes changed to 3, built for 1): the built count, with the report state and reason', () => {
    const field = statusFieldOf({
      trainJob: torch1(3),
      jobSet: trainerJobSet('torch1'),
      runtime: torch,
      report: { state: 'Waiting', numNodes: 3, reason: 'its pods still run' },
    });
    assert.deepEqual(field, {
      nodes: 1,
      selector: NODES,
      rebuild: 'Waiting',
      reason: 'its pods still run',
    });
  });

  it('the selector leaves out the initializers pods and an MPI launcher: the node job alone', () => {
    const withInitializers = structuredClone(trainerJobSet('torch1')) as JobSet;
    const initializer = {
      name: 'dataset-initializer',
      replicas: 1,
      template: { metadata: {}, spec: { parallelism: 1 } },
    };
    withInitializers.spec!.replicatedJobs = [initializer, ...(withInitializers.spec?.replicatedJobs ?? [])] as never;
    const field = statusFieldOf({ trainJob: torch1(1), jobSet: withInitializers, runtime: torch, report: undefined });
    assert.equal(field.selector, NODES);
    assert.equal(nodeJobOf(torch1(1), withInitializers, undefined), 'node', 'without the runtime: the trainer job');
    // MPI: the launcher has the trainer label, the nodes are the node job (with the runtime or without).
    const mpiJob = trainJob('mpi', { trainer: { numNodes: 2 } }, 'deepspeed-distributed');
    assert.equal(nodeJobOf(mpiJob, trainerJobSet('mpi'), deepspeed), 'node');
    assert.equal(nodeJobOf(mpiJob, trainerJobSet('mpi'), undefined), 'node');
  });

  it('no JobSet: no count (the scale subresource then reads 0)', () => {
    const field = statusFieldOf({ trainJob: torch1(2), jobSet: undefined, report: { state: 'Rebuilding' } });
    assert.deepEqual(field, { selector: 'jobset.sigs.k8s.io/jobset-name=torch1', rebuild: 'Rebuilding' });
  });

  it("a reason longer than the schema's maxLength (anyone who may patch the TrainJob can write the annotation) is cut to it", () => {
    assert.equal(REASON_MAX_CHARS, STATUS_FIELD_SCHEMA.properties.reason.maxLength);
    const huge = 'x'.repeat(1_000_000);
    const field = statusFieldOf({ trainJob: torch1(2), jobSet: undefined, report: { state: 'Blocked', reason: huge } });
    assert.equal(field.reason?.length, REASON_MAX_CHARS);
    assert.ok(field.reason?.endsWith('x…'));
    const short = statusFieldOf({
      trainJob: torch1(2),
      jobSet: undefined,
      report: { state: 'Blocked', reason: 'why' },
    });
    assert.equal(short.reason, 'why', 'a reason within it is kept whole');
  });

  it('cuts on a character boundary: never half of a surrogate pair', () => {
    assert.equal(cutToChars('abc', 3), 'abc');
    assert.equal(cutToChars('abcd', 3), 'ab…');
    // '😀' is two UTF-16 units: a cut that would split it leaves it out whole.
    assert.equal(cutToChars('a😀bc', 3), 'a…');
    assert.equal(cutToChars('ab😀c', 4), 'ab…');
    assert.equal(cutToChars('a😀bcd', 4), 'a😀…');
  });

  it('without the runtime: the trainer job parallelism', () => {
    assert.equal(builtNodes(torch1(4), withCount(trainerJobSet('torch1'), 'node', 2), undefined, undefined), 2);
  });

  it('MPI: read back through the launcher-as-node rule; a node job of 1 keeps the count last written', () => {
    const mpiJob = (numNodes: number) => trainJob('mpi', { trainer: { numNodes } }, 'deepspeed-distributed');
    const js = trainerJobSet('mpi');
    const asNode = deepspeed.found && deepspeed.runtime.spec.mlPolicy?.mpi?.runLauncherAsNode === true;
    // Built for numNodes 4: the node job has 3 with the launcher as a node, else 4.
    const built = withCount(js, 'node', asNode ? 3 : 4);
    assert.equal(builtNodes(mpiJob(4), built, deepspeed, undefined), 4, 'current');
    assert.equal(builtNodes(mpiJob(6), built, deepspeed, undefined), 4, 'stale: read back');
    if (asNode) {
      const one = withCount(js, 'node', 1);
      assert.equal(builtNodes(mpiJob(5), one, deepspeed, 1), 1, 'the count last written, 1 or 2');
      assert.equal(builtNodes(mpiJob(5), one, deepspeed, undefined), 2);
    }
    // Without the runtime an MPI node job is ambiguous: the count last written stays.
    assert.equal(builtNodes(mpiJob(6), built, undefined, 4), 4);
  });

  it('is not written again when the stored field is the same, key for key (a count as bigint too)', () => {
    const tj = torch1(1);
    const field = statusFieldOf({ trainJob: tj, jobSet: trainerJobSet('torch1'), runtime: torch, report: undefined });
    assert.equal(sameStatusField(tj, field), false, 'none stored');
    tj.status = { trainjobWebhook: { selector: field.selector, nodes: 1n } };
    assert.equal(sameStatusField(tj, field), true);
    tj.status = { trainjobWebhook: { ...field, rebuild: 'Rebuilt' } };
    assert.equal(sameStatusField(tj, field), false, 'a report that is gone');
  });

  it('is applied on the status subresource alone: the field, nothing else of the TrainJob', () => {
    const tj = torch1(1);
    assert.deepEqual(statusFieldApplyConfiguration(tj, { nodes: 1, selector: 's' }), {
      apiVersion: 'trainer.kubeflow.org/v1alpha1',
      kind: 'TrainJob',
      metadata: { name: 'torch1', namespace: 'ns' },
      status: { trainjobWebhook: { nodes: 1, selector: 's' } },
    });
  });
});
