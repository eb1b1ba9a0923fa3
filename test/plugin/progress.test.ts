// The progress record a scale starts from: the one on the job, or the job's pause now.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { TrainJob } from '../../src/api/objects.ts';
import { PROGRESS_ANNOTATION, startingRecord } from '../../src/plugin/progress.ts';

const tj = (suspend: boolean, record?: string): TrainJob => ({
  metadata: { name: 't', namespace: 'ns', ...(record ? { annotations: { [PROGRESS_ANNOTATION]: record } } : {}) },
  spec: { suspend, trainer: { numNodes: 1 } },
});

describe('startingRecord', () => {
  const cases: [string, ReturnType<typeof startingRecord>, ReturnType<typeof startingRecord>][] = [
    ['a suspended job: paused before', startingRecord(tj(true), 2), { nodes: 2, step: 'paused', pausedBefore: true }],
    ['a running job: not', startingRecord(tj(false), 2), { nodes: 2, step: 'paused', pausedBefore: false }],
    [
      "under Kueue, suspended by Kueue (queued, preempted) with its Workload active: the caller's word, not paused",
      startingRecord(tj(true), 2, false),
      { nodes: 2, step: 'paused', pausedBefore: false },
    ],
    [
      'a record on the job: its pausedBefore kept, the new count taken',
      startingRecord(tj(true, '{"nodes":3,"step":"held","pausedBefore":false}'), 2, true),
      { nodes: 2, step: 'held', pausedBefore: false },
    ],
  ];
  for (const [name, got, want] of cases)
    it(name, () => {
      assert.deepEqual(got, want);
    });
});
