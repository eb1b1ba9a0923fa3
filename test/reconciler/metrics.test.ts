// controller-runtime's and client-go's series for the reconciler's work queue: names, labels,
// and values that move as theirs do (adds merged while waiting, depth, retries on delayed adds,
// one reconcile result per run, in-progress work seen when scraped).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  CONTROLLER_NAME,
  createReconcilerMetrics,
  leaseRecorder,
  queueRecorder,
  type ReconcilerMetrics,
} from '../../src/reconciler/metrics.ts';
import { WorkQueue, type Timers } from '../../src/reconciler/queue.ts';

/** Series of one metric as { "label=value,...": value } (histograms: their _count only). */
async function seriesOf(metrics: ReconcilerMetrics, name: string): Promise<Record<string, number>> {
  const metric = metrics.registry.getSingleMetric(name);
  assert.ok(metric, `${name} is registered`);
  const { values } = await metric.get();
  return Object.fromEntries(
    values
      .filter((v) => {
        const series = (v as { metricName?: string }).metricName;
        return series === undefined || series.endsWith('_count');
      })
      .map((v) => [
        Object.entries(v.labels)
          .map(([k, x]) => `${k}=${x}`)
          .join(','),
        v.value,
      ]),
  );
}

const Q = `name=${CONTROLLER_NAME},controller=${CONTROLLER_NAME}`;
const C = `controller=${CONTROLLER_NAME}`;
const noTimers: Timers = { set: () => 0, clear: () => {} };
const tick = () => new Promise((r) => setImmediate(r));
function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe("reconciler: controller-runtime's and the work queue's series", () => {
  it('exist at 0 from the start, with controller-runtime names and labels', async () => {
    const metrics = createReconcilerMetrics();
    new WorkQueue({ workers: 1, handler: async () => {}, recorder: queueRecorder(metrics) });
    assert.deepEqual(await seriesOf(metrics, 'controller_runtime_reconcile_total'), {
      [`${C},result=error`]: 0,
      [`${C},result=requeue_after`]: 0,
      [`${C},result=requeue`]: 0,
      [`${C},result=success`]: 0,
    });
    assert.deepEqual(await seriesOf(metrics, 'controller_runtime_reconcile_errors_total'), { [C]: 0 });
    assert.deepEqual(await seriesOf(metrics, 'workqueue_depth'), { [`${Q},priority=`]: 0 });
    assert.deepEqual(await seriesOf(metrics, 'workqueue_adds_total'), { [Q]: 0 });
    assert.deepEqual(await seriesOf(metrics, 'workqueue_retries_total'), { [Q]: 0 });
    assert.deepEqual(await seriesOf(metrics, 'workqueue_unfinished_work_seconds'), { [Q]: 0 });
    assert.deepEqual(await seriesOf(metrics, 'workqueue_longest_running_processor_seconds'), { [Q]: 0 });
  });

  it('adds merged while waiting count once; depth follows; each run gives one result; delayed adds are retries', async () => {
    const metrics = createReconcilerMetrics();
    const results: Record<string, () => Promise<{ requeueAfterMs?: number } | void>> = {
      'ns/ok': async () => {},
      'ns/wait': async () => ({ requeueAfterMs: 5000 }),
      'ns/now': async () => ({ requeueAfterMs: 0 }),
      'ns/fail': async () => {
        throw new Error('boom');
      },
    };
    let runs = 0;
    const q = new WorkQueue({
      workers: 1,
      timers: noTimers,
      handler: (key) => {
        runs++;
        // 'ns/now' asks to run again at once: the second time it succeeds.
        return key === 'ns/now' && runs > 4 ? Promise.resolve() : results[key]!();
      },
      recorder: queueRecorder(metrics),
    });
    for (const k of ['ns/ok', 'ns/ok', 'ns/wait', 'ns/fail', 'ns/now', 'ns/wait']) q.add(k);
    assert.deepEqual(await seriesOf(metrics, 'workqueue_adds_total'), { [Q]: 4 });
    assert.deepEqual(await seriesOf(metrics, 'workqueue_depth'), { [`${Q},priority=`]: 4 });
    q.start();
    while (q.length || q.active) await tick();
    await q.shutdown();
    // ok, wait, fail, now, now again (its zero requeue is an immediate add).
    assert.equal(runs, 5);
    assert.deepEqual(await seriesOf(metrics, 'workqueue_adds_total'), { [Q]: 5 });
    assert.deepEqual(await seriesOf(metrics, 'workqueue_depth'), { [`${Q},priority=`]: 0 });
    assert.deepEqual(await seriesOf(metrics, 'controller_runtime_reconcile_total'), {
      [`${C},result=error`]: 1,
      [`${C},result=requeue_after`]: 1,
      [`${C},result=requeue`]: 1,
      [`${C},result=success`]: 2,
    });
    assert.deepEqual(await seriesOf(metrics, 'controller_runtime_reconcile_errors_total'), { [C]: 1 });
    // The requeue-after and the failure's backoff are delayed adds.
    assert.deepEqual(await seriesOf(metrics, 'workqueue_retries_total'), { [Q]: 2 });
    assert.deepEqual(await seriesOf(metrics, 'workqueue_queue_duration_seconds'), { [Q]: 5 });
    assert.deepEqual(await seriesOf(metrics, 'workqueue_work_duration_seconds'), { [Q]: 5 });
    assert.deepEqual(await seriesOf(metrics, 'controller_runtime_reconcile_time_seconds'), { [C]: 5 });
  });

  it('an add while the key runs counts once and waits; the running key is in progress when scraped', async () => {
    const metrics = createReconcilerMetrics();
    const gate = deferred();
    let runs = 0;
    const q = new WorkQueue({
      workers: 2,
      handler: async () => {
        if (++runs === 1) await gate.promise;
      },
      recorder: queueRecorder(metrics),
    });
    q.start();
    q.add('ns/a');
    await tick();
    q.add('ns/a');
    q.add('ns/a');
    assert.deepEqual(await seriesOf(metrics, 'workqueue_adds_total'), { [Q]: 2 });
    assert.deepEqual(await seriesOf(metrics, 'workqueue_depth'), { [`${Q},priority=`]: 1 });
    // Running for some time (how long is not asserted): a positive value, and the longest is the only one.
    const unfinished = (await seriesOf(metrics, 'workqueue_unfinished_work_seconds'))[Q]!;
    const longest = (await seriesOf(metrics, 'workqueue_longest_running_processor_seconds'))[Q]!;
    assert.ok(unfinished > 0 && longest > 0, `${unfinished} ${longest}`);
    gate.resolve();
    while (q.length || q.active) await tick();
    await q.shutdown();
    assert.equal(runs, 2);
    assert.deepEqual(await seriesOf(metrics, 'workqueue_depth'), { [`${Q},priority=`]: 0 });
    assert.deepEqual(await seriesOf(metrics, 'workqueue_unfinished_work_seconds'), { [Q]: 0 });
    assert.deepEqual(await seriesOf(metrics, 'controller_runtime_reconcile_total'), {
      [`${C},result=error`]: 0,
      [`${C},result=requeue_after`]: 0,
      [`${C},result=requeue`]: 0,
      [`${C},result=success`]: 2,
    });
  });
});

describe('reconciler: leader_election_master_status', () => {
  it('absent without a Lease; 0 from the start with one, 1 while leading, 0 once stopped', async () => {
    const metrics = createReconcilerMetrics();
    assert.deepEqual(await seriesOf(metrics, 'leader_election_master_status'), {});
    const lease = leaseRecorder(metrics, 'trainjob-webhook-reconciler');
    assert.deepEqual(await seriesOf(metrics, 'leader_election_master_status'), {
      'name=trainjob-webhook-reconciler': 0,
    });
    lease.leading();
    assert.deepEqual(await seriesOf(metrics, 'leader_election_master_status'), {
      'name=trainjob-webhook-reconciler': 1,
    });
    lease.stopped();
    assert.deepEqual(await seriesOf(metrics, 'leader_election_master_status'), {
      'name=trainjob-webhook-reconciler': 0,
    });
  });
});
