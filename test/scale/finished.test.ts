// neverReconciledAgain: which TrainJobs a Trainer line never builds a JobSet for again (so the
// reconciler must never delete theirs), line by line, including statuses as hostile as the
// cluster can hold.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TRAINER_LINES, UNKNOWN_TRAINER_LINE, type TrainerLine } from '../../src/api/trainer-line.ts';
import type { JobSet, TrainJob } from '../../src/api/objects.ts';
import { neverReconciledAgain } from '../../src/scale/finished.ts';

const condition = (type: string, reason?: string) => ({ type, status: 'True', ...(reason ? { reason } : {}) });
const tj = (status?: unknown): TrainJob =>
  ({ apiVersion: 'trainer.kubeflow.org/v1alpha1', kind: 'TrainJob', metadata: { name: 't' }, status }) as TrainJob;
const js = (status?: unknown): JobSet =>
  ({ apiVersion: 'jobset.x-k8s.io/v1alpha2', kind: 'JobSet', metadata: { name: 't' }, status }) as JobSet;

const v230 = TRAINER_LINES['v2.3.0'];
const v221 = TRAINER_LINES['v2.2.1'];
const main = TRAINER_LINES['main-8c0f5059'];

const rows: { what: string; trainJob: TrainJob; jobSet?: JobSet; final: Record<string, boolean> }[] = [
  {
    what: 'running',
    trainJob: tj({ conditions: [] }),
    jobSet: js({}),
    final: { v221: false, v230: false, main: false },
  },
  {
    what: 'Complete',
    trainJob: tj({ conditions: [condition('Complete')] }),
    final: { v221: true, v230: true, main: true },
  },
  {
    what: 'Failed with DeadlineExceeded',
    trainJob: tj({ conditions: [condition('Failed', 'DeadlineExceeded')] }),
    final: { v221: true, v230: true, main: true },
  },
  {
    what: 'Failed for another reason (v2.3.0 drops it and builds again; main keeps it, #3891)',
    trainJob: tj({ conditions: [condition('Failed', 'JobSetFailed')] }),
    final: { v221: false, v230: false, main: true },
  },
  {
    what: 'its JobSet Completed',
    trainJob: tj({}),
    jobSet: js({ conditions: [condition('Completed')] }),
    final: { v221: true, v230: true, main: true },
  },
  {
    what: 'its JobSet Failed, the TrainJob not yet (main writes Failed from it on its next pass)',
    trainJob: tj({}),
    jobSet: js({ conditions: [condition('Failed')] }),
    final: { v221: false, v230: false, main: true },
  },
  {
    what: 'its JobSet Failed=False',
    trainJob: tj({}),
    jobSet: js({ conditions: [{ type: 'Failed', status: 'False' }] }),
    final: { v221: false, v230: false, main: false },
  },
];

const lines: Record<string, TrainerLine> = { v221, v230, main };

describe('neverReconciledAgain: finished for good, per Trainer line', () => {
  for (const row of rows)
    for (const [key, line] of Object.entries(lines))
      it(`${row.what}: ${row.final[key] ? 'final' : 'reconciled again'} under ${line.label}`, () => {
        const why = neverReconciledAgain(row.trainJob, row.jobSet, line);
        assert.equal(why !== undefined, row.final[key], why);
      });

  it('an unknown line takes the careful rule: a Failed JobSet is final', () => {
    assert.match(
      neverReconciledAgain(tj({}), js({ conditions: [condition('Failed')] }), UNKNOWN_TRAINER_LINE) ?? '',
      /JobSet t is Failed, which is final under an unknown Trainer version/,
    );
  });

  it('statuses of any shape are read, never thrown on', () => {
    const hostile: unknown[] = [
      undefined,
      null,
      'Failed',
      42,
      { conditions: 'Failed' },
      { conditions: [null, 7, 'x', { type: 'Failed' }, { type: 'Failed', status: true }] },
      { conditions: new Array(10_000).fill({ type: 'Failed', status: 'False' }) },
    ];
    for (const s of hostile)
      for (const line of [v230, main])
        assert.equal(neverReconciledAgain(tj(s), js(s), line), undefined, JSON.stringify(s)?.slice(0, 80));
  });
});
