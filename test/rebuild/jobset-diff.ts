// Where two JobSets built for the same TrainJob differ in what JobSet keeps immutable: the parts
// its webhook and CRD refuse to change on an update (sigs.k8s.io/jobset@v0.12.0, the same in
// v0.11.1 where named):
// - pkg/webhooks/jobset_webhook.go ValidateUpdate: spec.replicatedJobs whole (compared in order),
//   except, while the JobSet is or gets suspended, each replicated job's pod template labels,
//   annotations, nodeSelector, tolerations and schedulingGates (for Kueue); with the ElasticJobSet
//   gate (v0.12.0, off by default) parallelism and completions of Indexed jobs; and spec.managedBy;
// - the CRD's `self == oldSelf` rules: failurePolicy, network, startupPolicy, successPolicy,
//   volumeClaimPolicies and replicatedJobs[*].dependsOn.
// Everything else of the spec (suspend, ttlSecondsAfterFinished, coordinator...) and the metadata
// may change. Test support: the reconciler itself never diffs, it reads Trainer's refusal.
import type { JobSet } from '../../src/api/objects.ts';

type Json = unknown;

const CEL_IMMUTABLE = [
  'failurePolicy',
  'network',
  'startupPolicy',
  'successPolicy',
  'volumeClaimPolicies',
  'managedBy',
];
/** Mutable while the JobSet is (or gets) suspended: the pod template's parts Kueue writes. */
const SUSPENDED_MUTABLE_POD = ['nodeSelector', 'tolerations', 'schedulingGates'];

const isObj = (v: Json): v is Record<string, Json> => v !== null && typeof v === 'object' && !Array.isArray(v);
const show = (v: Json) => (v === undefined ? 'absent' : JSON.stringify(v));

/** Leaf differences between a and b, lists of named objects keyed by name (`x[name]`), others by index. */
export function leafDiff(a: Json, b: Json, at: string): string[] {
  if (isObj(a) && isObj(b)) {
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
    return keys.flatMap((k) => leafDiff(a[k], b[k], `${at}.${k}`));
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    const named = (l: Json[]) => l.every((x) => isObj(x) && typeof x.name === 'string');
    if (named(a) && named(b)) {
      const byName = (l: Json[]) => new Map(l.map((x) => [(x as { name: string }).name, x]));
      const [ma, mb] = [byName(a), byName(b)];
      const order = (l: Json[]) => l.map((x) => (x as { name: string }).name).join(',');
      const moved = order(a) !== order(b) && ma.size === mb.size ? [`${at}: order ${order(a)} -> ${order(b)}`] : [];
      const names = [...new Set([...ma.keys(), ...mb.keys()])];
      return [...moved, ...names.flatMap((n) => leafDiff(ma.get(n), mb.get(n), `${at}[${n}]`))];
    }
    if (a.length === b.length) return a.flatMap((x, i) => leafDiff(x, b[i], `${at}[${i}]`));
  }
  return JSON.stringify(a) === JSON.stringify(b) ? [] : [`${at}: ${show(a)} -> ${show(b)}`];
}

function podTemplateMunged(rJob: Json): Json {
  if (!isObj(rJob)) return rJob;
  const copy = structuredClone(rJob) as Record<string, any>;
  const pod = copy.template?.spec?.template;
  if (isObj(pod)) {
    delete pod.metadata;
    if (isObj(pod.spec)) for (const k of SUSPENDED_MUTABLE_POD) delete pod.spec[k];
  }
  return copy;
}

/** The differences of `next` from `stored` that JobSet refuses on an update (suspended: the allowance for Kueue). */
export function immutableDifferences(stored: JobSet, next: JobSet, suspended = true): string[] {
  const a = (stored.spec ?? {}) as Record<string, Json>;
  const b = (next.spec ?? {}) as Record<string, Json>;
  const jobs = (s: Record<string, Json>) =>
    Array.isArray(s.replicatedJobs)
      ? s.replicatedJobs.map((r) => (suspended ? podTemplateMunged(r) : r))
      : s.replicatedJobs;
  return [
    ...leafDiff(jobs(a), jobs(b), 'spec.replicatedJobs'),
    ...CEL_IMMUTABLE.flatMap((k) => leafDiff(a[k], b[k], `spec.${k}`)),
  ];
}
