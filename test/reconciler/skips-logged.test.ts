// A TrainJob the reconciler leaves alone (src/rebuild/left-alone.ts) says why at info once per
// change, through reconcileKey and its SkipMemo: the looks after that (resyncs, watch events) at
// debug; said again when the generation (a numNodes change), the uid or the reason moves, or after
// the TrainJob was gone or acted on. Nothing is read but the TrainJob and its JobSet, and nothing
// is written. The routine "nothing to do" stays at debug.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TRAINER_LINES } from '../../src/api/trainer-line.ts';
import type { JobSet, TrainJob } from '../../src/api/objects.ts';
import { createLogger } from '../../src/observability/logger.ts';
import type { ReconcilerCluster } from '../../src/reconciler/cluster.ts';
import { createReconcilerMetrics } from '../../src/reconciler/metrics.ts';
import { reconcileKey } from '../../src/reconciler/reconcile.ts';
import { SkipMemo } from '../../src/reconciler/skip-memo.ts';
import { leftAlone } from '../../src/rebuild/left-alone.ts';
import { encodeReport, type EventSpec, type RebuildReport } from '../../src/rebuild/report.ts';
import { REPORT_ANNOTATION } from '../../src/api/names.ts';
import { torch1, trainerJobSet } from '../rebuild/fixtures.ts';

interface Line {
  level: string;
  msg: string;
  outcome?: string;
  detail?: string;
  trainJob?: string;
  reason?: string;
  generation?: number;
}

/**
 * The TrainJob and JobSet as stored; a report applied lands on the TrainJob, an Event is recorded;
 * any other call is recorded and fails.
 */
function world(state: { trainJob?: TrainJob; jobSet?: JobSet }) {
  const calls: string[] = [];
  const cluster = new Proxy({} as ReconcilerCluster, {
    get: (_target, prop) => {
      if (prop === 'getTrainJob') return async () => (calls.push('get-trainjob'), state.trainJob);
      if (prop === 'getJobSet') return async () => (calls.push('get-jobset'), state.jobSet);
      if (prop === 'applyReport')
        return async (tj: TrainJob, report: RebuildReport) => {
          calls.push(`report:${report.state}`);
          const annotations = { ...tj.metadata.annotations, [REPORT_ANNOTATION]: encodeReport(report) };
          state.trainJob = { ...tj, metadata: { ...tj.metadata, annotations } };
        };
      if (prop === 'recordEvent') return async (_tj: TrainJob, e: EventSpec) => void calls.push(`event:${e.reason}`);
      return async () => {
        calls.push(String(prop));
        throw new Error(`unexpected call: ${String(prop)}`);
      };
    },
  });
  const lines: Line[] = [];
  const skips = new SkipMemo();
  const deps = {
    mode: 'companion' as const,
    trainer: () => TRAINER_LINES['v2.3.0'],
    cluster,
    skips,
    logger: createLogger('debug', { write: (line: string) => void lines.push(JSON.parse(line)) }),
    metrics: createReconcilerMetrics(),
  };
  const look = () => reconcileKey('ns/torch1', deps);
  /** The 'left alone' lines at info, as `generation: reason`. */
  const said = () =>
    lines.filter((l) => l.msg === 'left alone' && l.level === 'info').map((l) => `${l.generation}: ${l.reason}`);
  return { state, calls, cluster, lines, skips, look, said };
}

const multikueue = (numNodes: number, generation: number) =>
  torch1(numNodes, (t) => {
    t.spec!.managedBy = 'kueue.x-k8s.io/multikueue';
    t.metadata.generation = generation;
  });
const deleting = (tj: TrainJob): TrainJob => ({
  ...tj,
  metadata: { ...tj.metadata, deletionTimestamp: '2026-12-01T00:00:00Z' },
});
const unreadableJobSet = (): JobSet => {
  const js = trainerJobSet('torch1');
  return { ...js, metadata: { ...js.metadata, labels: 'x' as never } };
};
const reasonOf = (tj: TrainJob, js?: JobSet) => leftAlone(tj, js) ?? assert.fail('not left alone');

describe('reconcileKey: a TrainJob left alone says why once per change', () => {
  it('another managedBy: said at info once, with its name and reason; resyncs at debug; a numNodes change said again', async () => {
    const w = world({ trainJob: multikueue(1, 1), jobSet: trainerJobSet('torch1') });
    for (let i = 0; i < 3; i++) assert.deepEqual(await w.look(), {});
    const reason = reasonOf(w.state.trainJob!);
    assert.deepEqual(w.said(), [`1: ${reason}`]);
    const first = w.lines.find((l) => l.level === 'info');
    assert.equal(first?.trainJob, 'ns/torch1');
    assert.equal(w.lines.filter((l) => l.msg === 'left alone' && l.level === 'debug').length, 2);

    w.state.trainJob = multikueue(2, 2); // the user's numNodes change: a new generation
    await w.look();
    await w.look();
    assert.deepEqual(w.said(), [`1: ${reason}`, `2: ${reason}`]);
    assert.deepEqual(new Set(w.calls), new Set(['get-trainjob', 'get-jobset']), 'nothing but the two reads');
  });

  it('another reason at the same generation is said again', async () => {
    const w = world({ trainJob: torch1(2), jobSet: unreadableJobSet() });
    await w.look();
    await w.look();
    // The JobSet's metadata corrected, and the TrainJob deleted meanwhile (one look sees both).
    w.state.jobSet = trainerJobSet('torch1');
    w.state.trainJob = deleting(torch1(2));
    await w.look();
    await w.look();
    assert.deepEqual(w.said(), [
      `1: ${reasonOf(torch1(2), unreadableJobSet())}`,
      `1: ${reasonOf(deleting(torch1(2)), trainerJobSet('torch1'))}`,
    ]);
    assert.match(w.said()[1]!, /being deleted/);
  });

  it('acted on in between, the same skip is said again; the routine "nothing to do" stays at debug', async () => {
    const w = world({ trainJob: torch1(2), jobSet: unreadableJobSet() });
    await w.look();
    assert.equal(w.skips.size, 1);
    // Companion mode, no JobSet yet: Trainer builds it; nothing to do, nothing said at info.
    w.state.jobSet = undefined;
    await w.look();
    assert.equal(w.skips.size, 0, 'forgotten once acted on');
    assert.deepEqual(
      w.lines.filter((l) => l.msg === 'reconciled').map((l) => l.level),
      ['debug'],
    );
    w.state.jobSet = unreadableJobSet();
    await w.look();
    const reason = reasonOf(torch1(2), unreadableJobSet());
    assert.deepEqual(w.said(), [`1: ${reason}`, `1: ${reason}`]);
  });

  it('gone, it is forgotten: the TrainJob created again is said again', async () => {
    const w = world({ trainJob: multikueue(1, 1) });
    await w.look();
    w.state.trainJob = undefined;
    await w.look();
    assert.equal(w.skips.size, 0);
    w.state.trainJob = multikueue(1, 1);
    await w.look();
    assert.equal(w.said().length, 2);
  });

  it('without a memo, said at info at every look', async () => {
    const w = world({ trainJob: multikueue(1, 1) });
    const lines: Line[] = [];
    const logger = createLogger('debug', { write: (line: string) => void lines.push(JSON.parse(line)) });
    for (let i = 0; i < 2; i++)
      await reconcileKey('ns/torch1', {
        mode: 'companion',
        trainer: () => TRAINER_LINES['v2.3.0'],
        cluster: w.cluster,
        logger,
        metrics: createReconcilerMetrics(),
      });
    assert.deepEqual(
      lines.filter((l) => l.msg === 'left alone').map((l) => l.level),
      ['info', 'info'],
    );
  });
});

describe('reconcileKey: a TrainJob held back (blocked, unsupported) says why at info once per change', () => {
  it('a JobSet it does not control (Unsupported): the report and the line at info once; later looks at debug; a numNodes change said again', async () => {
    const foreign = trainerJobSet('torch1');
    foreign.metadata.ownerReferences = [];
    const w = world({ trainJob: torch1(1), jobSet: foreign });
    const held = () =>
      w.lines.filter((l) => l.msg === 'reconciled').map((l) => `${l.level} ${l.outcome} ${l.generation}: ${l.detail}`);
    for (let i = 0; i < 3; i++) await w.look();
    const reason = `JobSet torch1 is not controlled by this TrainJob (uid trainjob-uid-torch1): left alone`;
    assert.deepEqual(
      w.calls.filter((c) => !c.startsWith('get-')),
      ['report:Unsupported', 'event:JobSetNotReconciled'],
    );
    assert.deepEqual(held(), [
      `info unsupported 1: ${reason}`,
      `debug unsupported 1: ${reason}`,
      `debug unsupported 1: ${reason}`,
    ]);

    w.state.trainJob = { ...w.state.trainJob!, metadata: { ...w.state.trainJob!.metadata, generation: 2 } };
    await w.look();
    await w.look();
    assert.deepEqual(held().slice(3), [`info unsupported 2: ${reason}`, `debug unsupported 2: ${reason}`]);
    assert.equal(w.calls.filter((c) => !c.startsWith('get-')).length, 2, 'the report is not written again');
  });
});
