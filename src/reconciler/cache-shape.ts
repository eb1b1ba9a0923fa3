// What the watches keep of each object (the informers' transform, applied as it enters the
// cache): only the fields the decisions (src/rebuild/) and the reconciler read, so that the cache
// does not grow with what nobody reads (pod templates, managedFields, Trainer's status copies).
// The one list of what is read: the watch-event gate (decision-inputs.ts) judges an event by
// these shapes, so the two cannot drift apart. Pure, and idempotent (a kept shape kept again is
// itself). Values are kept as they are, malformed ones too: an object that wellformed.ts finds
// malformed is kept as before this reduction (all but managedFields and the last-applied
// annotation), so the decisions report the same first malformed field.
//
// - TrainJob, companion mode: the identity, the two annotations the reconciler writes (the report,
//   the refusal fold), spec.managedBy, suspend, runtimeRef and trainer.numNodes, and the
//   Suspended, Complete and Failed conditions, and status.trainjobWebhook (the status field it
//   writes only when it differs: src/reconciler/status-field.ts). Standalone mode builds the JobSet from the whole
//   spec in every reconcile and writes the status from it, so there it is kept whole (but for
//   managedFields and the last-applied annotation).
// - JobSet controlled by a TrainJob: the identity and creationTimestamp, the controller reference,
//   managedFields as the managers that own spec.suspend (decide.ts ownsSuspend), spec.suspend,
//   managedBy and volumeClaimPolicies, per replicated job its name, replicas, the ancestor label,
//   parallelism and completions, and of its containers the names and the env vars that are
//   compared (NODE_COUNT_ENV: stale.ts; INITIALIZER_ENV: initializers.ts); of status the
//   Completed and Failed conditions and, in standalone mode, replicatedJobsStatus. Not enough to
//   re-create it: the dry-run create reads it live.
// - Any other JobSet: its metadata's identity only, so that a TrainJob whose JobSet someone else
//   controls is still reported, never built over.
// - Job: what safety.ts jobBlocks reads (name, spec.suspend, status.active and terminating, the
//   Complete and Failed conditions) and the JobSet-name label it is indexed by.
import { isObject } from '../json/object.ts';
import { controllerOf, type Job, type JobSet, type ObjectMeta, type TrainJob } from '../api/objects.ts';
import {
  ANCESTOR_LABEL,
  JOBSET_NAME_LABEL,
  REFUSAL_SEEN_ANNOTATION,
  REPORT_ANNOTATION,
  STATUS_FIELD,
  TRAINJOB_KIND,
  type Mode,
} from '../api/names.ts';
import { INITIALIZER_ENV } from '../rebuild/initializers.ts';
import { NODE_COUNT_ENV } from '../scale/ml-policy.ts';
import { FINISHED_JOB_CONDITIONS } from '../rebuild/safety.ts';
import { malformedJobSet, malformedTrainJob } from '../api/wellformed.ts';
import { intern } from './intern.ts';

type Obj = Record<string, unknown>;
const asIs = <T>(o: Obj): T => o as T;

export const LAST_APPLIED_ANNOTATION = 'kubectl.kubernetes.io/last-applied-configuration';

/** The TrainJob's annotations read (report.ts, refused-apply.ts). */
export const READ_TRAINJOB_ANNOTATIONS: readonly string[] = [REPORT_ANNOTATION, REFUSAL_SEEN_ANNOTATION];
/** The TrainJob conditions read (finished.ts; decide.ts and refused-apply.ts: Suspended). */
export const READ_TRAINJOB_CONDITIONS: readonly string[] = ['Suspended', 'Complete', 'Failed'];
/** The JobSet conditions read (finished.ts, terminal-status.ts). */
export const READ_JOBSET_CONDITIONS: readonly string[] = ['Completed', 'Failed'];
/** The env vars of a JobSet's containers read. */
export const READ_CONTAINER_ENV: readonly string[] = [...NODE_COUNT_ENV, ...INITIALIZER_ENV];

/** Only the keys of `o` named, those present (a value of any type, null too, is kept). */
function pick(o: unknown, keys: readonly string[]): Obj {
  const out: Obj = {};
  if (!isObject(o)) return out;
  for (const k of keys) if (o[k] !== undefined) out[k] = o[k];
  return out;
}

/** Replaces `o[key]` by `f(o[key])` when present. */
function mapKey(o: Obj, key: string, f: (v: unknown) => unknown): Obj {
  if (o[key] !== undefined) o[key] = f(o[key]);
  return o;
}

const mapList = (f: (v: unknown) => unknown) => (v: unknown) => (Array.isArray(v) ? v.map(f) : v);
/** The entries of a list that pass `keep` (a value that is not a list is kept as it is). */
const filterList = (keep: (v: unknown) => boolean) => (v: unknown) => (Array.isArray(v) ? v.filter(keep) : v);
const ofTypes = (types: readonly string[]) => (c: unknown) => isObject(c) && types.includes(c.type as string);
const named = (names: readonly string[]) => (e: unknown) => isObject(e) && names.includes(e.name as string);

/**
 * The status's keys named, its conditions only those of `types`; absent when nothing is left (a
 * decision reads an absent status, or conditions, as an empty one: so the gate does too).
 */
function statusOf(status: unknown, keys: readonly string[], types: readonly string[]): unknown {
  if (!isObject(status)) return status;
  const out = mapKey(pick(status, keys), 'conditions', filterList(ofTypes(types)));
  if (Array.isArray(out.conditions) && out.conditions.length === 0) delete out.conditions;
  return Object.keys(out).length ? out : undefined;
}

/** The entries of a string map named (absent when none is). */
function pickMap(m: unknown, keys: readonly string[]): Obj | undefined {
  const kept = pick(m, keys);
  return Object.keys(kept).length ? kept : undefined;
}

function withoutLastApplied(annotations: unknown): unknown {
  if (!isObject(annotations) || !(LAST_APPLIED_ANNOTATION in annotations)) return annotations;
  const { [LAST_APPLIED_ANNOTATION]: _dropped, ...rest } = annotations;
  return rest;
}

const IDENTITY = [
  'name',
  'namespace',
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'deletionTimestamp',
];
const META = [...IDENTITY, 'labels', 'annotations', 'ownerReferences', 'finalizers'];

/** The metadata without managedFields and the last-applied annotation. */
function metadataOf(meta: unknown): Obj {
  return mapKey(pick(meta, META), 'annotations', withoutLastApplied);
}

/** The metadata's identity, and the annotations named. */
function identityOf(meta: unknown, annotations: readonly string[] = []): Obj {
  const out = pick(meta, IDENTITY);
  const kept = isObject(meta) ? pickMap(meta.annotations, annotations) : undefined;
  if (kept) out.annotations = kept;
  return out;
}

/** managedFields entries that own spec.suspend, reduced to their manager and that (decide.ts ownsSuspend). */
function suspendOwners(entries: unknown): unknown[] | undefined {
  if (!Array.isArray(entries)) return undefined;
  const owners = entries.flatMap((e: unknown) => {
    const spec = isObject(e) && isObject(e.fieldsV1) ? e.fieldsV1['f:spec'] : undefined;
    if (!isObject(spec) || spec['f:suspend'] === undefined) return [];
    return [{ ...pick(e, ['manager']), fieldsV1: { 'f:spec': { 'f:suspend': {} } } }];
  });
  return owners.length ? owners : undefined;
}

/** As the decisions read it: whole in standalone mode (the build); else the fields named above. */
function trainJobShape(raw: unknown, mode: Mode): TrainJob | undefined {
  if (!isObject(raw)) return undefined;
  if (mode === 'standalone' || malformedTrainJob(raw)) return asIs({ ...raw, metadata: metadataOf(raw.metadata) });
  const out: Obj = {
    ...pick(raw, ['apiVersion', 'kind']),
    metadata: identityOf(raw.metadata, READ_TRAINJOB_ANNOTATIONS),
  };
  if (isObject(raw.spec)) {
    const spec = pick(raw.spec, ['managedBy', 'suspend', 'runtimeRef']);
    if (isObject(raw.spec.trainer)) spec.trainer = pick(raw.spec.trainer, ['numNodes']);
    else if (raw.spec.trainer !== undefined) spec.trainer = raw.spec.trainer;
    out.spec = spec;
  } else if (raw.spec !== undefined) out.spec = raw.spec;
  const status = statusOf(raw.status, ['conditions', STATUS_FIELD], READ_TRAINJOB_CONDITIONS);
  if (status !== undefined) out.status = status;
  return asIs(out);
}

function containerOf(c: unknown): unknown {
  if (!isObject(c)) return c;
  return mapKey(pick(c, ['name', 'env']), 'env', filterList(named(READ_CONTAINER_ENV)));
}

function replicatedJobOf(r: unknown): unknown {
  if (!isObject(r)) return r;
  const out = pick(r, ['name', 'replicas']);
  if (!isObject(r.template)) return { ...out, ...pick(r, ['template']) };
  const template: Obj = {};
  const meta = r.template.metadata;
  if (isObject(meta)) {
    const labels = pickMap(meta.labels, [ANCESTOR_LABEL]);
    template.metadata = labels ? { labels } : {};
  } else if (meta !== undefined) template.metadata = meta;
  const spec = r.template.spec;
  if (isObject(spec)) {
    const kept = pick(spec, ['parallelism', 'completions']);
    const pod = isObject(spec.template) ? spec.template.spec : undefined;
    if (isObject(pod)) kept.template = { spec: mapKey(pick(pod, ['containers']), 'containers', mapList(containerOf)) };
    else if (spec.template !== undefined) kept.template = pick(spec.template, ['spec']);
    template.spec = kept;
  } else if (spec !== undefined) template.spec = spec;
  return { ...out, template };
}

/** The controller reference alone, as controllerOf reads it. */
function controllerRefs(meta: unknown): unknown[] | undefined {
  const owner = controllerOf(meta as ObjectMeta | undefined);
  return owner ? [pick(owner, ['apiVersion', 'kind', 'name', 'uid', 'controller'])] : undefined;
}

function jobSetShape(raw: unknown, mode: Mode): JobSet | undefined {
  if (!isObject(raw)) return undefined;
  const owner = controllerOf(raw.metadata as ObjectMeta | undefined);
  if (owner?.kind !== TRAINJOB_KIND)
    return asIs({
      ...pick(raw, ['apiVersion', 'kind']),
      metadata: pick(raw.metadata, [...IDENTITY, 'ownerReferences']),
    });
  const malformed = malformedJobSet(raw) !== undefined;
  const metadata = malformed ? metadataOf(raw.metadata) : identityOf(raw.metadata);
  if (!malformed) metadata.ownerReferences = controllerRefs(raw.metadata);
  const owners = suspendOwners((raw.metadata as Obj).managedFields);
  if (owners) metadata.managedFields = owners;
  const out: Obj = { ...pick(raw, ['apiVersion', 'kind']), metadata };
  const read = mode === 'standalone' ? ['conditions', 'replicatedJobsStatus'] : ['conditions'];
  const status = statusOf(raw.status, read, READ_JOBSET_CONDITIONS);
  if (status !== undefined) out.status = status;
  if (isObject(raw.spec)) {
    out.spec = mapKey(
      pick(raw.spec, ['suspend', 'managedBy', 'replicatedJobs', 'volumeClaimPolicies']),
      'replicatedJobs',
      malformed ? (v) => v : mapList(replicatedJobOf),
    );
  } else if (raw.spec !== undefined) out.spec = raw.spec;
  return asIs(out);
}

function jobShape(raw: unknown): Job | undefined {
  if (!isObject(raw)) return undefined;
  const meta = pick(raw.metadata, ['name', 'namespace']);
  const labels = isObject(raw.metadata) ? pickMap(raw.metadata.labels, [JOBSET_NAME_LABEL]) : undefined;
  if (labels) meta.labels = labels;
  const out: Obj = { metadata: meta };
  if (raw.spec !== undefined) out.spec = isObject(raw.spec) ? pick(raw.spec, ['suspend']) : raw.spec;
  const status = statusOf(raw.status, ['active', 'terminating', 'conditions'], FINISHED_JOB_CONDITIONS);
  if (isObject(status) && Array.isArray(status.conditions))
    status.conditions = status.conditions.map((c) => pick(c, ['type', 'status']));
  if (status !== undefined) out.status = status;
  return asIs(out);
}

/** What each watch keeps, for a mode. */
export interface CacheShape {
  trainJob(raw: unknown): TrainJob | undefined;
  jobSet(raw: unknown): JobSet | undefined;
  job(raw: unknown): Job | undefined;
}

/**
 * The shapes of a mode, their repeated strings (namespaces, kinds, condition types and reasons,
 * managers, container names) one copy each (intern.ts); `intern: false` only to measure that.
 */
export function cacheShapeFor(mode: Mode, { intern: shared = true }: { intern?: boolean } = {}): CacheShape {
  const out = <T>(o: T | undefined) => (shared && o !== undefined ? (intern(o as object) as T) : o);
  return {
    trainJob: (raw) => out(trainJobShape(raw, mode)),
    jobSet: (raw) => out(jobSetShape(raw, mode)),
    job: (raw) => out(jobShape(raw)),
  };
}

const SHAPES = { companion: cacheShapeFor('companion'), standalone: cacheShapeFor('standalone') };

export const trainJobForCache = (raw: unknown, mode: Mode = 'companion') => SHAPES[mode].trainJob(raw);
export const jobSetForCache = (raw: unknown, mode: Mode = 'companion') => SHAPES[mode].jobSet(raw);
export const jobForCache = (raw: unknown) => SHAPES.companion.job(raw);
