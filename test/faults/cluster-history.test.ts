// The safety check the reconciler fault suite reads from the stored history (cluster-history.ts):
// a JobSet deleted while any of its pods still ran (Terminating or not) is flagged; pods that were
// terminal or gone before the deleting write, and anything after it, are not.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkDeletions, type StoredVersion } from './cluster-history.ts';

const jobSet = (type: string, rv: number, deleting = false): StoredVersion => ({
  resource: 'jobsets',
  type,
  rv,
  object: {
    metadata: {
      name: 'js',
      uid: 'js-1',
      resourceVersion: String(rv),
      ...(deleting ? { deletionTimestamp: '2026-12-01T00:00:00Z' } : {}),
    },
  },
});
const pod = (
  type: string,
  rv: number,
  phase: string,
  opts: { terminating?: boolean; jobSetUid?: string; name?: string } = {},
): StoredVersion => ({
  resource: 'pods',
  type,
  rv,
  object: {
    metadata: {
      name: opts.name ?? 'p',
      uid: `uid-${opts.name ?? 'p'}`,
      resourceVersion: String(rv),
      labels: { 'jobset.sigs.k8s.io/jobset-uid': opts.jobSetUid ?? 'js-1' },
      ...(opts.terminating ? { deletionTimestamp: '2026-12-01T00:00:00Z' } : {}),
    },
    status: { phase },
  },
});

const cases: Array<{
  name: string;
  versions: StoredVersion[];
  early: string[][];
  deletions: number;
  podsSeen?: number;
}> = [
  {
    name: 'pod gone before the delete',
    versions: [
      jobSet('ADDED', 1),
      pod('ADDED', 2, 'Running'),
      pod('DELETED', 5, 'Failed'),
      jobSet('MODIFIED', 6, true),
    ],
    early: [],
    deletions: 1,
    podsSeen: 1,
  },
  {
    name: 'pod Failed (not deleting) at the delete',
    versions: [
      jobSet('LISTED', 1),
      pod('LISTED', 2, 'Running'),
      pod('MODIFIED', 4, 'Failed'),
      jobSet('MODIFIED', 6, true),
    ],
    early: [],
    deletions: 1,
  },
  {
    name: 'pod Running at the delete',
    versions: [
      jobSet('ADDED', 1),
      pod('ADDED', 2, 'Running'),
      jobSet('MODIFIED', 6, true),
      pod('MODIFIED', 7, 'Failed'),
    ],
    early: [['p(Running)']],
    deletions: 1,
  },
  {
    name: 'pod Terminating at the delete',
    versions: [
      jobSet('ADDED', 1),
      pod('ADDED', 2, 'Running'),
      pod('MODIFIED', 3, 'Running', { terminating: true }),
      jobSet('MODIFIED', 6, true),
    ],
    early: [['p(Running, Terminating)']],
    deletions: 1,
  },
  {
    name: 'pod Pending at the delete',
    versions: [jobSet('ADDED', 1), pod('ADDED', 2, 'Pending'), jobSet('DELETED', 6)],
    early: [['p(Pending)']],
    deletions: 1,
  },
  {
    name: 'deleted without a foreground mark (DELETED only)',
    versions: [jobSet('ADDED', 1), pod('ADDED', 2, 'Succeeded'), jobSet('DELETED', 6)],
    early: [],
    deletions: 1,
  },
  {
    name: 'a pod of another JobSet running',
    versions: [jobSet('ADDED', 1), pod('ADDED', 2, 'Running', { jobSetUid: 'js-2' }), jobSet('MODIFIED', 6, true)],
    early: [],
    deletions: 1,
    podsSeen: 0,
  },
  {
    name: 'order of arrival does not matter, revisions do',
    versions: [
      jobSet('MODIFIED', 6, true),
      pod('MODIFIED', 7, 'Failed'),
      jobSet('ADDED', 1),
      pod('ADDED', 2, 'Running'),
    ],
    early: [['p(Running)']],
    deletions: 1,
  },
  { name: 'never deleted', versions: [jobSet('ADDED', 1), pod('ADDED', 2, 'Running')], early: [], deletions: 0 },
];

describe('checkDeletions', () => {
  for (const c of cases) {
    it(c.name, () => {
      const { deletions, early } = checkDeletions(c.versions);
      assert.deepEqual(
        early.map((e) => e.running),
        c.early,
      );
      assert.equal(deletions.length, c.deletions);
      if (c.podsSeen !== undefined) assert.equal(deletions[0].podsSeen, c.podsSeen);
    });
  }
});
