// The reconciler's Prometheus metrics, on a registry of its own (like the webhook's).
// Beside our own series, controller-runtime's and client-go's (pkg/internal/controller/metrics,
// pkg/internal/metrics/workqueue.go, client-go's leaderelection), so dashboards made for Go
// controllers work; outcomes by kind (rebuilt, blocked...) stay in ours.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { QueueRecorder } from './queue.ts';

/** The `controller` (and work queue `name`) label: distinct from Trainer's own "trainjob" controller. */
export const CONTROLLER_NAME = 'trainjob-rebuild';

/** prometheus.ExponentialBuckets(10e-9, 10, 12): the work queue's histograms. */
const WORKQUEUE_BUCKETS = Array.from({ length: 12 }, (_, i) => Number((1e-8 * 10 ** i).toPrecision(1)));
/** controller_runtime_reconcile_time_seconds's buckets. */
const RECONCILE_TIME_BUCKETS = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 1.75,
  2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60,
];

export interface ReconcilerMetrics {
  registry: Registry;
  /** Reconciles by mode and outcome (current, applied, waiting, deleted, rebuilt, skipped, error...). */
  reconciles: Counter<'mode' | 'outcome'>;
  duration: Histogram<'mode'>;
  /** Steps taken, by kind (delete-jobset, release-pvc, hand-back-pvc, apply-jobset, ...). */
  steps: Counter<'step'>;
  /** Hand-off hints by result: received, invalid, persisted (queued), expired (never stored in time). */
  hints: Counter<'result'>;
  queueDepth: Gauge;
  /**
   * Watch events by source (trainjob, jobset, job) and result (decision-inputs.ts): intent (queued
   * at once), changed (queued after the batching window), unchanged (nothing a decision reads
   * changed: not queued).
   */
  watchEvents: Counter<'source' | 'result'>;
  /** 1 while this replica holds the leader-election Lease (or runs without one). */
  leader: Gauge;
  /** Requests sent to the API server, by verb (get, list, watch, patch...) and resource. */
  apiRequests: Counter<'verb' | 'resource'>;
  /**
   * The CRD patch restorer (`--restore-crd-patch`): what it did, by result (restored, disclaimed:
   * the field ownership given back, refused: a CRD it may not patch, failed: a write that failed).
   */
  crdPatchRestores: Counter<'result'>;
  /** 1 while the TrainJob CRD has the patch in force, 0 while not; only with the restorer on. */
  crdPatchInForce: Gauge;
  /** 1 for the Trainer line whose rules are in force (from the live CRD; `unknown`: the careful rules). */
  trainerLine: Gauge<'line'>;
  controllerRuntime: {
    reconciles: Counter<'controller' | 'result'>;
    reconcileErrors: Counter<'controller'>;
    reconcileTime: Histogram<'controller'>;
    /** client-go's leaderelection gauge, by Lease name; only with leader election, as there. */
    leaderElectionMasterStatus: Gauge<'name'>;
  };
  workqueue: {
    depth: Gauge<'name' | 'controller' | 'priority'>;
    adds: Counter<'name' | 'controller'>;
    queueDuration: Histogram<'name' | 'controller'>;
    workDuration: Histogram<'name' | 'controller'>;
    retries: Counter<'name' | 'controller'>;
    unfinishedWork: Gauge<'name' | 'controller'>;
    longestRunningProcessor: Gauge<'name' | 'controller'>;
    /** Run when either of the two gauges above is scraped, to set them from the running keys. */
    onScrape: Array<() => void>;
  };
}

// eslint-disable-next-line max-lines-per-function -- one declaration per series, ours and controller-runtime's
export function createReconcilerMetrics(options: { defaultMetrics?: boolean } = {}): ReconcilerMetrics {
  const registry = new Registry();
  if (options.defaultMetrics) collectDefaultMetrics({ register: registry });
  const registers = [registry];
  const onScrape: Array<() => void> = [];
  const collect = () => onScrape.forEach((update) => update());
  return {
    registry,
    reconciles: new Counter({
      name: 'trainjob_reconciler_reconciles_total',
      help: 'TrainJob reconciles, by mode and outcome.',
      labelNames: ['mode', 'outcome'] as const,
      registers,
    }),
    duration: new Histogram({
      name: 'trainjob_reconciler_reconcile_duration_seconds',
      help: 'Time of one reconcile (reads, decision, steps).',
      labelNames: ['mode'] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    }),
    steps: new Counter({
      name: 'trainjob_reconciler_steps_total',
      help: 'Steps taken on the cluster, by kind.',
      labelNames: ['step'] as const,
      registers,
    }),
    hints: new Counter({
      name: 'trainjob_reconciler_handoff_hints_total',
      help: 'Hand-off hints from the webhook, by result.',
      labelNames: ['result'] as const,
      registers,
    }),
    queueDepth: new Gauge({
      name: 'trainjob_reconciler_queue_depth',
      help: 'TrainJob keys waiting in the work queue.',
      registers,
    }),
    watchEvents: new Counter({
      name: 'trainjob_reconciler_watch_events_total',
      help: 'Watch events, by source (trainjob, jobset, job) and result: intent (the TrainJob or its spec came, went or changed: queued at once), changed (something else a decision reads: queued after a short batching window), overwritten (only the status field changed, written by someone else: queued after a delay that grows while it goes on), unchanged (nothing a decision reads changed, or the reconciler’s own status-field write came back: not queued).',
      labelNames: ['source', 'result'] as const,
      registers,
    }),
    leader: new Gauge({
      name: 'trainjob_reconciler_leader',
      help: '1 while this replica is the acting leader.',
      registers,
    }),
    apiRequests: new Counter({
      name: 'trainjob_reconciler_api_requests_total',
      help: 'Requests sent to the API server, by verb and resource.',
      labelNames: ['verb', 'resource'] as const,
      registers,
    }),
    crdPatchRestores: new Counter({
      name: 'trainjob_reconciler_crd_patch_restores_total',
      help: 'What the CRD patch restorer did to the TrainJob CRD, by result (restored, disclaimed, refused, failed).',
      labelNames: ['result'] as const,
      registers,
    }),
    crdPatchInForce: new Gauge({
      name: 'trainjob_reconciler_crd_patch_in_force',
      help: "1 while the TrainJob CRD has this project's patch in force, 0 while not (set by the CRD patch restorer only).",
      registers,
    }),
    trainerLine: new Gauge({
      name: 'trainjob_reconciler_trainer_line',
      help: '1 for the Trainer line found from the live TrainJob CRD, whose rules the reconciler follows; line="unknown": none of the known lines (or the CRD unreadable), so the most careful rules apply.',
      labelNames: ['line'] as const,
      registers,
    }),
    controllerRuntime: {
      reconciles: new Counter({
        name: 'controller_runtime_reconcile_total',
        help: 'Total number of reconciliations per controller',
        labelNames: ['controller', 'result'] as const,
        registers,
      }),
      reconcileErrors: new Counter({
        name: 'controller_runtime_reconcile_errors_total',
        help: 'Total number of reconciliation errors per controller',
        labelNames: ['controller'] as const,
        registers,
      }),
      reconcileTime: new Histogram({
        name: 'controller_runtime_reconcile_time_seconds',
        help: 'Length of time per reconciliation per controller',
        labelNames: ['controller'] as const,
        buckets: RECONCILE_TIME_BUCKETS,
        registers,
      }),
      leaderElectionMasterStatus: new Gauge({
        name: 'leader_election_master_status',
        help: "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease. Please make sure to group by name.",
        labelNames: ['name'] as const,
        registers,
      }),
    },
    workqueue: {
      depth: new Gauge({
        name: 'workqueue_depth',
        help: 'Current depth of workqueue by workqueue and priority',
        labelNames: ['name', 'controller', 'priority'] as const,
        registers,
      }),
      adds: new Counter({
        name: 'workqueue_adds_total',
        help: 'Total number of adds handled by workqueue',
        labelNames: ['name', 'controller'] as const,
        registers,
      }),
      queueDuration: new Histogram({
        name: 'workqueue_queue_duration_seconds',
        help: 'How long in seconds an item stays in workqueue before being requested',
        labelNames: ['name', 'controller'] as const,
        buckets: WORKQUEUE_BUCKETS,
        registers,
      }),
      workDuration: new Histogram({
        name: 'workqueue_work_duration_seconds',
        help: 'How long in seconds processing an item from workqueue takes.',
        labelNames: ['name', 'controller'] as const,
        buckets: WORKQUEUE_BUCKETS,
        registers,
      }),
      retries: new Counter({
        name: 'workqueue_retries_total',
        help: 'Total number of items added to the workqueue with a non-zero delay (rate-limited requeues, explicit RequeueAfter or AddAfter calls)',
        labelNames: ['name', 'controller'] as const,
        registers,
      }),
      unfinishedWork: new Gauge({
        name: 'workqueue_unfinished_work_seconds',
        help: "How many seconds of work has been done that is in progress and hasn't been observed by work_duration. Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this increases.",
        labelNames: ['name', 'controller'] as const,
        collect,
        registers,
      }),
      longestRunningProcessor: new Gauge({
        name: 'workqueue_longest_running_processor_seconds',
        help: 'How many seconds has the longest running processor for workqueue been running.',
        labelNames: ['name', 'controller'] as const,
        collect,
        registers,
      }),
      onScrape,
    },
  };
}

/**
 * The work queue's and controller-runtime's reconcile series for one queue, as controller-runtime
 * records them (its queue and controller share one name); series exist at 0 from the start.
 */
export function queueRecorder(metrics: ReconcilerMetrics, name: string = CONTROLLER_NAME): QueueRecorder {
  const q = { name, controller: name };
  const cr = metrics.controllerRuntime;
  const wq = metrics.workqueue;
  for (const result of ['error', 'requeue_after', 'requeue', 'success'] as const)
    cr.reconciles.inc({ controller: name, result }, 0);
  cr.reconcileErrors.inc({ controller: name }, 0);
  wq.depth.set({ ...q, priority: '' }, 0);
  wq.adds.inc(q, 0);
  wq.retries.inc(q, 0);
  let running: () => number[] = () => [];
  // client-go updates these two every 500 ms; here they are computed when scraped.
  const collectRunning = () => {
    const seconds = running();
    wq.unfinishedWork.set(
      q,
      seconds.reduce((a, b) => a + b, 0),
    );
    wq.longestRunningProcessor.set(q, seconds.length ? Math.max(...seconds) : 0);
  };
  wq.onScrape.push(collectRunning);
  collectRunning();
  return {
    added(depth) {
      wq.adds.inc(q);
      wq.depth.set({ ...q, priority: '' }, depth);
    },
    taken(depth, waitedSeconds) {
      wq.depth.set({ ...q, priority: '' }, depth);
      wq.queueDuration.observe(q, waitedSeconds);
    },
    finished(seconds, result) {
      wq.workDuration.observe(q, seconds);
      cr.reconcileTime.observe({ controller: name }, seconds);
      cr.reconciles.inc({ controller: name, result });
      if (result === 'error') cr.reconcileErrors.inc({ controller: name });
    },
    delayed() {
      wq.retries.inc(q);
    },
    watchRunning(fn) {
      running = fn;
    },
  };
}

/**
 * Leadership as client-go's leaderelection reports it: leader_election_master_status{name} is 0
 * from the start and follows the Lease (our trainjob_reconciler_leader is set by the caller, as it
 * also covers running without a Lease).
 */
export function leaseRecorder(metrics: ReconcilerMetrics, leaseName: string): { leading(): void; stopped(): void } {
  const status = metrics.controllerRuntime.leaderElectionMasterStatus;
  status.set({ name: leaseName }, 0);
  return {
    leading: () => status.set({ name: leaseName }, 1),
    stopped: () => status.set({ name: leaseName }, 0),
  };
}
