// Reads a CustomResourceDefinition (parsed YAML or JSON) and picks the schema the API server
// validates a version with. Anything that is not a usable apiextensions.k8s.io/v1 CRD with a
// structural schema throws a CrdError saying what is wrong; odd input never crashes it.
import { CrdError } from './error.ts';
import { pruneDefaults } from './prune.ts';
import { compileSchema, type JSONSchemaProps, type SchemaNode } from './schema.ts';
import { deepClone, kindOf } from './values.ts';
import { isObject, type JsonObject } from '../json/object.ts';

export { CrdError } from './error.ts';
import { scaleOf, type ScalePaths } from './scale.ts';

export interface CrdInfo {
  /** metadata.name, e.g. `trainjobs.trainer.kubeflow.org`. */
  name: string;
  group: string;
  /** The version whose schema was picked. */
  version: string;
  /** `group/version`, what objects of this version carry in apiVersion. */
  apiVersion: string;
  kind: string;
  listKind: string;
  plural: string;
  singular: string;
  namespaced: boolean;
  /** With a status subresource the main endpoint ignores status (dropped on create, kept on update). */
  statusSubresource: boolean;
  /** The scale subresource's replica paths: the API server checks them on every write (scale.ts). */
  scale?: ScalePaths;
  servedVersions: string[];
  /** The version's openAPIV3Schema as written (a private copy). */
  schema: JSONSchemaProps;
  /** The same schema compiled, with defaults pruned as the API server prunes them. */
  root: SchemaNode;
}

function requireObject(v: unknown, what: string): JsonObject {
  if (!isObject(v)) throw new CrdError(`${what} must be an object, got ${kindOf(v)}`);
  return v;
}

function requireString(o: JsonObject, key: string, what: string): string {
  const v = o[key];
  if (typeof v !== 'string' || v === '') throw new CrdError(`${what}.${key} must be a non-empty string`);
  return v;
}

function optionalString(o: JsonObject, key: string, what: string): string | undefined {
  const v = o[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw new CrdError(`${what}.${key} must be a string`);
  return v;
}

interface VersionEntry {
  name: string;
  served: boolean;
  storage: boolean;
  raw: JsonObject;
}

function readVersions(spec: JsonObject): VersionEntry[] {
  const versions = spec.versions;
  if (!Array.isArray(versions) || versions.length === 0) throw new CrdError('spec.versions must be a non-empty list');
  const seen = new Set<string>();
  return versions.map((v, i) => {
    const what = `spec.versions[${i}]`;
    const raw = requireObject(v, what);
    const name = requireString(raw, 'name', what);
    if (seen.has(name)) throw new CrdError(`${what}.name ${JSON.stringify(name)} is listed twice`);
    seen.add(name);
    for (const flag of ['served', 'storage']) {
      if (typeof raw[flag] !== 'boolean') throw new CrdError(`${what}.${flag} must be a boolean`);
    }
    return { name, served: raw.served as boolean, storage: raw.storage as boolean, raw };
  });
}

function pickVersion(versions: VersionEntry[], wanted: string | undefined): VersionEntry {
  if (wanted !== undefined) {
    const v = versions.find((x) => x.name === wanted);
    if (!v)
      throw new CrdError(
        `the CRD has no version ${JSON.stringify(wanted)} (it has ${versions.map((x) => x.name).join(', ')})`,
      );
    if (!v.served) throw new CrdError(`version ${JSON.stringify(wanted)} is not served`);
    return v;
  }
  const storage = versions.filter((x) => x.storage);
  if (storage.length !== 1)
    throw new CrdError(`exactly one version must be the storage version, found ${storage.length}`);
  if (!storage[0].served) throw new CrdError(`the storage version ${JSON.stringify(storage[0].name)} is not served`);
  return storage[0];
}

/**
 * Loads a CRD. Without `options.version` it picks the storage version (which must be served):
 * the one objects are stored in and the one the lead's webhook sees.
 */
export function loadCrd(obj: unknown, options: { version?: string } = {}): CrdInfo {
  const crd = requireObject(obj, 'the CRD');
  if (crd.kind !== 'CustomResourceDefinition') {
    throw new CrdError(`kind must be CustomResourceDefinition, got ${JSON.stringify(crd.kind ?? null)}`);
  }
  if (crd.apiVersion !== 'apiextensions.k8s.io/v1') {
    throw new CrdError(`apiVersion must be apiextensions.k8s.io/v1, got ${JSON.stringify(crd.apiVersion ?? null)}`);
  }
  const metadata = requireObject(crd.metadata, 'metadata');
  const spec = requireObject(crd.spec, 'spec');
  const group = requireString(spec, 'group', 'spec');
  const names = requireObject(spec.names, 'spec.names');
  const kind = requireString(names, 'kind', 'spec.names');
  const plural = requireString(names, 'plural', 'spec.names');
  const scope = requireString(spec, 'scope', 'spec');
  if (scope !== 'Namespaced' && scope !== 'Cluster')
    throw new CrdError(`spec.scope must be Namespaced or Cluster, got ${JSON.stringify(scope)}`);
  if (spec.preserveUnknownFields === true)
    throw new CrdError('spec.preserveUnknownFields must be false in apiextensions.k8s.io/v1');

  const versions = readVersions(spec);
  const picked = pickVersion(versions, options.version);
  const what = `spec.versions[${versions.indexOf(picked)}]`;
  const schemaHolder = requireObject(picked.raw.schema, `${what}.schema`);
  const rawSchema = requireObject(schemaHolder.openAPIV3Schema, `${what}.schema.openAPIV3Schema`);
  if (rawSchema.type !== 'object') throw new CrdError(`${what}.schema.openAPIV3Schema.type must be object`);
  const schema = deepClone(rawSchema) as JSONSchemaProps;
  const root = compileSchema(schema, `${what}.schema.openAPIV3Schema`);
  pruneDefaults(root);

  const subresources = picked.raw.subresources;
  return {
    name: optionalString(metadata, 'name', 'metadata') ?? `${plural}.${group}`,
    group,
    version: picked.name,
    apiVersion: `${group}/${picked.name}`,
    kind,
    listKind: optionalString(names, 'listKind', 'spec.names') ?? `${kind}List`,
    plural,
    singular: optionalString(names, 'singular', 'spec.names') ?? kind.toLowerCase(),
    namespaced: scope === 'Namespaced',
    statusSubresource: isObject(subresources) && isObject(subresources.status),
    ...scaleOf(subresources, what),
    servedVersions: versions.filter((v) => v.served).map((v) => v.name),
    schema,
    root,
  };
}
