// An API server connection: where it is, and the TLS material and headers of the next request.
// From a KubeAccess (kube-access.ts), files are re-read at most once a minute, as client-go's
// cached token file source does, so the in-cluster token (rotated by the kubelet) and rotated
// certificates are picked up; a re-read that fails keeps the last good value.
import { readFile } from 'node:fs/promises';
import type { KubeAccess, Source } from './kube-access.ts';

export interface TlsMaterial {
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  rejectUnauthorized?: boolean;
  servername?: string;
}

export interface RequestMaterial {
  tls: TlsMaterial;
  /** Lower-case header names: authorization and the like. */
  headers: Record<string, string>;
}

export interface ApiConnection {
  /** The API server's URL; a path prefix is kept. */
  readonly server: URL;
  readonly proxyUrl?: URL;
  /** What the next request carries (credentials that rotate are current). */
  material(): Promise<RequestMaterial>;
}

/** client-go re-reads a token file at most once a minute; client-node's FileAuth too. */
export const REREAD_MS = 60_000;

/** A file's bytes, read again when older than REREAD_MS; the last good bytes when a re-read fails. */
function cachedFile(file: string, now: () => number): () => Promise<Buffer> {
  let last: { bytes: Buffer; at: number } | undefined;
  return async () => {
    if (last && now() - last.at < REREAD_MS) return last.bytes;
    try {
      last = { bytes: await readFile(file), at: now() };
    } catch (err) {
      if (!last) throw err;
      last.at = now();
    }
    return last.bytes;
  };
}

function reader(source: Source | undefined, now: () => number): (() => Promise<Buffer | undefined>) | undefined {
  if (!source) return undefined;
  if ('data' in source) return async () => source.data;
  return cachedFile(source.file, now);
}

export function directConnection(access: KubeAccess, now: () => number = Date.now): ApiConnection {
  const server = new URL(access.server);
  // client-go sends credentials only over TLS (rest.IsConfigTransportTLS).
  const secure = server.protocol === 'https:';
  const ca = reader(access.ca, now);
  const cert = reader(access.cert, now);
  const key = reader(access.key, now);
  const tokenFile = access.tokenFile ? cachedFile(access.tokenFile, now) : undefined;
  const basic = access.basic ? `Basic ${Buffer.from(`${access.basic.username}:${access.basic.password}`).toString('base64')}` : undefined;
  return {
    server,
    ...(access.proxyUrl ? { proxyUrl: new URL(access.proxyUrl) } : {}),
    async material() {
      const headers: Record<string, string> = {};
      const tls: TlsMaterial = {};
      if (!secure) return { tls, headers };
      if (access.insecureSkipTlsVerify) tls.rejectUnauthorized = false;
      if (access.tlsServerName) tls.servername = access.tlsServerName;
      if (ca) tls.ca = await ca();
      if (cert && key) [tls.cert, tls.key] = await Promise.all([cert(), key()]);
      const token = tokenFile ? (await tokenFile()).toString('utf8').trim() : access.token;
      if (token) headers.authorization = `Bearer ${token}`;
      else if (basic) headers.authorization = basic;
      return { tls, headers };
    },
  };
}
