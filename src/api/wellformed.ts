// Is an object read from the cluster shaped the way objects.ts declares it, in the fields the
// reconciler reads? Runtime snapshots are unvalidated YAML, a schema may preserve unknown fields,
// and anything may be edited by hand, so the pure decisions check first and answer "unknown /
// cannot build" with the first malformed field (`JobSet ns/x: spec.replicatedJobs[0] is not an
// object`) rather than throw. Absent (undefined or null) is fine unless a field is required;
// fields the reconciler does not read are not looked at. Pure.
import { intOf, isAbsent, labelOf, runtimeLabel } from './objects.ts';
import { isObject } from '../json/object.ts';

/** What is wrong with a present value at path `at`, or undefined when it has the expected shape. */
export type Check = (value: unknown, at: string) => string | undefined;

export const str: Check = (v, at) => (typeof v === 'string' ? undefined : `${at} is not a string`);
export const bool: Check = (v, at) => (typeof v === 'boolean' ? undefined : `${at} is not a boolean`);
export const count: Check = (v, at) => (intOf(v) === undefined ? `${at} is not a non-negative integer` : undefined);
const countOrString: Check = (v, at) =>
  typeof v === 'string' || intOf(v) !== undefined ? undefined : `${at} is neither a non-negative integer nor a string`;
const quantity: Check = (v, at) =>
  typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v)) ? undefined : `${at} is not a quantity`;
const timestamp: Check = (v, at) =>
  typeof v === 'string' || v instanceof Date ? undefined : `${at} is not a timestamp`;

export function oneOf(values: readonly string[]): Check {
  return (v, at) =>
    typeof v === 'string' && values.includes(v) ? undefined : `${at} is not one of ${values.join(', ')}`;
}

/** An object whose listed fields, when present, pass their checks; `required` ones must be present. */
export function obj(fields: Record<string, Check>, required: readonly string[] = []): Check {
  return (v, at) => {
    if (!isObject(v)) return `${at} is not an object`;
    for (const [key, check] of Object.entries(fields)) {
      const where = at ? `${at}.${key}` : key;
      const value = v[key];
      const wrong = isAbsent(value)
        ? required.includes(key)
          ? `${where} is missing`
          : undefined
        : check(value, where);
      if (wrong) return wrong;
    }
    return undefined;
  };
}

/** A list whose every item (null included) passes `item`. */
export function list(item: Check): Check {
  return (v, at) => {
    if (!Array.isArray(v)) return `${at} is not a list`;
    for (let i = 0; i < v.length; i++) {
      const wrong = item(v[i], `${at}[${i}]`);
      if (wrong) return wrong;
    }
    return undefined;
  };
}

/** An object used as a map (labels, resource lists): every value passes `value`. */
function mapOf(value: Check): Check {
  return (v, at) => {
    if (!isObject(v)) return `${at} is not an object`;
    for (const [key, item] of Object.entries(v)) {
      const wrong = value(item, `${at}[${JSON.stringify(key)}]`);
      if (wrong) return wrong;
    }
    return undefined;
  };
}

const stringMap = mapOf(str);

const metadata = obj({
  name: str,
  namespace: str,
  uid: str,
  resourceVersion: str,
  generation: count,
  deletionTimestamp: timestamp,
  labels: stringMap,
  annotations: stringMap,
  ownerReferences: list(obj({ uid: str, name: str })),
});

const envVar = obj({ name: str, value: str, valueFrom: obj({}) }, ['name']);
const resources = obj({ limits: mapOf(quantity), requests: mapOf(quantity) });

const container = obj(
  {
    name: str,
    image: str,
    command: list(str),
    args: list(str),
    env: list(envVar),
    ports: list(obj({ containerPort: count }, ['containerPort'])),
    resources,
  },
  ['name'],
);

const replicatedJob = obj(
  {
    name: str,
    template: obj({
      metadata: obj({ labels: stringMap, annotations: stringMap }),
      spec: obj({
        parallelism: count,
        completions: count,
        template: obj({ spec: obj({ containers: list(container) }) }),
      }),
    }),
  },
  ['name'],
);

const jobSetSpec = obj({
  suspend: bool,
  replicatedJobs: list(replicatedJob),
  volumeClaimPolicies: list(obj({ templates: list(obj({ metadata: obj({ name: str }) })) })),
});

const templateMetadata = obj({ labels: stringMap, annotations: stringMap });
const initializerSource = obj({ storageUri: str, env: list(envVar) });

const trainJob = obj(
  {
    metadata,
    spec: obj({
      suspend: bool,
      managedBy: str,
      trainer: obj({
        image: str,
        command: list(str),
        args: list(str),
        env: list(envVar),
        numNodes: count,
        numProcPerNode: countOrString,
        resourcesPerNode: resources,
      }),
      initializer: obj({ dataset: initializerSource, model: initializerSource }),
      runtimePatches: list(
        obj({ trainingRuntimeSpec: obj({ template: obj({ metadata: templateMetadata, spec: obj({}) }) }) }),
      ),
    }),
  },
  ['metadata'],
);

const runtime = obj(
  {
    kind: str,
    name: str,
    spec: obj({
      mlPolicy: obj({
        numNodes: count,
        torch: obj({ numProcPerNode: countOrString }),
        mpi: obj({ runLauncherAsNode: bool }),
      }),
      template: obj({ metadata: templateMetadata, spec: jobSetSpec }),
    }),
  },
  ['spec'],
);

const jobSet = obj({ metadata, spec: jobSetSpec }, ['metadata']);
const withMetadata = obj({ metadata }, ['metadata']);

function malformed(label: string, check: Check, value: unknown): string | undefined {
  if (!isObject(value)) return `${label} is not an object`;
  const wrong = check(value, '');
  return wrong === undefined ? undefined : `${label}: ${wrong}`;
}

/** The first malformed field of a TrainJob (metadata and spec), or undefined. */
export function malformedTrainJob(value: unknown): string | undefined {
  return malformed(labelOf('TrainJob', value), trainJob, value);
}

/** The first malformed field of a (Cluster)TrainingRuntime (its ML policy and JobSet template), or undefined. */
export function malformedRuntime(value: unknown): string | undefined {
  return malformed(runtimeLabel(value), runtime, value);
}

/** The first malformed field of a JobSet (metadata and spec), or undefined. */
export function malformedJobSet(value: unknown): string | undefined {
  return malformed(labelOf('JobSet', value), jobSet, value);
}

/** The first malformed field of a JobSet spec built from a template, described by `label`. */
export function malformedJobSetSpec(value: unknown, label: string): string | undefined {
  const wrong = jobSetSpec(value, 'spec');
  return wrong === undefined ? undefined : `${label}: ${wrong}`;
}

/** The first malformed field of any object's metadata (a PVC, or a TrainJob before it is judged), or undefined. */
export function malformedMetadata(kind: string, value: unknown): string | undefined {
  return malformed(labelOf(kind, value), withMetadata, value);
}
