// The CRD patch restorer's decision, pure: given the TrainJob CRD as the API server sent it and
// the function that generates the patch for a CRD (`crdPatchOps` today; one per Trainer line
// later), is the patch in force, and if not, which JSON patch puts it back?
//
// The patch is generated for the CRD's upstream form: the CRD read, without the rules this project
// wrote (marked, src/rules/marker.ts), without its scale subresource, status field and printer
// columns (generate/scale-subresource.ts) and with upstream's blanket spec.trainer rule first
// (where it is missing). So a CRD that Trainer's chart rewrote (blanket rule back, ours gone), one with
// both (a partial merge), one with our rules of an older table and one with the blanket rule
// lifted alone all converge on the same patched schema, and a patched CRD is left alone. What is
// sent is the difference between versions[0] read and that patched version, after a test of the
// resourceVersion read: a CRD that changed since is never patched from a stale read.
//
// Only onto a Trainer line it knows (found by feature and fingerprint, src/api/trainer-line-detect.ts)
// and a spec.trainer whose fields it can enumerate. The patch lifts the blanket rule and names
// each spec.trainer field it keeps immutable: on a schema it has never seen (a later Trainer, a
// spec.trainer with x-kubernetes-preserve-unknown-fields) the fields it cannot name would change
// freely at the API server, so it refuses and says what to do by hand. A patch already in force
// (applied by hand after checking it) is kept on any line.
import fastJsonPatch, { type Operation } from 'fast-json-patch';
import { TRAINJOB_CRD } from '../api/names.ts';
import { detectTrainerLine } from '../api/trainer-line-detect.ts';
import type { TrainerLine } from '../api/trainer-line.ts';
import { BLANKET_TRAINER_RULE } from './generate/crd-patch.ts';
import { withoutScaleParts } from './generate/scale-subresource.ts';
import { isGeneratedRule } from './marker.ts';

/**
 * Generates the CRD patch (JSON6902 ops on the CRD, paths from /spec/versions/0) for an upstream
 * schema and versions[0] (its printer columns and subresources), with the rules of the CRD's
 * Trainer line (an unknown line's careful rules only to check whether a patch applied by hand is
 * in force: nothing is written for that line).
 */
export type PatchOpsFor = (openAPIV3Schema: unknown, line: TrainerLine, version: unknown) => unknown[];

export type RestoreDecision =
  /** Nothing to do: the patch is in force, or the CRD is being deleted. */
  | { action: 'keep'; reason: string }
  /** Send `ops` (a JSON patch on the CRD) to put the patch back. */
  | { action: 'patch'; ops: unknown[]; reason: string }
  /** The patch cannot be put back on this object: say why, touch nothing (`byHand`: what the user can do). */
  | { action: 'refuse'; reason: string; byHand?: string };

const VERSION_PATH = '/spec/versions/0';
type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const own = (o: Obj, key: string): unknown => (Object.hasOwn(o, key) ? o[key] : undefined);

/** JSON values equal, object keys in any order. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((v, i) => jsonEqual(v, b[i]));
  }
  if (!isObj(a) || !isObj(b)) return false;
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every((k) => Object.hasOwn(b, k) && jsonEqual(a[k], b[k]));
}

interface RuleLists {
  root: Obj;
  spec: Obj;
  trainer: Obj;
}

/** The schema nodes whose rules the patch changes, or why this is not a CRD the restorer may touch. */
function ruleNodes(schema: Obj): RuleLists | string {
  const specNode = isObj(own(schema, 'properties')) ? own(own(schema, 'properties') as Obj, 'spec') : undefined;
  if (!isObj(specNode)) return 'its schema has no spec';
  const specProps = own(specNode, 'properties');
  const trainer = isObj(specProps) ? own(specProps, 'trainer') : undefined;
  if (!isObj(trainer)) return 'its schema has no spec.trainer';
  for (const [where, node] of [
    ['the root', schema],
    ['spec', specNode],
    ['spec.trainer', trainer],
  ] as const) {
    const rules = own(node, 'x-kubernetes-validations');
    if (rules === undefined) continue;
    if (!Array.isArray(rules)) return `the x-kubernetes-validations of ${where} are not a list`;
    if (!rules.every((r) => isObj(r) && typeof own(r, 'rule') === 'string'))
      return `a rule of ${where} is not an object with a string rule`;
  }
  return { root: schema, spec: specNode, trainer };
}

/** Removes this project's (marked) rules from a node; the list goes when nothing is left of it. */
function withoutOurs(node: Obj): void {
  const rules = own(node, 'x-kubernetes-validations') as Obj[] | undefined;
  if (!rules) return;
  const kept = rules.filter((r) => !isGeneratedRule(r.rule as string));
  if (kept.length > 0) node['x-kubernetes-validations'] = kept;
  else delete node['x-kubernetes-validations'];
}

const isBlanket = (r: Obj): boolean => jsonEqual(r, BLANKET_TRAINER_RULE);

/**
 * versions[0] as upstream shipped it: our rules, scale subresource, status field and columns out,
 * the blanket rule first at spec.trainer if missing.
 */
function upstreamForm(
  live: Obj,
): { version: Obj; schema: Obj; trainer: Obj; blanketFound: boolean; oursFound: number } | string {
  const version = structuredClone(live);
  const copy = (version.schema as Obj).openAPIV3Schema as Obj;
  withoutScaleParts(version);
  const nodes = ruleNodes(copy);
  if (typeof nodes === 'string') return nodes;
  let oursFound = 0;
  for (const node of [nodes.root, nodes.spec, nodes.trainer]) {
    const rules = own(node, 'x-kubernetes-validations') as Obj[] | undefined;
    oursFound += rules?.filter((r) => isGeneratedRule(r.rule as string)).length ?? 0;
    withoutOurs(node);
  }
  const trainerRules = (own(nodes.trainer, 'x-kubernetes-validations') as Obj[] | undefined) ?? [];
  const blanketFound = trainerRules.some(isBlanket);
  if (!blanketFound) nodes.trainer['x-kubernetes-validations'] = [{ ...BLANKET_TRAINER_RULE }, ...trainerRules];
  return { version, schema: copy, trainer: nodes.trainer, blanketFound, oursFound };
}

/** The object's metadata, or why the restorer may not touch it. */
function metadataOf(crd: unknown): { resourceVersion: string; deleting: boolean } | string {
  if (!isObj(crd)) return 'not an object';
  const meta = own(crd, 'metadata');
  if (!isObj(meta)) return 'no metadata';
  if (own(meta, 'name') !== TRAINJOB_CRD) return `not ${TRAINJOB_CRD} (named ${JSON.stringify(own(meta, 'name'))})`;
  const rv = own(meta, 'resourceVersion');
  if (typeof rv !== 'string' || rv === '') return 'no resourceVersion';
  return {
    resourceVersion: rv,
    deleting: own(meta, 'deletionTimestamp') !== undefined && own(meta, 'deletionTimestamp') !== null,
  };
}

/** versions[0] (the one the patch is generated for, with an openAPIV3Schema), or why there is none. */
function versionOf(crd: Obj): Obj | string {
  const spec = own(crd, 'spec');
  const versions = isObj(spec) ? own(spec, 'versions') : undefined;
  if (!Array.isArray(versions) || versions.length === 0) return 'no spec.versions';
  const first: unknown = versions[0];
  const schema =
    isObj(first) && isObj(own(first, 'schema')) ? own(own(first, 'schema') as Obj, 'openAPIV3Schema') : undefined;
  return isObj(schema) ? (first as Obj) : 'spec.versions[0] has no schema.openAPIV3Schema';
}

/** Applies generated ops to versions[0]: the patched version, or the error. */
function patchedVersion(version: Obj, ops: unknown[]): Obj | string {
  const doc = { spec: { versions: [structuredClone(version)] } };
  try {
    const out = fastJsonPatch.applyPatch(doc, structuredClone(ops) as Operation[], true, false).newDocument;
    const result = out.spec.versions[0] as unknown;
    return isObj(result) ? result : 'the generated patch leaves no version';
  } catch (err) {
    return `the generated patch does not apply to this CRD: ${(err as Error).message.split('\n')[0]}`;
  }
}

/** What to do when the restorer will not write onto this CRD: check the generated patch, then apply it. */
export const BY_HAND =
  `Check the patch generated for this CRD, then apply it by hand: kubectl get crd ${TRAINJOB_CRD} -o yaml > crd.yaml; ` +
  `trainjob-webhook rules --format crd-patch --crd crd.yaml > crd-patch.yaml; ` +
  `kubectl patch crd ${TRAINJOB_CRD} --type=json --patch-file crd-patch.yaml`;

/** Why spec.trainer's fields cannot all be named by a rule (the patch would leave some mutable), or undefined. */
function unenumerable(trainer: Obj): string | undefined {
  if (own(trainer, 'x-kubernetes-preserve-unknown-fields') === true)
    return 'its spec.trainer keeps unknown fields (x-kubernetes-preserve-unknown-fields), which no rule of the patch can name';
  const more = own(trainer, 'additionalProperties');
  if (more !== undefined && more !== false)
    return 'its spec.trainer takes additionalProperties, which no rule of the patch can name';
  if (!isObj(own(trainer, 'properties'))) return 'its spec.trainer declares no properties for the patch to name';
  return undefined;
}

/**
 * Why the spec.trainer of a TrainJob version's openAPIV3Schema has fields no rule can name, or
 * undefined (also when there is no spec.trainer to look at). For `rules`, whose generated patch is
 * what BY_HAND tells the user to apply.
 */
export function trainerNotEnumerable(openAPIV3Schema: unknown): string | undefined {
  const spec =
    isObj(openAPIV3Schema) && isObj(openAPIV3Schema.properties) ? openAPIV3Schema.properties.spec : undefined;
  const trainer = isObj(spec) && isObj(spec.properties) ? spec.properties.trainer : undefined;
  return isObj(trainer) ? unenumerable(trainer) : undefined;
}

/** What the live rules are, in words (for the decision's reason). */
const describe = (blanket: boolean, ours: number): string =>
  `${blanket ? "upstream's blanket spec.trainer rule" : 'no blanket spec.trainer rule'}, ${ours} rule(s) of this project`;

/** Is the CRD patch in force on this CRD, and if not, which JSON patch puts it back? Never throws. */
export function decideCrdPatchRestore(crd: unknown, patchOpsFor: PatchOpsFor): RestoreDecision {
  const meta = metadataOf(crd);
  if (typeof meta === 'string') return { action: 'refuse', reason: `the CRD read is unusable: ${meta}` };
  if (meta.deleting) return { action: 'keep', reason: 'the CRD is being deleted' };
  const version = versionOf(crd as Obj);
  if (typeof version === 'string') return { action: 'refuse', reason: `the CRD read is unusable: ${version}` };
  const upstream = upstreamForm(version);
  if (typeof upstream === 'string') return { action: 'refuse', reason: `not the TrainJob CRD's shape: ${upstream}` };
  const { line, summary } = detectTrainerLine(crd);
  let ops: unknown[];
  try {
    ops = patchOpsFor(upstream.schema, line, upstream.version);
  } catch (err) {
    return { action: 'refuse', reason: `the patch could not be generated for this CRD: ${(err as Error).message}` };
  }
  const wanted = patchedVersion(upstream.version, ops);
  if (typeof wanted === 'string') return { action: 'refuse', reason: wanted };
  const live = describe(upstream.blanketFound, upstream.oursFound);
  if (jsonEqual(version, wanted)) {
    const unknownLine = line.id === 'unknown' ? '; an unknown Trainer line: not restored if removed' : '';
    return { action: 'keep', reason: `the patch is in force (${live}${unknownLine})` };
  }
  const cannotName = unenumerable(upstream.trainer);
  if (cannotName) return { action: 'refuse', reason: `the patch is not in force, and ${cannotName}`, byHand: BY_HAND };
  if (line.id === 'unknown')
    return {
      action: 'refuse',
      reason: `the patch is not in force, and this CRD is of no Trainer line this restorer knows: ${summary}`,
      byHand: BY_HAND,
    };
  const diff = fastJsonPatch.compare(version, wanted).map((op) => ({ ...op, path: `${VERSION_PATH}${op.path}` }));
  return {
    action: 'patch',
    ops: [{ op: 'test', path: '/metadata/resourceVersion', value: meta.resourceVersion }, ...diff],
    reason: `the patch is not in force (${live})`,
  };
}
