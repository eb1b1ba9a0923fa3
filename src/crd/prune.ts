// What the API server's decoder does to a custom resource before anything else looks at it
// (apiextensions-apiserver customresource_handler.go, unstructuredSchemaCoercer.apply):
// ObjectMeta round-trip of `metadata`, structural pruning of unknown fields (pruning/algorithm.go),
// then removal of nulls the schema cannot hold (defaulting/prunenulls.go).
import { appendAll } from './append.ts';
import { coerceEmbeddedInPlace } from './embedded.ts';
import type { SchemaNode } from './schema.ts';
import { coerceObjectMetaInPlace } from './objectmeta.ts';
import { deepClone, ownKeys } from './values.ts';
import { isObject } from '../json/object.ts';

const META_FIELDS = new Set(['apiVersion', 'kind', 'metadata']);

/**
 * Collects unknown field paths the way UnknownFieldPathOptions builds them: `spec.a[0].b`. The
 * walk pushes and pops segments; a path's text is built only for an unknown field (rare).
 */
class PathRecorder {
  readonly paths: string[] = [];
  #segments: Array<string | number> = [];

  get depth(): number {
    return this.#segments.length;
  }
  key(k: string): number {
    return this.#segments.push(k) - 1;
  }
  index(i: number): number {
    return this.#segments.push(i) - 1;
  }
  reset(mark: number): void {
    if (mark === this.#segments.length - 1) this.#segments.pop();
    else this.#segments.length = mark;
  }
  record(k: string): void {
    let path = '';
    const segments = this.#segments;
    for (let i = 0; i < segments.length; i++) {
      const seg = segments[i];
      path += typeof seg === 'number' ? `[${seg}]` : i === 0 ? seg : `.${seg}`;
    }
    this.paths.push(segments.length === 0 ? k : `${path}.${k}`);
  }
}

// eslint-disable-next-line complexity -- pruning/algorithm.go's prune: preserved, schemaless, object and list cases
function pruneNode(x: unknown, s: SchemaNode | undefined, rec: PathRecorder): void {
  if (s?.preserveUnknownFields) {
    skipPrune(x, s, rec);
    return;
  }
  if (s === undefined) {
    pruneWithoutSchema(x, rec);
    return;
  }
  if (isObject(x)) {
    for (const k of ownKeys(x)) {
      if (s.embeddedResource && META_FIELDS.has(k)) continue;
      const prop = s.properties?.get(k);
      if (prop !== undefined || s.hasAdditionalProperties) {
        const mark = rec.key(k);
        pruneNode(x[k], prop ?? s.additionalProperties, rec);
        rec.reset(mark);
      } else {
        // apiVersion/kind/metadata at the root of a resource are not unknown, only dropped.
        if (!META_FIELDS.has(k) || rec.depth > 0) rec.record(k);
        delete x[k];
      }
    }
  } else if (Array.isArray(x)) {
    for (let i = 0; i < x.length; i++) {
      const mark = rec.index(i);
      pruneNode(x[i], s.items, rec);
      rec.reset(mark);
    }
  }
}

/** No schema: every key of every object below is unknown. Iterative (the data is untrusted). */
function pruneWithoutSchema(x: unknown, rec: PathRecorder): void {
  if (isObject(x)) {
    for (const k of ownKeys(x)) {
      rec.record(k);
      delete x[k];
    }
    return;
  }
  if (!Array.isArray(x)) return;
  // Arrays of arrays without a schema: walk with an explicit stack, keeping paths exact.
  const stack: Array<{ list: unknown[]; i: number; mark: number }> = [{ list: x, i: 0, mark: -1 }];
  while (stack.length > 0) {
    const top = stack[stack.length - 1];
    if (top.mark >= 0) rec.reset(top.mark);
    if (top.i >= top.list.length) {
      stack.pop();
      continue;
    }
    const i = top.i++;
    top.mark = rec.index(i);
    const v = top.list[i];
    if (isObject(v)) {
      for (const k of ownKeys(v)) {
        rec.record(k);
        delete v[k];
      }
    } else if (Array.isArray(v)) stack.push({ list: v, i: 0, mark: -1 });
  }
}

function skipPrune(x: unknown, s: SchemaNode, rec: PathRecorder): void {
  if (isObject(x)) {
    for (const k of ownKeys(x)) {
      if (s.embeddedResource && META_FIELDS.has(k)) continue;
      const prop = s.properties?.get(k);
      if (prop !== undefined || s.hasAdditionalProperties) {
        const mark = rec.key(k);
        pruneNode(x[k], prop ?? s.additionalProperties, rec);
        rec.reset(mark);
      }
    }
  } else if (Array.isArray(x)) {
    for (let i = 0; i < x.length; i++) {
      const mark = rec.index(i);
      if (s.items) skipPrune(x[i], s.items, rec);
      rec.reset(mark);
    }
  }
}

/**
 * Structural pruning in place. At a resource root apiVersion, kind and metadata are kept as if
 * the schema were an embedded resource. Returns the unknown field paths, sorted like Go does.
 */
export function pruneInPlace(x: unknown, schema: SchemaNode, isResourceRoot: boolean): string[] {
  const rec = new PathRecorder();
  pruneNode(x, isResourceRoot ? asResourceRoot(schema) : schema, rec);
  return rec.paths.sort();
}

const resourceRoots = new WeakMap<SchemaNode, SchemaNode>();

/** The root schema read as an embedded resource's, made once per schema (not per object). */
function asResourceRoot(schema: SchemaNode): SchemaNode {
  if (schema.embeddedResource) return schema;
  let root = resourceRoots.get(schema);
  if (root === undefined) resourceRoots.set(schema, (root = { ...schema, embeddedResource: true }));
  return root;
}

function nullPrunable(v: unknown, s: SchemaNode | undefined): boolean {
  return v === null && s !== undefined && !s.nullable && s.default === undefined;
}

/**
 * PruneNonNullableNullsWithoutDefaults in place: `field: null` where the schema neither allows
 * null nor has a default to put there is treated as absent (as Go's json.Unmarshal would).
 */
export function pruneNullsInPlace(x: unknown, s: SchemaNode | undefined): void {
  if (s === undefined) return; // without a schema nothing below can be pruned
  if (isObject(x)) {
    for (const k of ownKeys(x)) {
      const child = s.properties?.get(k) ?? s.additionalProperties;
      if (nullPrunable(x[k], child)) delete x[k];
      else pruneNullsInPlace(x[k], child);
    }
  } else if (Array.isArray(x)) {
    for (const v of x) pruneNullsInPlace(v, s.items);
  }
}

export interface PruneResult {
  /** A pruned copy; the input is not modified. */
  object: unknown;
  /** Unknown field paths (`metadata.foo`, then `spec.foo`...), as the API server warns about them. */
  pruned: string[];
}

/**
 * The decoder's whole coercion of a custom resource, in the API server's order: ObjectMeta round
 * trip, structural pruning (unless the CRD preserves unknown fields), null pruning, ObjectMeta
 * round trip of embedded resources.
 */
export function prune(
  schema: SchemaNode,
  obj: unknown,
  options: { preserveUnknownFields?: boolean } = {},
): PruneResult {
  const object = deepClone(obj);
  const pruned = coerceObjectMetaInPlace(object);
  if (!options.preserveUnknownFields) {
    appendAll(pruned, pruneInPlace(object, schema, true));
    pruneNullsInPlace(object, schema);
  }
  appendAll(pruned, coerceEmbeddedInPlace(object, schema));
  return { object, pruned };
}

/**
 * Prunes every default in the tree against its own schema, as the API server does when it loads
 * a CRD (defaulting/prune.go), so a default never brings back an unknown field.
 */
export function pruneDefaults(node: SchemaNode, seen = new Set<SchemaNode>()): void {
  if (seen.has(node)) return;
  seen.add(node);
  if (node.default !== undefined) pruneInPlace(node.default.value, node, false);
  if (node.additionalProperties) pruneDefaults(node.additionalProperties, seen);
  if (node.items) pruneDefaults(node.items, seen);
  for (const child of node.properties?.values() ?? []) pruneDefaults(child, seen);
}
