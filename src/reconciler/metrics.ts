// The reconciler's Prometheus metrics, on a registry of its own (like the webhook's).
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

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
  /** 1 while this replica holds the leader-election Lease (or runs without one). */
  leader: Gauge;
  /** Requests sent to the API server, by verb (get, list, watch, patch...) and resource. */
  apiRequests: Counter<'verb' | 'resource'>;
}

export function createReconcilerMetrics(options: { defaultMetrics?: boolean } = {}): ReconcilerMetrics {
  const registry = new Registry();
  if (options.defaultMetrics) collectDefaultMetrics({ register: registry });
  const registers = [registry];
  return {
    registry,
    reconciles: new Counter({ name: 'trainjob_reconciler_reconciles_total', help: 'TrainJob reconciles, by mode and outcome.', labelNames: ['mode', 'outcome'] as const, registers }),
    duration: new Histogram({
      name: 'trainjob_reconciler_reconcile_duration_seconds',
      help: 'Time of one reconcile (reads, decision, steps).',
      labelNames: ['mode'] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    }),
    steps: new Counter({ name: 'trainjob_reconciler_steps_total', help: 'Steps taken on the cluster, by kind.', labelNames: ['step'] as const, registers }),
    hints: new Counter({ name: 'trainjob_reconciler_handoff_hints_total', help: 'Hand-off hints from the webhook, by result.', labelNames: ['result'] as const, registers }),
    queueDepth: new Gauge({ name: 'trainjob_reconciler_queue_depth', help: 'TrainJob keys waiting in the work queue.', registers }),
    leader: new Gauge({ name: 'trainjob_reconciler_leader', help: '1 while this replica is the acting leader.', registers }),
    apiRequests: new Counter({ name: 'trainjob_reconciler_api_requests_total', help: 'Requests sent to the API server, by verb and resource.', labelNames: ['verb', 'resource'] as const, registers }),
  };
}
