// leftAlone(): every TrainJob the reconciler leaves alone before it judges anything, and the words
// its log line gives (reason and what to do), one row per reason, in the order they are checked.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { JobSet, TrainJob } from '../../src/api/objects.ts';
import { leftAlone } from '../../src/rebuild/left-alone.ts';
import { torch1, trainerJobSet } from './fixtures.ts';

const deleting = (tj: TrainJob): TrainJob => ({
  ...tj,
  metadata: { ...tj.metadata, deletionTimestamp: '2026-12-01T00:00:00Z' },
});
const managedBy = (value: unknown) => (t: TrainJob) => ((t.spec as Record<string, unknown>).managedBy = value);

const rows: { name: string; trainJob: TrainJob; jobSet?: JobSet; reason: string | undefined }[] = [
  {
    name: "Trainer's own TrainJob (managedBy trainer.kubeflow.org/trainjob-controller) is not left alone",
    trainJob: torch1(2),
    jobSet: trainerJobSet('torch1'),
    reason: undefined,
  },
  {
    name: 'no managedBy (or an empty one) means Trainer: not left alone',
    trainJob: torch1(2, managedBy('')),
    reason: undefined,
  },
  {
    name: 'managed by MultiKueue',
    trainJob: torch1(2, managedBy('kueue.x-k8s.io/multikueue')),
    jobSet: trainerJobSet('torch1'),
    reason:
      'spec.managedBy is kueue.x-k8s.io/multikueue, not trainer.kubeflow.org/trainjob-controller: that controller runs this TrainJob, so its JobSet is neither rebuilt nor created here and nothing is written to it; managedBy cannot be changed, so for numNodes changes carried out by this reconciler, create the TrainJob without spec.managedBy',
  },
  {
    name: 'a managedBy that is not a string is shown as JSON',
    trainJob: torch1(2, managedBy({ a: 1 })),
    reason:
      'spec.managedBy is {"a":1}, not trainer.kubeflow.org/trainjob-controller: that controller runs this TrainJob, so its JobSet is neither rebuilt nor created here and nothing is written to it; managedBy cannot be changed, so for numNodes changes carried out by this reconciler, create the TrainJob without spec.managedBy',
  },
  {
    name: 'being deleted',
    trainJob: deleting(torch1(2)),
    jobSet: trainerJobSet('torch1'),
    reason:
      'the TrainJob is being deleted (metadata.deletionTimestamp is set): its JobSet is neither rebuilt nor created; to train again, create a new TrainJob',
  },
  {
    name: "the TrainJob's metadata cannot be read",
    trainJob: { ...torch1(2), metadata: { ...torch1(2).metadata, annotations: [] as never } },
    reason:
      'TrainJob ns/torch1: metadata.annotations is not an object: left alone, as metadata that cannot be read is never acted on (nothing is judged or written); correct that field to have the TrainJob reconciled',
  },
  {
    name: "the JobSet's metadata cannot be read",
    trainJob: torch1(2),
    jobSet: { ...trainerJobSet('torch1'), metadata: { ...trainerJobSet('torch1').metadata, uid: 7 as never } },
    reason:
      'JobSet ns/torch1: metadata.uid is not a string: left alone, as metadata that cannot be read is never acted on (nothing is judged or written); correct that field to have the TrainJob reconciled',
  },
  {
    name: 'unreadable metadata is said before another managedBy, which is said before a deletion',
    trainJob: deleting(
      torch1(2, (t) => {
        managedBy('kueue.x-k8s.io/multikueue')(t);
        (t.metadata as Record<string, unknown>).labels = 'x';
      }),
    ),
    reason:
      'TrainJob ns/torch1: metadata.labels is not an object: left alone, as metadata that cannot be read is never acted on (nothing is judged or written); correct that field to have the TrainJob reconciled',
  },
  {
    name: 'another managedBy is said before a deletion',
    trainJob: deleting(torch1(2, managedBy('kueue.x-k8s.io/multikueue'))),
    reason:
      'spec.managedBy is kueue.x-k8s.io/multikueue, not trainer.kubeflow.org/trainjob-controller: that controller runs this TrainJob, so its JobSet is neither rebuilt nor created here and nothing is written to it; managedBy cannot be changed, so for numNodes changes carried out by this reconciler, create the TrainJob without spec.managedBy',
  },
];

describe('leftAlone', () => {
  for (const row of rows)
    it(row.name, () => {
      assert.equal(leftAlone(row.trainJob, row.jobSet), row.reason);
    });
});
