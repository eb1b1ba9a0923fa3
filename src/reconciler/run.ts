// The reconciler process: watches and hints feed one work queue; its workers reconcile while this
// replica leads; health and metrics on the ops port. Everything here is wiring; the decisions are
// in decide.ts and the cluster calls in cluster.ts.
import type { FastifyInstance } from 'fastify';
import type { Logger } from '../observability/logger.ts';
import { buildOpsServer } from '../observability/ops-server.ts';
import { listenOn } from '../process/listen.ts';
import { describeError } from '../cluster/errors.ts';
import { countingRequests, type ApiClient } from '../cluster/api-request.ts';
import type { CrdPatchPlanner, CrdPatchRestorer } from './crd-patch-restorer.ts';
import { CRD_PATCH_RESTORER_FIELD_MANAGER } from './names.ts';
import { describeRequest } from './api-requests.ts';
import { crashNow } from './crash-point.ts';
import { createReconcilerCluster } from './cluster.ts';
import type { ReconcileConfig } from './config.ts';
import { buildHandoffServer } from './handoff-server.ts';
import type { Hint } from '../handoff/hint.ts';
import { awaitPersisted } from './hint-wait.ts';
import { createLeaderElector } from './lease.ts';
import { createReconcilerMetrics, leaseRecorder, queueRecorder, type ReconcilerMetrics } from './metrics.ts';
import { keyOf } from './keys.ts';
import { WorkQueue } from './queue.ts';
import { reconcileKey } from './reconcile.ts';
import { WaitMemo } from './wait-memo.ts';
import { SkipMemo } from './skip-memo.ts';
import { RuntimeMemo } from './runtime-memo.ts';
import { createWatches } from './watches.ts';
import { cacheShapeFor } from './cache-shape.ts';
import { DecisionInputGate, WATCH_BATCH_MS, type WatchSource } from './decision-inputs.ts';
import { OVERWRITES_WORTH_A_WARNING } from './status-field-echo.ts';
import { followTrainerLine } from './trainer-line-source.ts';
import { statusFieldApplier, type StatusFieldApply } from './status-field.ts';

export interface ReconcilerHandle {
  handoffPort: number;
  opsPort: number;
  metrics: ReconcilerMetrics;
  close(): Promise<void>;
}

export interface ReconcilerDeps {
  /** The API server, through the project's request layer (src/cluster/connect.ts). */
  client: ApiClient;
  /**
   * The Lease's own connections (default: client's), as kube-controller-manager gives leader
   * election a client of its own: a renewal must not queue behind the watches' list pages and the
   * workers' reads for the request layer's few sockets (a relist after an API server restart).
   */
  leaseClient?: ApiClient;
  logger: Logger;
  metrics?: ReconcilerMetrics;
  /** With --restore-crd-patch: decides what the CRD patch restorer writes (chosen by the command). */
  crdPatchPlanner?: CrdPatchPlanner;
}

function portOf(app: FastifyInstance): number {
  const address = app.server.address();
  return typeof address === 'object' && address ? address.port : 0;
}

const leaseClientOf = (deps: ReconcilerDeps) => deps.leaseClient ?? deps.client;
const leaderElector = (config: ReconcileConfig, client: ApiClient, logger: Logger) =>
  config.leaderElection ? createLeaderElector(client, config.leaderElection, logger) : undefined;

// eslint-disable-next-line max-lines-per-function -- the process's wiring, in start order, around one queue
export async function startReconciler(config: ReconcileConfig, deps: ReconcilerDeps): Promise<ReconcilerHandle> {
  const logger = deps.logger.child({ role: 'reconciler', mode: config.mode });
  const metrics = deps.metrics ?? createReconcilerMetrics({ defaultMetrics: true });
  const identity = config.leaderElection?.identity ?? 'single';
  // Everything below goes through these clients, which count their requests (trainjob_reconciler_api_requests_total).
  const counted = (c: ApiClient) =>
    countingRequests(c, (method, path) => metrics.apiRequests.inc(describeRequest(method, path)));
  const client = counted(deps.client);
  const cluster = createReconcilerCluster(client, { fieldManager: config.fieldManager, identity });
  const writeStatusField = statusFieldApplier(client, config.fieldManager);
  // The gate takes this write's echo for no change, and anyone else's change of the field for one.
  const applyStatusField: StatusFieldApply = async (trainJob, field) => {
    const key = keyOf(trainJob.metadata.namespace ?? '', trainJob.metadata.name ?? '');
    gate.expectStatusField(key, trainJob.metadata.uid, field);
    try {
      await writeStatusField(trainJob, field);
    } catch (err) {
      gate.statusFieldWriteFailed(key);
      throw err;
    }
  };
  const elector = leaderElector(config, counted(leaseClientOf(deps)), logger);

  const runtimes = new RuntimeMemo();
  const waits = new WaitMemo();
  const skips = new SkipMemo();
  const queue = new WorkQueue({
    workers: config.workers,
    handler: (key) => {
      metrics.queueDepth.set(queue.length);
      // A write of an earlier reconcile may still echo: this one decides from the cache as it is.
      gate.reconcileStarts(key);
      return reconcileKey(key, {
        mode: config.mode,
        trainer: trainerLine.current,
        fieldManager: config.fieldManager,
        cluster,
        applyStatusField,
        cache: watches.cache,
        runtimes,
        waits,
        skips,
        logger,
        metrics,
        mayWrite: elector ? () => elector.isLeader() : undefined,
        crashAfter: config.crashAfter,
        crash: () => crashNow(logger, String(config.crashAfter)),
      });
    },
    onRetry: (key, _err, attempt, delayMs) => logger.debug({ trainJob: key, attempt, delayMs }, 'retry scheduled'),
    recorder: queueRecorder(metrics),
  });
  const enqueue = (key: string) => {
    queue.add(key);
    metrics.queueDepth.set(queue.length);
  };

  // Every TrainJob is looked at again each resync (~10 hours: config.ts), whatever the watches
  // said; any other watch event queues its key only when it changed what a decision reads
  // (decision-inputs.ts). What waits on something requeues itself (src/rebuild/decide.ts RETRY).
  const watches = createWatches(client, {
    onKey: (key, source) => (source === 'resync' ? enqueue(key) : onWatchEvent(key, source)),
    logger,
    resyncMs: config.resyncMs,
    shape: cacheShapeFor(config.mode),
  });
  const gate = new DecisionInputGate(watches.cache, config.mode);
  const onWatchEvent = (key: string, source: WatchSource) => {
    const effect = gate.judge(key, source);
    metrics.watchEvents.inc({ source, result: effect });
    if (effect === 'intent') enqueue(key);
    else if (effect === 'changed') queue.addSoon(key, WATCH_BATCH_MS);
    else if (effect === 'overwritten') {
      if (gate.overwrites(key) === OVERWRITES_WORTH_A_WARNING)
        logger.warn(
          { trainJob: key, overwrites: OVERWRITES_WORTH_A_WARNING },
          'status.trainjobWebhook keeps being overwritten by another writer: is a second trainjob-webhook reconciler leading (another install, its own --lease-namespace)? Each rewrite now waits longer',
        );
      queue.addSoon(key, gate.overwriteDelayMs(key));
    }
  };
  const trainerLine = followTrainerLine(client, {
    logger,
    onLine: (d) => {
      metrics.trainerLine.reset();
      metrics.trainerLine.set({ line: d.line.id }, 1);
      // The rules changed (a Trainer upgrade): every TrainJob is judged again under them.
      if (watches.synced()) watches.trainJobKeys().forEach(enqueue);
    },
  });

  // One wait per TrainJob at a time: a hint no newer than the one already awaited adds nothing.
  const waiting = new Map<string, Hint>();
  const onHint = (hint: Hint) => {
    const key = keyOf(hint.namespace, hint.name);
    const pending = waiting.get(key);
    if (
      pending &&
      pending.uid === hint.uid &&
      (pending.generation === null || (hint.generation !== null && hint.generation <= pending.generation))
    )
      return;
    waiting.set(key, hint);
    const done = () => {
      if (waiting.get(key) === hint) waiting.delete(key);
    };
    // Waits until the TrainJob watch has the change (no request): then a reconcile reads it there.
    const stored = async () =>
      watches.cache.synced()
        ? watches.cache.getTrainJob(hint.namespace, hint.name)
        : cluster.getTrainJob(hint.namespace, hint.name);
    awaitPersisted(hint, stored, { timeoutMs: config.handoff.hintWaitMs })
      .finally(done)
      .then(
        (persisted) => {
          metrics.hints.inc({ result: persisted ? 'persisted' : 'expired' });
          if (persisted) {
            logger.debug({ trainJob: key, generation: hint.generation }, 'hint: change stored; queued');
            enqueue(key);
          } else {
            logger.info(
              { trainJob: key, uid: hint.uid, generation: hint.generation, waitedMs: config.handoff.hintWaitMs },
              'hint dropped: the change was never stored (refused later, or a dry run)',
            );
          }
        },
        (err: unknown) => logger.warn({ trainJob: key, error: describeError(err) }, 'hint handling failed'),
      );
  };

  const handoff = await buildHandoffServer({ logger, metrics, onHint });
  const ops = await buildOpsServer({
    // The ops server reads only the registry of what it is given.
    metrics: { registry: metrics.registry },
    logger,
    readiness: { notReadyReason: () => (watches.synced() ? undefined : 'watches not synced yet') },
  });
  await handoff.listen({ host: config.handoff.host, port: config.handoff.port });
  await listenOn(ops, config.opsHost, config.opsPort);
  metrics.trainerLine.set({ line: 'unknown' }, 1);
  await trainerLine.start();
  await watches.start();

  let restorer: CrdPatchRestorer | undefined;
  if (config.restoreCrdPatch) {
    if (!deps.crdPatchPlanner) throw new Error('--restore-crd-patch needs a CRD patch planner');
    // Loaded with the flag only: a reconciler without it never reads the CRD.
    const { startCrdPatchRestorer } = await import('./crd-patch-restorer.ts');
    restorer = startCrdPatchRestorer({
      client,
      planner: deps.crdPatchPlanner,
      fieldManager: CRD_PATCH_RESTORER_FIELD_MANAGER,
      logger,
      metrics,
      mayWrite: elector ? () => elector.isLeader() : () => true,
      identity,
    });
  }

  const lead = () => {
    metrics.leader.set(1);
    watches.trainJobKeys().forEach(enqueue);
    queue.start();
    restorer?.check();
  };
  if (elector && config.leaderElection) {
    const lease = leaseRecorder(metrics, config.leaderElection.name);
    elector.run({
      onStartedLeading: () => {
        lease.leading();
        lead();
      },
      onStoppedLeading: () => {
        metrics.leader.set(0);
        lease.stopped();
        queue.pause();
      },
    });
  } else {
    lead();
  }
  logger.info(
    {
      handoff: `http://${config.handoff.host}:${portOf(handoff)}/hints`,
      ops: portOf(ops),
      fieldManager: config.fieldManager,
      workers: config.workers,
      leaderElection: config.leaderElection
        ? `${config.leaderElection.namespace}/${config.leaderElection.name}`
        : 'off',
      crdPatchRestorer: config.restoreCrdPatch ? 'on' : 'off',
    },
    'reconciler started',
  );

  return {
    handoffPort: portOf(handoff),
    opsPort: portOf(ops),
    metrics,
    async close() {
      restorer?.stop();
      await handoff.close();
      await watches.stop();
      await trainerLine.stop();
      await queue.shutdown();
      await elector?.stop();
      await ops.close();
      logger.info('reconciler stopped');
    },
  };
}
