// What `serve` needs to reach the API server, read from a kubeconfig file or the in-cluster
// service account without @kubernetes/client-node (~0.9 s and ~80 MiB at import): the server,
// its CA, the client certificate, a bearer token (or the file it rotates in), basic auth, the
// TLS flags, a proxy and impersonation. A user with an exec plugin or an auth-provider is handed
// to client-node instead ('client-node').
//
// Semantics follow client-go's loader (k8s.io/client-go/tools/clientcmd): only the current
// context is looked at and validated; relative paths resolve against the kubeconfig's directory;
// a *-data field and its file together, a client certificate without key, token and basic auth
// together, a CA with insecure-skip-tls-verify, a name twice in a list, are errors; tokenFile
// (client-node also reads token-file) is re-read as it rotates, and wins over token (client-go's
// transport reads the file).
import { open, readFile } from 'node:fs/promises';
import { isIPv6 } from 'node:net';
import path from 'node:path';
import { isObject } from '../json/object.ts';
import { impersonationOf, type Impersonation } from './impersonation.ts';
import { withLocalPathsResolved } from './kubeconfig-merge.ts';
import { parseKubeconfigYaml } from './kubeconfig-yaml.ts';
import { proxyCredentialsProblem } from './proxy-credentials.ts';

/**
 * How a command reaches the API server: not at all, through an explicit kubeconfig file, or as the
 * pod's service account.
 */
export type ClusterAccess =
  | { mode: 'none' }
  /** `context`: the kubeconfig context to use instead of its current-context (kubectl's --context). */
  | { mode: 'kubeconfig'; path: string; context?: string }
  /**
   * kubectl's precedence list (--kubeconfig's one file, else the files KUBECONFIG lists, else
   * ~/.kube/config), merged as client-go merges it (merged-kubeconfig.ts): `kubectl trainjob`'s,
   * the other commands take one explicit file ('kubeconfig').
   */
  | { mode: 'merged-kubeconfig'; files: string[]; context?: string }
  /**
   * Detected from KUBERNETES_SERVICE_HOST/PORT, which the kubelet sets in every pod; the commands'
   * configs keep them here.
   */
  | { mode: 'in-cluster'; host?: string; port?: string };

/** Bytes given inline (base64 in the kubeconfig) or a file, read again as it rotates. */
export type Source = { data: Buffer } | { file: string };

export interface KubeAccess {
  /** The API server's URL without a trailing slash; a path prefix (a proxying front end) is kept. */
  server: string;
  proxyUrl?: string;
  ca?: Source;
  cert?: Source;
  key?: Source;
  token?: string;
  tokenFile?: string;
  basic?: { username: string; password: string };
  insecureSkipTlsVerify: boolean;
  tlsServerName?: string;
  impersonate?: Impersonation;
}

/** Impersonation is sent by our request layer on both paths (client-node drops groups, uid and extra). */
export type LoadedAccess =
  { kind: 'direct'; access: KubeAccess } | { kind: 'client-node'; why: string; impersonate?: Impersonation };

/** A kubeconfig is a few KB (a few hundred clusters with inline certificates stay under this). */
export const MAX_KUBECONFIG_BYTES = 4 * 1024 * 1024;
/** The kubelet's mount of the pod's service account. */
export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/** client-go's http, https and socks5, and the SOCKS schemes client-node also spoke (socks-proxy-agent). */
export const PROXY_SCHEMES = ['http:', 'https:', 'socks5:', 'socks5h:', 'socks4:', 'socks4a:'];
/** User fields this reader does not implement: such a user goes to client-node. */
const CLIENT_NODE_USER_FIELDS = ['exec', 'auth-provider'];

type Obj = Record<string, unknown>;

/** The entry `name` of a kubeconfig list (clusters, users, contexts), its inner object, or undefined. */
function entry(doc: Obj, list: string, inner: string, name: string): Obj | undefined {
  const items = doc[list];
  if (items === undefined || items === null) return undefined;
  if (!Array.isArray(items)) throw new Error(`${list} must be a list`);
  const found = items.find((e) => isObject(e) && e.name === name);
  if (found === undefined) return undefined;
  const body = (found as Obj)[inner];
  if (body === undefined || body === null) return {};
  if (!isObject(body)) throw new Error(`${list} entry "${name}": ${inner} must be a mapping`);
  return body;
}

function stringField(o: Obj, field: string, where: string): string | undefined {
  const v = o[field];
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v !== 'string') throw new Error(`${where}.${field} must be a string`);
  return v;
}

function boolField(o: Obj, field: string, where: string): boolean {
  const v = o[field];
  if (v === undefined || v === null) return false;
  if (typeof v !== 'boolean') throw new Error(`${where}.${field} must be true or false`);
  return v;
}

function base64Field(o: Obj, field: string, where: string): Buffer | undefined {
  const v = stringField(o, field, where);
  if (v === undefined) return undefined;
  const compact = v.replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(compact) || compact.length % 4 === 1)
    throw new Error(`${where}.${field} is not base64`);
  return Buffer.from(compact, 'base64');
}

/** Inline data or a file (relative to `dir`); both given is an error, as in client-go. */
function sourceOf(o: Obj, fileField: string, dataField: string, where: string, dir: string): Source | undefined {
  const file = stringField(o, fileField, where);
  const data = base64Field(o, dataField, where);
  if (file !== undefined && data !== undefined)
    throw new Error(`${where}: ${dataField} and ${fileField} are both specified`);
  if (data !== undefined) return { data };
  return file === undefined ? undefined : { file: path.resolve(dir, file) };
}

function serverOf(raw: string, where: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error(`${where}.server "${raw.slice(0, 100)}" is not a URL`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new Error(`${where}.server must be an http(s) URL, got "${url.protocol}"`);
  return raw.replace(/\/+$/, '');
}

/** client-go's conversion refuses a name given twice in a list, whichever entry the context uses. */
function refuseDuplicateNames(doc: Obj): void {
  for (const list of ['clusters', 'users', 'contexts']) {
    const items = doc[list];
    if (!Array.isArray(items)) continue;
    const names = new Set<unknown>();
    for (const e of items) {
      if (!isObject(e)) continue;
      if (names.has(e.name)) throw new Error(`duplicate name "${String(e.name).slice(0, 100)}" in list ${list}`);
      names.add(e.name);
    }
  }
}

/**
 * The current context's cluster and user from a parsed kubeconfig (`doc`), files resolved
 * against `dir`. Throws an Error whose message is one line: the reason.
 */
// eslint-disable-next-line complexity -- one case per kubeconfig field, as client-go's loader reads them
export function accessFromKubeconfig(doc: unknown, dir: string, contextName?: string): LoadedAccess {
  // An empty file, a scalar or a list: like a file without current-context, it names no cluster.
  if (!isObject(doc)) throw new Error('no current context with a cluster');
  refuseDuplicateNames(doc);
  if (contextName !== undefined && !entry(doc, 'contexts', 'context', contextName))
    throw new Error(`context "${contextName}" does not exist`);
  const current = contextName ?? doc['current-context'];
  if (current !== undefined && current !== null && typeof current !== 'string')
    throw new Error('current-context must be a string');
  const context = current ? entry(doc, 'contexts', 'context', current) : undefined;
  const clusterName = context?.cluster;
  if (clusterName !== undefined && typeof clusterName !== 'string')
    throw new Error(`context "${current}": cluster must be a string`);
  const cluster = clusterName ? entry(doc, 'clusters', 'cluster', clusterName) : undefined;
  if (!cluster) throw new Error('no current context with a cluster');
  const cw = `cluster "${clusterName}"`;
  const rawServer = stringField(cluster, 'server', cw);
  if (!rawServer) throw new Error(`no server found for ${cw}`);

  const userName = context?.user;
  if (userName !== undefined && typeof userName !== 'string')
    throw new Error(`context "${current}": user must be a string`);
  const user = userName ? entry(doc, 'users', 'user', userName) : {};
  if (!user) throw new Error(`user "${userName}" of context "${current}" not found`);
  const uw = `user "${userName}"`;

  const proxyUrl = stringField(cluster, 'proxy-url', cw);
  if (proxyUrl !== undefined) {
    let proxy: URL;
    try {
      proxy = new URL(proxyUrl);
    } catch {
      throw new Error(`${cw}: proxy-url "${proxyUrl.slice(0, 100)}" is not a URL`);
    }
    const scheme = proxy.protocol;
    // Go's url.Parse refuses a bad escape; here it would fail every call.
    const problem = proxyCredentialsProblem(proxy);
    if (problem) throw new Error(`${cw}: ${problem}`);
    if (!PROXY_SCHEMES.includes(scheme))
      throw new Error(
        `${cw}: proxy-url scheme "${scheme.slice(0, 20)}" is not supported: ${PROXY_SCHEMES.map((p) => p.slice(0, -1)).join(', ')}`,
      );
  }
  const impersonate = impersonationOf(user, uw);
  const delegated = CLIENT_NODE_USER_FIELDS.find((f) => user[f] !== undefined && user[f] !== null);
  if (delegated) return { kind: 'client-node', why: `${uw} has ${delegated}`, ...(impersonate ? { impersonate } : {}) };

  const access: KubeAccess = {
    server: serverOf(rawServer, cw),
    insecureSkipTlsVerify: boolField(cluster, 'insecure-skip-tls-verify', cw),
  };
  if (proxyUrl) access.proxyUrl = proxyUrl;
  const ca = sourceOf(cluster, 'certificate-authority', 'certificate-authority-data', cw, dir);
  if (ca && access.insecureSkipTlsVerify)
    throw new Error(`${cw}: a certificate authority and insecure-skip-tls-verify together are not allowed`);
  if (ca) access.ca = ca;
  const tlsServerName = stringField(cluster, 'tls-server-name', cw);
  if (tlsServerName) access.tlsServerName = tlsServerName;

  const cert = sourceOf(user, 'client-certificate', 'client-certificate-data', uw, dir);
  const key = sourceOf(user, 'client-key', 'client-key-data', uw, dir);
  if (cert && !key)
    throw new Error(`${uw}: client-key-data or client-key must be specified to use the client certificate`);
  if (key && !cert) throw new Error(`${uw}: client-key without client-certificate`);
  if (cert && key) Object.assign(access, { cert, key });

  const token = stringField(user, 'token', uw);
  const tokenFile = stringField(user, 'tokenFile', uw) ?? stringField(user, 'token-file', uw);
  const username = stringField(user, 'username', uw);
  const password = stringField(user, 'password', uw);
  if ((token || tokenFile) && (username || password))
    throw new Error(`${uw}: more than one authentication method (token and basic auth); only one is allowed`);
  if (tokenFile) access.tokenFile = path.resolve(dir, tokenFile);
  else if (token) access.token = token;
  if (username || password) access.basic = { username: username ?? '', password: password ?? '' };
  if (impersonate) access.impersonate = impersonate;
  return { kind: 'direct', access };
}

/** `host:port` as an authority: an IPv6 literal in brackets (RFC 3986 §3.2.2), as Go writes it. */
export function authority(host: string, port: number | string): string {
  return `${isIPv6(host) ? `[${host}]` : host}:${port}`;
}

/**
 * The in-cluster service account (rest.InClusterConfig): the server from the service host and
 * port the edge read from the environment, the mounted CA and token file (re-read as it rotates).
 * Always HTTPS, whatever the port, as client-go (client-node used plain HTTP on 80, 8080 and 8001,
 * where no token may go).
 */
export function inClusterAccess(host: string, port: string, dir = SERVICE_ACCOUNT_DIR): KubeAccess {
  return {
    server: `https://${authority(host, port)}`,
    ca: { file: path.join(dir, 'ca.crt') },
    tokenFile: path.join(dir, 'token'),
    insecureSkipTlsVerify: false,
  };
}

/** Every file the access names: read once at start, so a missing one is an error then, not at the first call. */
export function filesOf(access: KubeAccess): string[] {
  const files: string[] = [];
  for (const s of [access.ca, access.cert, access.key]) if (s && 'file' in s) files.push(s.file);
  if (access.tokenFile) files.push(access.tokenFile);
  return files;
}

/**
 * An explicit kubeconfig file, read once: its current context (or `context`) as connection
 * material, and the document with its relative paths resolved against the file's directory (what
 * client-node is given for an exec or auth-provider user: its loadFromFile would run a relative
 * exec command from the process's directory). Errors are one line, `--kubeconfig PATH: reason`.
 */
export async function readKubeconfigFile(
  file: string,
  context?: string,
): Promise<{ loaded: LoadedAccess; doc: unknown }> {
  try {
    const text = await readBounded(file, MAX_KUBECONFIG_BYTES);
    const doc = withLocalPathsResolved(await parseKubeconfigYaml(text), file);
    const loaded = accessFromKubeconfig(doc, path.dirname(path.resolve(file)), context);
    if (loaded.kind === 'direct') for (const f of filesOf(loaded.access)) await readFile(f);
    return { loaded, doc };
  } catch (err) {
    throw new Error(`--kubeconfig ${file}: ${(err as Error).message.split('\n')[0]}`, { cause: err });
  }
}

/** readKubeconfigFile's connection material only. */
export async function loadKubeconfigFile(file: string, context?: string): Promise<LoadedAccess> {
  return (await readKubeconfigFile(file, context)).loaded;
}

/** The file's text, read no further than `max` bytes (a FIFO or a device has no size to check first). */
export async function readBounded(file: string, max: number): Promise<string> {
  const handle = await open(file, 'r');
  try {
    const buf = Buffer.alloc(max + 1);
    let size = 0;
    for (let n = -1; n !== 0 && size <= max; size += n) n = (await handle.read(buf, size, max + 1 - size)).bytesRead;
    if (size > max) throw new Error(`the file is more than the ${max} bytes a kubeconfig may have`);
    return buf.toString('utf8', 0, size);
  } finally {
    await handle.close();
  }
}
