// Which Trainer line installed this TrainJob CRD, found by feature from the CRD itself (its
// schema and x-kubernetes-validations), never assumed. Pure, total: any object (missing schema,
// wrong types, huge) gives an answer, never an exception.
//
// Two checks, both over the TrainJob version's openAPIV3Schema:
// - features that tell the three vendored CRDs apart (diffed with descriptions left out):
//   v2.3.0 added the storageUri URI rules on spec.initializer.{dataset,model}, the runtimePatches'
//   terminationGracePeriodSeconds and raised command/args items' maxLength from 65536 to 1048576;
//   main (8c0f5059) added `minimum: 0` on spec.trainer.numNodes and the rule `self >= 1` on
//   spec.trainer.numProcPerNode (#3809);
// - a fingerprint of the whole schema without descriptions, without this project's generated
//   rules, its status field (status.trainjobWebhook) and upstream's blanket spec.trainer rule (so
//   the same CRD patched, lifted or restored fingerprints the same). A known line is one whose
//   features and fingerprint both match; a CRD whose features match a line but whose schema
//   differs elsewhere (a later release) is unknown,
//   "resembling" that line, and gets the careful rules.
import { isObject } from '../json/object.ts';
import { GENERATED_RULE_MARKER, STATUS_FIELD, TRAINJOB_VERSION } from './names.ts';
import {
  KNOWN_TRAINER_LINES,
  TRAINER_LINES,
  UNKNOWN_TRAINER_LINE,
  type KnownTrainerLine,
  type TrainerLine,
} from './trainer-line.ts';
import { LINE_FINGERPRINTS } from './trainer-line-fingerprints.ts';

export interface CrdFeatures {
  storageUriRule: boolean;
  runtimePatchTerminationGrace: boolean;
  /** maxLength of spec.trainer.args items; undefined when absent or not a number. */
  argsMaxLength: number | undefined;
  /** spec.trainer.numNodes' minimum; undefined when absent or not a number. */
  numNodesMinimum: number | undefined;
  numProcPerNodeRule: boolean;
}

/** The features of each vendored CRD (test/api/trainer-line-detect.test.ts reads them from the files). */
export const LINE_FEATURES: Readonly<Record<KnownTrainerLine, CrdFeatures>> = {
  'v2.2.1': {
    storageUriRule: false,
    runtimePatchTerminationGrace: false,
    argsMaxLength: 65536,
    numNodesMinimum: undefined,
    numProcPerNodeRule: false,
  },
  'v2.3.0': {
    storageUriRule: true,
    runtimePatchTerminationGrace: true,
    argsMaxLength: 1048576,
    numNodesMinimum: undefined,
    numProcPerNodeRule: false,
  },
  'main-8c0f5059': {
    storageUriRule: true,
    runtimePatchTerminationGrace: true,
    argsMaxLength: 1048576,
    numNodesMinimum: 0,
    numProcPerNodeRule: true,
  },
};

export interface LineDetection {
  /** The rules in force: the known line's, else the careful ones. */
  line: TrainerLine;
  /** Undefined when the CRD has no readable schema. */
  features: CrdFeatures | undefined;
  fingerprint: string | undefined;
  /** An unknown CRD whose features are those of this line (its schema differs elsewhere). */
  resembles?: KnownTrainerLine;
  /** One line for logs, metrics and conditions. */
  summary: string;
}

/** The schema nodes the fingerprint walks at most: a TrainJob CRD has ~25k. */
const MAX_NODES = 400_000;
/** Nesting the walk follows at most: a TrainJob CRD nests ~45 deep. */
const MAX_DEPTH = 200;

type Json = unknown;

const at = (node: Json, ...steps: string[]): Json =>
  steps.reduce<Json>((n, s) => (isObject(n) && Object.hasOwn(n, s) ? n[s] : undefined), node);
const prop = (node: Json, ...names: string[]): Json => names.reduce<Json>((n, name) => at(n, 'properties', name), node);
const rulesOf = (node: Json): Record<string, unknown>[] => {
  const list = at(node, 'x-kubernetes-validations');
  return Array.isArray(list) ? list.filter(isObject) : [];
};
const numberAt = (node: Json, key: string): number | undefined => {
  const v = at(node, key);
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
};

/** The TrainJob version's openAPIV3Schema: v1alpha1, else the storage version, else the first. */
export function trainJobSchemaOf(crd: Json): Record<string, unknown> | undefined {
  const versions = at(crd, 'spec', 'versions');
  if (!Array.isArray(versions)) return undefined;
  const objects = versions.filter(isObject);
  const version =
    objects.find((v) => v.name === TRAINJOB_VERSION) ?? objects.find((v) => v.storage === true) ?? objects[0];
  const schema = at(version, 'schema', 'openAPIV3Schema');
  return isObject(schema) ? schema : undefined;
}

export function featuresOf(schema: Json): CrdFeatures {
  const spec = prop(schema, 'spec');
  const trainer = prop(spec, 'trainer');
  const podSpec = prop(
    at(prop(spec, 'runtimePatches'), 'items'),
    'trainingRuntimeSpec',
    'template',
    'spec',
    'replicatedJobs',
  );
  const podTemplateSpec = prop(at(podSpec, 'items'), 'template', 'spec', 'template', 'spec');
  const storageUriRule = ['dataset', 'model'].some((source) =>
    rulesOf(prop(spec, 'initializer', source, 'storageUri')).some(
      (r) => typeof r.rule === 'string' && r.rule.includes('matches('),
    ),
  );
  return {
    storageUriRule,
    runtimePatchTerminationGrace: isObject(prop(podTemplateSpec, 'terminationGracePeriodSeconds')),
    argsMaxLength: numberAt(at(prop(trainer, 'args'), 'items'), 'maxLength'),
    numNodesMinimum: numberAt(prop(trainer, 'numNodes'), 'minimum'),
    numProcPerNodeRule: rulesOf(prop(trainer, 'numProcPerNode')).some(
      (r) => typeof r.rule === 'string' && r.rule.replace(/\s+/g, '') === 'self>=1',
    ),
  };
}

const sameFeatures = (a: CrdFeatures, b: CrdFeatures): boolean =>
  (Object.keys(a) as (keyof CrdFeatures)[]).every((k) => a[k] === b[k]);

/** 64 bits of two 32-bit FNV-1a style lanes over a stream of strings (not cryptographic: a schema's identity). */
class Hasher {
  private h1 = 0x811c9dc5;
  private h2 = 0x01000193 ^ 0x5bd1e995;
  update(text: string): void {
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      this.h1 = Math.imul(this.h1 ^ c, 0x01000193);
      this.h2 = Math.imul(this.h2 ^ c, 0x5bd1e995);
      this.h2 ^= this.h2 >>> 15;
    }
  }
  digest(): string {
    const hex = (n: number) => (n >>> 0).toString(16).padStart(8, '0');
    return hex(this.h1) + hex(this.h2);
  }
}

/** The schema locations this project's patches touch: root, spec and spec.trainer. */
const TRAINER = '/properties/spec/properties/trainer';
const PATCHED = new Set(['', '/properties/spec', TRAINER]);
const STATUS_PROPERTIES = '/properties/status/properties';

/** A generated rule of this project, or upstream's blanket spec.trainer rule: left out of the fingerprint. */
const patchable = (rule: unknown, path: string): boolean =>
  isObject(rule) &&
  typeof rule.rule === 'string' &&
  (rule.rule.trimStart().startsWith(GENERATED_RULE_MARKER) ||
    (path === TRAINER && rule.rule.replace(/\s+/g, ' ').trim() === 'self == oldSelf'));

/**
 * The fingerprint of a TrainJob schema (see the header), or why there is none: canonical JSON
 * (keys sorted, descriptions left out) streamed into the hash, bounded in nodes and depth.
 */
export function schemaFingerprint(schema: Json): { ok: true; fingerprint: string } | { ok: false; reason: string } {
  const hasher = new Hasher();
  let nodes = 0;
  const walk = (node: Json, path: string, depth: number): string | undefined => {
    if (++nodes > MAX_NODES) return `the schema has more than ${MAX_NODES} nodes`;
    if (depth > MAX_DEPTH) return `the schema nests deeper than ${MAX_DEPTH}`;
    if (Array.isArray(node)) return walkList(node, path, depth);
    if (isObject(node)) return walkObject(node, path, depth);
    hasher.update(typeof node === 'bigint' ? node.toString() : (JSON.stringify(node) ?? 'null'));
    return undefined;
  };
  const walkList = (list: unknown[], path: string, depth: number): string | undefined => {
    hasher.update('[');
    for (const item of list) {
      const why = walk(item, path, depth + 1);
      if (why) return why;
      hasher.update(',');
    }
    hasher.update(']');
    return undefined;
  };
  const walkObject = (node: Record<string, unknown>, path: string, depth: number): string | undefined => {
    hasher.update('{');
    for (const key of Object.keys(node).sort()) {
      if (key === 'description') continue;
      // This project's status field (the CRD patch adds it): the same CRD with or without it is one line.
      if (key === STATUS_FIELD && path === STATUS_PROPERTIES) continue;
      let value = node[key];
      if (key === 'x-kubernetes-validations' && PATCHED.has(path) && Array.isArray(value)) {
        value = value.filter((r) => !patchable(r, path));
        if ((value as unknown[]).length === 0) continue;
      }
      hasher.update(`${JSON.stringify(key)}:`);
      const why = walk(value, `${path}/${key}`, depth + 1);
      if (why) return why;
      hasher.update(',');
    }
    hasher.update('}');
    return undefined;
  };
  const why = walk(schema, '', 0);
  return why ? { ok: false, reason: why } : { ok: true, fingerprint: hasher.digest() };
}

export function detectTrainerLine(crd: Json): LineDetection {
  const unknown = (summary: string, extra: Partial<LineDetection> = {}): LineDetection => {
    return {
      line: UNKNOWN_TRAINER_LINE,
      features: undefined,
      fingerprint: undefined,
      ...extra,
      summary: `${summary}: the most careful rules apply (Failed is terminal; standalone mode builds no JobSet)`,
    };
  };
  const schema = trainJobSchemaOf(crd);
  if (!schema) return unknown('the TrainJob CRD has no readable openAPIV3Schema');
  const features = featuresOf(schema);
  const printed = schemaFingerprint(schema);
  const resembles = KNOWN_TRAINER_LINES.find((id) => sameFeatures(features, LINE_FEATURES[id]));
  if (!printed.ok)
    return unknown(`the TrainJob CRD's schema cannot be fingerprinted (${printed.reason})`, { features, resembles });
  const { fingerprint } = printed;
  const known = resembles && LINE_FINGERPRINTS[resembles] === fingerprint ? TRAINER_LINES[resembles] : undefined;
  if (!known) {
    const like = resembles
      ? `has the features of ${TRAINER_LINES[resembles].label} but a schema that differs elsewhere (a later release?)`
      : 'has features of none of Trainer v2.2.1, v2.3.0 and main@8c0f5059 (a later Trainer?)';
    return unknown(`the TrainJob CRD (schema fingerprint ${fingerprint}) ${like}`, {
      features,
      fingerprint,
      ...(resembles ? { resembles } : {}),
    });
  }
  return {
    line: known,
    features,
    fingerprint,
    summary: `the TrainJob CRD is that of ${known.label}`,
  };
}
