// Several kubeconfig documents merged into one, as kubectl merges the files KUBECONFIG lists
// (k8s.io/client-go/tools/clientcmd, read at v0.37.2): loader.go ClientConfigLoadingRules.Load
// and merge.go. Pure: the caller reads the files (merged-kubeconfig.ts).
//
// - The first file to set a map key wins, and the entry is taken whole: a clusters, users or
//   contexts entry (and an extensions entry) is the first file's of that name; the fields of a
//   later entry of the same name are never looked at ("if two files specify a red-user, only
//   values from the first file's red-user are used"). Load merges the maps forward and the other
//   values backward, then the backward result over the forward one: the first file wins for both.
// - current-context: the first file to set a non-empty one (merge.go overwrites only with a
//   non-zero value). preferences.colors the same: true if a file sets it, since false is Go's zero.
// - A name twice in one list of one file is an error (api/v1/conversion.go: `duplicate name "u"
//   in list`), and so is a file that does not decode as a Config (a list or a scalar, a list
//   field that is not a list, an entry that is not a mapping, a name that is not a string); an
//   empty file is an empty Config (loader.go Load: "if there's no data in a file, return the
//   default object").
// - Relative paths are resolved against the directory of the file the entry came from
//   (ResolveLocalPaths over each entry's LocationOfOrigin: GetClusterFileReferences and
//   GetAuthInfoFileReferences): a cluster's certificate-authority, a user's client-certificate,
//   client-key and tokenFile, and exec.command when it holds a path separator. Also token-file,
//   which kube-access.ts and client-node read as tokenFile and kube-access.ts resolves the same
//   way (withLocalPathsResolved does the same for the one explicit file kube-access.ts reads). So
//   the merged document no longer depends on where each file was, and kube-access.ts and
//   client-node (whose own KUBECONFIG merge differs: the last current-context wins and a name in
//   two files throws) read the same merged config.
import path from 'node:path';
import { isObject, type JsonObject } from '../json/object.ts';

/** One file's parsed YAML (`doc`), with the path it was read from (relative to the process's cwd, or absolute). */
export interface KubeconfigDocument {
  file: string;
  doc: unknown;
}

/** A file that client-go would not load: the message names the file. */
export class KubeconfigFileError extends Error {
  override name = 'KubeconfigFileError';
  readonly file: string;
  constructor(file: string, reason: string) {
    super(`kubeconfig file ${file}: ${reason}`);
    this.file = file;
  }
}

/** The named lists of a kubeconfig and the field each entry holds its body in. */
const LISTS = [
  ['clusters', 'cluster'],
  ['users', 'user'],
  ['contexts', 'context'],
  ['extensions', 'extension'],
] as const;

/** The path fields client-go resolves against the file's directory, per list. */
const PATH_FIELDS: Record<string, readonly string[]> = {
  clusters: ['certificate-authority'],
  users: ['client-certificate', 'client-key', 'tokenFile', 'token-file'],
};

/** `p` against `base` as Go's filepath.Join(base, p), unless empty, absolute or not a string. */
function resolved(p: unknown, base: string): unknown {
  return typeof p === 'string' && p !== '' && !path.isAbsolute(p) ? path.join(base, p) : p;
}

/** The entry with its relative paths made absolute against `base` (a copy: the input is not changed). */
function withAbsolutePaths(list: string, inner: string, entry: JsonObject, base: string): JsonObject {
  const fields = PATH_FIELDS[list];
  const body = entry[inner];
  if (!fields || !isObject(body)) return entry;
  const out: JsonObject = { ...body };
  for (const f of fields) if (f in out) out[f] = resolved(out[f], base);
  const exec = out.exec;
  if (list === 'users' && isObject(exec) && typeof exec.command === 'string' && exec.command.includes(path.sep))
    out.exec = { ...exec, command: resolved(exec.command, base) };
  return { ...entry, [inner]: out };
}

/**
 * One file's document with the relative paths of its clusters and users resolved against the
 * file's directory, as mergeKubeconfigs resolves them (client-go's ResolveLocalPaths runs on an
 * explicit file too). A shape it does not expect is left as it is, for the reader to refuse.
 */
export function withLocalPathsResolved(doc: unknown, file: string): unknown {
  if (!isObject(doc)) return doc;
  const base = path.resolve(path.dirname(file));
  const out: JsonObject = { ...doc };
  for (const [list, inner] of LISTS) {
    const items = doc[list];
    if (Array.isArray(items))
      out[list] = items.map((e: unknown) => (isObject(e) ? withAbsolutePaths(list, inner, e, base) : e));
  }
  return out;
}

/** The entries of `list` in one file, by name; a shape client-go cannot decode or a name twice throws. */
function entriesOf(file: string, items: unknown, list: string, inner: string): [string, JsonObject][] {
  if (items === undefined || items === null) return [];
  if (!Array.isArray(items)) throw new KubeconfigFileError(file, `${list} must be a list`);
  const seen = new Set<string>();
  return items.map((e: unknown, i): [string, JsonObject] => {
    if (!isObject(e)) throw new KubeconfigFileError(file, `${list}[${i}] must be a mapping`);
    const name = e.name ?? '';
    if (typeof name !== 'string') throw new KubeconfigFileError(file, `${list}[${i}].name must be a string`);
    const body = e[inner];
    if (body !== undefined && body !== null && !isObject(body))
      throw new KubeconfigFileError(file, `${list} entry "${name.slice(0, 100)}": ${inner} must be a mapping`);
    if (seen.has(name)) throw new KubeconfigFileError(file, `duplicate name "${name.slice(0, 100)}" in list ${list}`);
    seen.add(name);
    return [name, e];
  });
}

/** The first file's entry of each name, in the order first seen. */
type Named = Map<string, JsonObject>;

/** One document's top level, checked: undefined for an empty file. */
function topOf({ file, doc }: KubeconfigDocument): JsonObject | undefined {
  if (doc === undefined || doc === null) return undefined;
  if (!isObject(doc))
    throw new KubeconfigFileError(
      file,
      `not a kubeconfig: a mapping is expected, not ${Array.isArray(doc) ? 'a list' : 'a scalar'}`,
    );
  const current = doc['current-context'];
  if (current !== undefined && current !== null && typeof current !== 'string')
    throw new KubeconfigFileError(file, 'current-context must be a string');
  if (doc.preferences !== undefined && doc.preferences !== null && !isObject(doc.preferences))
    throw new KubeconfigFileError(file, 'preferences must be a mapping');
  return doc;
}

/** Adds the entries whose name `merged` does not hold yet: the first file's entry wins, whole. */
function keepFirst(merged: Named, entries: [string, JsonObject][], fix: (e: JsonObject) => JsonObject = (e) => e) {
  for (const [name, e] of entries) if (!merged.has(name)) merged.set(name, fix(e));
}

/**
 * The documents of a precedence list (kubectl's KUBECONFIG order, files that do not exist already
 * left out) merged as client-go merges them: one kubeconfig, every path in it absolute. Throws a
 * KubeconfigFileError naming the first file client-go would refuse to load.
 */
export function mergeKubeconfigs(documents: readonly KubeconfigDocument[]): JsonObject {
  const named = new Map<string, Named>(LISTS.map(([list]) => [list, new Map()]));
  const preferenceExtensions: Named = new Map();
  let currentContext: string | undefined;
  let colors = false;
  for (const document of documents) {
    const top = topOf(document);
    if (!top) continue;
    const base = path.resolve(path.dirname(document.file));
    for (const [list, inner] of LISTS)
      keepFirst(named.get(list)!, entriesOf(document.file, top[list], list, inner), (e) =>
        withAbsolutePaths(list, inner, e, base),
      );
    const current = top['current-context'];
    if (currentContext === undefined && typeof current === 'string' && current !== '') currentContext = current;
    const prefs = isObject(top.preferences) ? top.preferences : {};
    colors ||= prefs.colors === true;
    keepFirst(preferenceExtensions, entriesOf(document.file, prefs.extensions, 'preferences.extensions', 'extension'));
  }
  const listOf = (entries: Named) => [...entries.values()];
  const extensions = named.get('extensions')!;
  return {
    apiVersion: 'v1',
    kind: 'Config',
    preferences: {
      ...(colors ? { colors } : {}),
      ...(preferenceExtensions.size > 0 ? { extensions: listOf(preferenceExtensions) } : {}),
    },
    clusters: listOf(named.get('clusters')!),
    users: listOf(named.get('users')!),
    contexts: listOf(named.get('contexts')!),
    ...(currentContext !== undefined ? { 'current-context': currentContext } : {}),
    ...(extensions.size > 0 ? { extensions: listOf(extensions) } : {}),
  };
}
