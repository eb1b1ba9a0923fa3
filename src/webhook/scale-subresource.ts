// Writes to a TrainJob's scale subresource (`kubectl scale trainjob/NAME --replicas N`, an
// autoscaler, a dashboard): the CRD patch adds it with specReplicasPath spec.trainer.numNodes.
//
// What the API server does (k8s.io/apiextensions-apiserver pkg/registry/customresource/etcd.go,
// ScaleREST.Update): it sets numNodes on the stored TrainJob to the Scale's spec.replicas, runs the
// CRD's schema and rules on that TrainJob (so in the default install a scale of a running job is a
// 422 from the CRD's numNodes rule before any webhook), then calls validating admission with the
// new and old TrainJob turned into autoscaling/v1 Scales: name, namespace, uid, resourceVersion,
// spec.replicas and status only, no spec.suspend. A webhook sees that call only where its rules
// name `trainjobs/scale` (manifests/webhook).
//
// So the webhook reads the TrainJob (src/scale/reads/trainjob-read.ts), builds the TrainJob the
// scale produces (numNodes = spec.replicas, everything else as stored) and asks the Validator
// exactly as for an update of numNodes: the rule table, then the count-change judgment (403 for
// good, 503 for now, a revert to the built count always admitted while suspended). The answer
// then is the one a `kubectl patch` of numNodes would get.
//
// The TrainJob is read from the API server's watch cache (resourceVersion=0, which never waits)
// and judged only when it has the uid of the Scale's oldObject (stored-version.ts): a forger cannot
// guess it. A different resourceVersion only makes the webhook look at the cache again a few
// times; if it still differs, the stored TrainJob is judged (a newer one means this attempt's
// write conflicts in the API server anyway and is tried again with a new call; an older one, that
// the cache is behind, and the CRD's rules have judged the object the write makes). A read that
// fails, finds no TrainJob or another uid is refused for now (503): it clears by itself.
//
// Any pod that reaches the webhook's port can send a Scale review (without `serve --client-ca`),
// so the read is bounded as a count change's reads are (docs/security.md, "Cluster reads"):
//   - before it starts, the request's hold moves onto the count-change reads' budget (the same
//     `holdWhileReading` the Validator uses); when that is full the scale is refused for now (503)
//     with no read, so Scale reviews waiting on a slow read never hold what other writes need;
//   - reads are shared per TrainJob, run on their own API connections and never wait for a
//     version (trainjob-read.ts);
//   - to such a caller a TrainJob not found, a read that failed, another uid or version (or none:
//     the API server always sends both) get one general answer, so the answer does not tell
//     whether a TrainJob of that name exists; only a Scale with the stored TrainJob's uid and
//     version, which such a caller cannot guess, is judged. The details go to the log. The API
//     server (`--client-ca`) gets them in the answer.
//
// The webhook never refuses a write to the scale of anything but a TrainJob (a configuration that
// names another resource's scale is a mistake, not the user's): it admits it unjudged.
import { SCALE_SUBRESOURCE, TRAINJOB_GROUP, TRAINJOB } from '../api/names.ts';
import { OMIT_VALUE, type FieldError } from '../field/errors.ts';
import { isObject } from '../json/object.ts';
import type { Decision } from '../rules/contract.ts';
import type { TrainJobReader } from '../scale/reads/trainjob-read.ts';
import { readTheStored } from '../scale/reads/stored-version.ts';
import type { AdmissionReviewRequest } from './envelope.ts';

type Obj = Record<string, unknown>;

/** Whether a request is for a scale subresource: a TrainJob's, another resource's, or none. */
export function scaleRequestOf(
  req: Pick<AdmissionReviewRequest, 'subResource' | 'resource'>,
): 'trainjob' | 'other' | undefined {
  if (req.subResource !== 'scale') return undefined;
  const r = req.resource;
  // Without request.resource (a hand-written review) the path says it is the TrainJob webhook's.
  return !r || (r.group === TRAINJOB_GROUP && r.resource === TRAINJOB.plural) ? 'trainjob' : 'other';
}

/** A Scale's spec.replicas: the API server omits it when 0 (autoscaling/v1 ScaleSpec, omitempty). */
export function scaleReplicas(scale: unknown): number | undefined {
  const spec = isObject(scale) ? scale.spec : undefined;
  if (spec === undefined) return 0;
  if (!isObject(spec)) return undefined;
  const replicas = spec.replicas ?? 0;
  return typeof replicas === 'number' && Number.isInteger(replicas) ? replicas : undefined;
}

/**
 * The TrainJob a scale produces: a copy of the stored one whose spec.trainer.numNodes is the
 * Scale's spec.replicas, made the way the API server makes it (missing spec and spec.trainer
 * created; a scale of a job without numNodes sets it; metadata.generation one up when the spec
 * changes, as the custom resource strategy's PrepareForUpdate does). Pure.
 */
export function trainJobAfterScale(stored: Obj, replicas: number): Obj {
  const out = structuredClone(stored);
  const spec = isObject(out.spec) ? out.spec : (out.spec = {});
  const trainer = isObject(spec.trainer) ? spec.trainer : (spec.trainer = {});
  const changed = trainer.numNodes !== replicas;
  trainer.numNodes = replicas;
  const meta = isObject(out.metadata) ? out.metadata : undefined;
  if (changed && meta && typeof meta.generation === 'number') meta.generation += 1;
  return out;
}

/** A refusal for now on spec.trainer.numNodes (503): it clears by itself. */
function forNow(detail: string): Decision {
  const cause: FieldError = {
    type: 'FieldValueForbidden',
    field: SCALE_SUBRESOURCE.specReplicasPath.slice(1),
    value: OMIT_VALUE,
    detail: `${detail}; the scale is refused for now and can be applied again in a few seconds`,
    origin: 'scale-subresource:transient',
  };
  return { causes: [cause], warnings: [], transient: true };
}

export const SCALE_NOT_JUDGED =
  'spec.trainer.numNodes: the scale was not judged (the webhook runs without cluster access, so it cannot read the TrainJob the Scale changes)';

/** Refused for now: the count-change reads' budget is full. */
export const SCALE_READS_BUSY = 'the webhook is judging as many count changes as it may at once';
/** Why a scale was not judged, to a caller not known to be the API server: one text for every case. */
export const SCALE_NOT_READ_GENERAL = "the TrainJob could not be read for the judgment (the webhook's log says why)";

/** What a general answer left out, for the log. */
export interface WithheldScale {
  namespace: string;
  name: string;
  detail: string;
}

/** `T`: the route's answer (route.ts Outcome), built by `answer` and `allowed`. */
export interface ScaleDeps<T> {
  /** Undefined without cluster access: the scale is admitted with a warning, like a count change then. */
  readTrainJob?: TrainJobReader;
  /**
   * Moves the request's hold onto the count-change reads' budget before the read (validate.ts:
   * decision-budget.ts moveHeld): false when that is full, and nothing is read.
   */
  holdWhileReading?: () => boolean;
  /** The caller is the API server, proved by its client certificate: it gets the details. */
  callerAuthenticated?: boolean;
  /** stored-version.ts REREAD_AFTER_MS unless given (tests). */
  rereadAfterMs?: number[];
  /** Hears what an answer in general words left out (a caller not known to be the API server). */
  withheld?: (details: WithheldScale) => void;
  /** The Validator, with what the route adds (the caller's proof, the reads' budget). */
  validate(object: Obj, oldObject: Obj): Promise<Decision>;
  /** The answer the validating route builds from a decision (validate.ts), the hint on the object given. */
  answer(decision: Decision, judged: Obj): T;
  /** An admission without a judgment, with these warnings. */
  allowed(warnings?: string[]): T;
}

/** Decides a validating review of a scale subresource (see the header). */
export async function validateScale<T>(req: AdmissionReviewRequest, deps: ScaleDeps<T>): Promise<T> {
  if (scaleRequestOf(req) !== 'trainjob' || req.operation !== 'UPDATE') return deps.allowed();
  const replicas = scaleReplicas(req.object);
  // The API server sends an int32; anything else is not a Scale it made: nothing to judge.
  if (replicas === undefined) return deps.allowed();
  const readTrainJob = deps.readTrainJob;
  if (!readTrainJob) return deps.allowed([SCALE_NOT_JUDGED]);
  if (deps.holdWhileReading?.() === false) return deps.answer(forNow(SCALE_READS_BUSY), {});
  const meta = isObject(req.oldObject?.metadata) ? req.oldObject.metadata : {};
  const authenticated = deps.callerAuthenticated === true;
  const target = { namespace: req.namespace ?? '', name: req.name };
  const found = await readTheStored(() => readTrainJob(target), meta, deps.rereadAfterMs);
  if ('why' in found) {
    if (authenticated) return deps.answer(forNow(found.why), {});
    deps.withheld?.({ namespace: req.namespace ?? '', name: req.name, detail: found.why });
    return deps.answer(forNow(SCALE_NOT_READ_GENERAL), {});
  }
  const stored = found.stored;
  const scaled = trainJobAfterScale(stored, replicas);
  return deps.answer(await deps.validate(scaled, stored), scaled);
}
