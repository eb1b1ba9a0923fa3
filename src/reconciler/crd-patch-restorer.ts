// The CRD patch restorer (`reconcile --restore-crd-patch`, off by default): watches the TrainJob
// CRD alone (a watch by name, so its RBAC names that one object) and, while this replica leads,
// puts this project's patch back whenever the CRD lacks it (Trainer's `helm upgrade` rewrites the
// CRD, and its chart's hooks are not ours to run). What to send is decided by the planner (pure,
// src/rules/crd-patch-restore.ts, with the patch generator chosen at the edge); this file does
// the reads, the writes, the logs, the metrics and an Event. Each write tests the resourceVersion
// it was decided on: a failed one is decided again on a fresh read. A CRD of a Trainer line it
// does not know is refused (a warning with what to do by hand, counted `refused`), never written.
import { TRAINJOB_CRD } from '../api/names.ts';
import { jsonApi } from '../cluster/api-json.ts';
import type { ApiClient } from '../cluster/api-request.ts';
import { followWatch, reportingTo } from '../cluster/api-watch.ts';
import { describeError } from '../cluster/errors.ts';
import type { Logger } from '../observability/logger.ts';
import type { ReconcilerMetrics } from './metrics.ts';
import { COMPONENT } from './names.ts';

/** What the restorer needs decided (src/rules/crd-patch-restore.ts and crd-patch-ownership.ts). */
export interface CrdPatchPlanner {
  /** `byHand` on a refusal: the CRD is one the restorer will not write onto, and what the user can do instead. */
  decide(crd: unknown): { action: 'keep' | 'patch' | 'refuse'; reason: string; ops?: unknown[]; byHand?: string };
  /** The JSON patch that gives back the fields the restorer's write took, or undefined. */
  disclaim(crd: unknown, fieldManager: string): unknown[] | undefined;
}

export interface CrdPatchRestorerOptions {
  client: ApiClient;
  planner: CrdPatchPlanner;
  fieldManager: string;
  logger: Logger;
  metrics: Pick<ReconcilerMetrics, 'crdPatchRestores' | 'crdPatchInForce' | 'apiRequests'>;
  /** Only the leader writes; a replica that starts leading calls check(). */
  mayWrite(): boolean;
  /** reportingInstance of the Events. */
  identity: string;
  /** A failed write is decided again on a fresh read after this (default 2 s). */
  retryMs?: number;
  now?: () => number;
}

export interface CrdPatchRestorer {
  /** Decide again on the last version seen (a new leader, a test). */
  check(): void;
  stop(): void;
}

const CRDS = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';
const CRD_PATH = `${CRDS}/${TRAINJOB_CRD}`;
/** Restores this close together mean something keeps undoing them: each further one waits twice as long. */
const FIGHT_WINDOW_MS = 60_000;
const FIGHT_FREE_RESTORES = 3;
const MAX_FIGHT_DELAY_MS = 5 * 60_000;

const metaOf = (o: unknown) =>
  (o as { metadata?: { resourceVersion?: string; uid?: string } } | null)?.metadata ?? ({} as Record<string, never>);

/** How long the next restore waits, given the times of the recent ones: 0 unless restores keep being undone. */
export function fightDelayMs(recent: readonly number[], now: number): number {
  const inWindow = recent.filter((t) => now - t < FIGHT_WINDOW_MS);
  if (inWindow.length < FIGHT_FREE_RESTORES) return 0;
  const wait = Math.min(1000 * 2 ** (inWindow.length - FIGHT_FREE_RESTORES), MAX_FIGHT_DELAY_MS);
  return Math.max(0, Math.max(...inWindow) + wait - now);
}

// eslint-disable-next-line max-lines-per-function -- one watch and one serial decision loop share the latest version
export function startCrdPatchRestorer(opts: CrdPatchRestorerOptions): CrdPatchRestorer {
  const { planner, fieldManager, metrics, mayWrite } = opts;
  const logger = opts.logger.child({ component: 'crd-patch-restorer', crd: TRAINJOB_CRD });
  const now = opts.now ?? (() => performance.now());
  const api = jsonApi(opts.client);
  const patchPath = `${CRD_PATH}?fieldManager=${encodeURIComponent(fieldManager)}`;
  let latest: unknown;
  let seenAt = 0;
  let running = false;
  let again = false;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let lastRefusal = '';
  let decided = false;
  const restores: number[] = [];

  const count = (verb: string) => metrics.apiRequests.inc({ verb, resource: 'customresourcedefinitions' });
  const adopt = (crd: unknown) => {
    const rv = metaOf(crd).resourceVersion;
    if (latest !== undefined && rv !== undefined && rv === metaOf(latest).resourceVersion) return;
    latest = crd;
    seenAt = now();
  };
  const later = (ms: number, refresh: boolean) => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      if (!refresh) return check();
      count('get');
      api.get(CRD_PATH).then(
        (crd) => {
          adopt(crd);
          check();
        },
        (err: unknown) => {
          logger.warn({ error: describeError(err) }, 'could not read the CRD; trying again');
          later(opts.retryMs ?? 2000, true);
        },
      );
    }, ms).unref();
  };

  const event = (crd: unknown, message: string) => {
    const at = new Date().toISOString();
    const { uid, resourceVersion } = metaOf(crd);
    count('create');
    api
      .post('/api/v1/namespaces/default/events', {
        metadata: { generateName: `${TRAINJOB_CRD}.`, namespace: 'default' },
        involvedObject: {
          apiVersion: 'apiextensions.k8s.io/v1',
          kind: 'CustomResourceDefinition',
          name: TRAINJOB_CRD,
          uid,
          resourceVersion,
        },
        type: 'Normal',
        reason: 'CRDPatchRestored',
        message: message.slice(0, 1024),
        source: { component: COMPONENT },
        reportingComponent: COMPONENT,
        reportingInstance: opts.identity.slice(0, 128),
        firstTimestamp: at,
        lastTimestamp: at,
        count: 1,
      })
      .catch((err: unknown) => logger.debug({ error: describeError(err) }, 'could not record the Event'));
  };

  /** Gives back what the restore took (src/rules/crd-patch-ownership.ts says why). */
  const disclaim = async (crd: unknown) => {
    const ops = planner.disclaim(crd, fieldManager);
    if (!ops) return;
    try {
      count('patch');
      adopt(await api.jsonPatch(patchPath, ops));
      metrics.crdPatchRestores.inc({ result: 'disclaimed' });
      logger.info(
        { resourceVersion: metaOf(latest).resourceVersion },
        `ownership of .spec.versions given back (no manager owns it now): the next server-side apply of the CRD (helm upgrade) takes it without a conflict`,
      );
    } catch (err) {
      metrics.crdPatchRestores.inc({ result: 'failed' });
      logger.warn(
        { error: describeError(err) },
        'could not give back .spec.versions: until it is, a server-side apply of the CRD without force (Helm 4) conflicts with this restorer; trying again',
      );
      later(opts.retryMs ?? 2000, true);
    }
  };

  const restore = async (crd: unknown, ops: unknown[], reason: string) => {
    const wait = fightDelayMs(restores, now());
    if (wait > 0) {
      logger.warn(
        { waitMs: Math.round(wait), restoresInLastMinute: restores.length },
        'the CRD patch keeps being removed right after it is restored (a GitOps tool re-applying the CRD?): waiting before restoring again',
      );
      later(wait, false);
      return;
    }
    try {
      count('patch');
      const after = await api.jsonPatch(patchPath, ops);
      const tookMs = Math.round(now() - seenAt);
      restores.push(now());
      while (restores.length > 0 && now() - restores[0] >= FIGHT_WINDOW_MS) restores.shift();
      adopt(after);
      metrics.crdPatchRestores.inc({ result: 'restored' });
      metrics.crdPatchInForce.set(1);
      const message = `the CRD patch was put back (${reason}); ${ops.length - 1} JSON patch operations, ${tookMs} ms after that version was seen`;
      logger.info(
        { fromResourceVersion: metaOf(crd).resourceVersion, resourceVersion: metaOf(after).resourceVersion, tookMs },
        message,
      );
      event(after, message);
      await disclaim(after);
    } catch (err) {
      metrics.crdPatchRestores.inc({ result: 'failed' });
      logger.warn(
        { error: describeError(err), resourceVersion: metaOf(crd).resourceVersion },
        'could not put the CRD patch back (the CRD changed meanwhile, or the write was refused); deciding again on a fresh read',
      );
      later(opts.retryMs ?? 2000, true);
    }
  };

  const step = async () => {
    const crd = latest;
    if (crd === undefined || !mayWrite()) return;
    const decision = planner.decide(crd);
    if (decision.action === 'keep') {
      metrics.crdPatchInForce.set(1);
      lastRefusal = '';
      // The first decision is worth a line (what the restorer found); later ones follow its own writes.
      (decided ? logger.debug : logger.info).call(
        logger,
        { resourceVersion: metaOf(crd).resourceVersion },
        decision.reason,
      );
      decided = true;
      return disclaim(crd);
    }
    metrics.crdPatchInForce.set(0);
    decided = true;
    if (decision.action === 'refuse') {
      if (decision.reason !== lastRefusal) {
        metrics.crdPatchRestores.inc({ result: 'refused' });
        // A CRD it does not know (a later Trainer) is expected, with a way out; an unusable read is not.
        (decision.byHand ? logger.warn : logger.error).call(
          logger,
          { resourceVersion: metaOf(crd).resourceVersion },
          `the CRD patch cannot be put back on this CRD, nothing written: ${decision.reason}${decision.byHand ? `. ${decision.byHand}` : ''}`,
        );
      }
      lastRefusal = decision.reason;
      return;
    }
    lastRefusal = '';
    return restore(crd, decision.ops ?? [], decision.reason);
  };

  const check = () => {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = true;
    void (async () => {
      try {
        do {
          again = false;
          await step();
        } while (again && !stopped);
      } catch (err) {
        logger.error({ error: describeError(err) }, 'CRD patch restorer step failed');
      } finally {
        running = false;
      }
    })();
  };

  count('watch');
  const stopWatch = followWatch(
    opts.client,
    CRDS,
    { fieldSelector: `metadata.name=${TRAINJOB_CRD}` },
    {
      onEvent: ({ type, object }) => {
        if (type === 'ADDED' || type === 'MODIFIED') {
          adopt(object);
          check();
        } else if (type === 'DELETED') {
          latest = undefined;
          metrics.crdPatchInForce.set(0);
          logger.warn('the TrainJob CRD was deleted; the patch goes back on once it is created again');
        }
      },
      ...reportingTo(`CRD ${TRAINJOB_CRD}`, (message) => logger.warn(message)),
    },
  );
  logger.info({ fieldManager }, 'CRD patch restorer started: it puts the patch back whenever the CRD lacks it');
  return {
    check,
    stop() {
      stopped = true;
      clearTimeout(timer);
      stopWatch();
    },
  };
}
