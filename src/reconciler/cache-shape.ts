// What the watches keep of each object (the informers' transform, applied as it enters the
// cache): only the fields the decisions read (src/rebuild/), so that the cache does not grow with
// what nobody reads (pod templates in full, managedFields, kubectl's last-applied copy of the
// whole object). Pure; values are kept as they are, malformed ones too (the decisions report those).
//
// - TrainJob: all of it but managedFields and the last-applied annotation (the standalone build
//   reads the whole spec; status and report writes read the metadata).
// - JobSet controlled by a TrainJob: the metadata (managedFields reduced to the entries that own
//   spec.suspend: the resume of a JobSet this sidecar suspended), status, spec.suspend,
//   volumeClaimPolicies, and per replicated job its name, replicas, template labels and
//   annotations, parallelism, completions, and each container's name, image, command, args, env,
//   ports and resources (the staleness check, the judgment, the initializer and gang-scheduling
//   reads, wellformed.ts). Not enough to re-create it: the dry-run create reads it live.
// - Any other JobSet: its metadata's identity only, so that a TrainJob whose JobSet someone else
//   controls is still reported, never built over.
// - Job: name, labels, owner, deletion, spec.suspend and the status counts and conditions (safety.ts).
import { isObject } from '../json/object.ts';
import { controllerOf, type Job, type JobSet, type ObjectMeta, type TrainJob } from '../api/objects.ts';
import { TRAINJOB_KIND } from '../api/names.ts';

type Obj = Record<string, unknown>;

export const LAST_APPLIED_ANNOTATION = 'kubectl.kubernetes.io/last-applied-configuration';

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

/** managedFields entries that own spec.suspend, reduced to that (decide.ts ownsSuspend). */
function suspendOwners(entries: unknown): unknown[] | undefined {
  if (!Array.isArray(entries)) return undefined;
  const owners = entries.flatMap((e: unknown) => {
    const spec = isObject(e) && isObject(e.fieldsV1) ? e.fieldsV1['f:spec'] : undefined;
    if (!isObject(spec) || spec['f:suspend'] === undefined) return [];
    return [{ ...pick(e, ['manager', 'operation', 'subresource']), fieldsV1: { 'f:spec': { 'f:suspend': {} } } }];
  });
  return owners.length ? owners : undefined;
}

export function trainJobForCache(raw: unknown): TrainJob | undefined {
  if (!isObject(raw)) return undefined;
  return { ...raw, metadata: metadataOf(raw.metadata) } as unknown as TrainJob;
}

const CONTAINER = ['name', 'image', 'command', 'args', 'env', 'ports', 'resources'];

function podTemplateOf(template: unknown): Obj {
  const spec = isObject(template) ? template.spec : undefined;
  if (!isObject(spec)) return pick(template, ['spec']);
  const kept = pick(spec, ['containers', 'initContainers']);
  mapKey(
    kept,
    'containers',
    mapList((c) => pick(c, CONTAINER)),
  );
  mapKey(
    kept,
    'initContainers',
    mapList((c) => pick(c, CONTAINER)),
  );
  return { spec: kept };
}

function replicatedJobOf(r: unknown): unknown {
  if (!isObject(r)) return r;
  const out = pick(r, ['name', 'replicas']);
  if (!isObject(r.template)) return { ...out, ...pick(r, ['template']) };
  const template: Obj = {};
  if (r.template.metadata !== undefined) template.metadata = pick(r.template.metadata, ['labels', 'annotations']);
  const spec = r.template.spec;
  if (isObject(spec)) {
    template.spec = pick(spec, ['parallelism', 'completions']);
    if (spec.template !== undefined) (template.spec as Obj).template = podTemplateOf(spec.template);
  } else if (spec !== undefined) template.spec = spec;
  return { ...out, template };
}

export function jobSetForCache(raw: unknown): JobSet | undefined {
  if (!isObject(raw)) return undefined;
  const owner = controllerOf(raw.metadata as ObjectMeta | undefined);
  if (owner?.kind !== TRAINJOB_KIND)
    return {
      ...pick(raw, ['apiVersion', 'kind']),
      metadata: pick(raw.metadata, [...IDENTITY, 'ownerReferences']),
    } as JobSet;
  const metadata = metadataOf(raw.metadata);
  const owners = suspendOwners((raw.metadata as Obj).managedFields);
  if (owners) metadata.managedFields = owners;
  const out: Obj = { ...pick(raw, ['apiVersion', 'kind', 'status']), metadata };
  if (isObject(raw.spec)) {
    out.spec = mapKey(
      pick(raw.spec, ['suspend', 'managedBy', 'replicatedJobs', 'volumeClaimPolicies']),
      'replicatedJobs',
      mapList(replicatedJobOf),
    );
  } else if (raw.spec !== undefined) out.spec = raw.spec;
  return out as unknown as JobSet;
}

export function jobForCache(raw: unknown): Job | undefined {
  if (!isObject(raw)) return undefined;
  const meta = pick(raw.metadata, [...IDENTITY, 'labels', 'ownerReferences']);
  const out: Obj = { metadata: meta };
  if (raw.spec !== undefined) out.spec = isObject(raw.spec) ? pick(raw.spec, ['suspend', 'parallelism']) : raw.spec;
  if (raw.status !== undefined)
    out.status = isObject(raw.status) ? pick(raw.status, ['active', 'terminating', 'conditions']) : raw.status;
  return out as unknown as Job;
}
