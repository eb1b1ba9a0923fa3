// An API server connection: where it is, and the TLS material and headers of the next request.
// From a KubeAccess (kube-access.ts), files are re-read at most once a minute, as client-go's
// cached token file source does, so the in-cluster token (rotated by the kubelet) and rotated
// certificates are picked up. A re-read that fails keeps the last good value, as client-go does:
// a token file read empty is refused (transport/token_source.go), and the client certificate and
// key are read as a pair that TLS must accept (transport/cert_rotation.go), so a pair caught
// between the writes of a rotation is never used. The CA (client-go reads it once) must hold whole
// certificates, so a CA file caught half written never becomes the trust.
import { X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createSecureContext } from 'node:tls';
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

/**
 * A value read from files, read again when older than REREAD_MS; the last good value when a re-read
 * fails (or, at start, the error).
 */
function cached<T>(read: () => Promise<T>, now: () => number): () => Promise<T> {
  let last: { value: T; at: number } | undefined;
  return async () => {
    if (last && now() - last.at < REREAD_MS) return last.value;
    try {
      last = { value: await read(), at: now() };
    } catch (err) {
      if (!last) throw err;
      last.at = now();
    }
    return last.value;
  };
}

const bytesOf = (source: Source) => ('data' in source ? Promise.resolve(source.data) : readFile(source.file));

// Go's pem.Decode: spaces and tabs may end the BEGIN line; a torn block before a whole one leaves
// the whole one (the body holds no other BEGIN).
const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[ \t]*\r?\n((?:(?!-----BEGIN )[\s\S])*?)-----END CERTIFICATE-----/g;

/**
 * The certificates a CA bundle holds, as Go's CertPool.AppendCertsFromPEM takes them: the
 * CERTIFICATE blocks without headers that parse, the others skipped; none is an error ("failed
 * to append certificates" in client-go). TLS gets only these (Node would choke on a bad block).
 */
export function trustedCertificates(ca: Buffer): Buffer {
  const good: string[] = [];
  for (const [block, body] of ca.toString('latin1').matchAll(PEM_CERTIFICATE)) {
    if (body.includes(':')) continue; // a block with headers (Proc-Type: ...), which Go skips
    try {
      new X509Certificate(block);
      good.push(block);
    } catch {
      // not a certificate: skipped, as Go does
    }
  }
  if (good.length === 0) throw new Error('the certificate authority holds no PEM certificate');
  return Buffer.from(`${good.join('\n')}\n`, 'latin1');
}

/**
 * The CA, re-read as it rotates. A re-read with a block cut short (a file caught half written)
 * keeps the last good CA: client-go reads it once, so it never trusts a torn one.
 */
function trustIn(source: Source, now: () => number): () => Promise<Buffer> {
  if ('data' in source) {
    let certificates: Buffer | undefined;
    return async () => (certificates ??= trustedCertificates(source.data));
  }
  return cached(async () => {
    const ca = await readFile(source.file);
    const text = ca.toString('latin1');
    if (text.split('-----BEGIN CERTIFICATE-----').length !== text.split('-----END CERTIFICATE-----').length)
      throw new Error(`the certificate authority ${source.file} holds a certificate cut short`);
    return trustedCertificates(ca);
  }, now);
}

/** The client certificate and key, read together; a pair TLS refuses ("key values mismatch") is an error. */
function keyPair(cert: Source, key: Source, now: () => number): () => Promise<{ cert: Buffer; key: Buffer }> {
  return cached(async () => {
    const pair = { cert: await bytesOf(cert), key: await bytesOf(key) };
    createSecureContext(pair);
    return pair;
  }, now);
}

/**
 * The token in a file; read empty (a write caught half-way) is an error, as client-go's "read empty
 * token from file".
 */
function tokenIn(file: string, now: () => number): () => Promise<string> {
  return cached(async () => {
    const token = (await readFile(file)).toString('utf8').trim();
    if (token === '') throw new Error(`read empty token from file ${file}`);
    return token;
  }, now);
}

export function directConnection(access: KubeAccess, now: () => number = Date.now): ApiConnection {
  const server = new URL(access.server);
  // client-go sends credentials only over TLS (rest.IsConfigTransportTLS).
  const secure = server.protocol === 'https:';
  const ca = access.ca ? trustIn(access.ca, now) : undefined;
  const pair = access.cert && access.key ? keyPair(access.cert, access.key, now) : undefined;
  const tokenFile = access.tokenFile ? tokenIn(access.tokenFile, now) : undefined;
  const basic = access.basic
    ? `Basic ${Buffer.from(`${access.basic.username}:${access.basic.password}`).toString('base64')}`
    : undefined;
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
      if (pair) ({ cert: tls.cert, key: tls.key } = await pair());
      const token = tokenFile ? await tokenFile() : access.token;
      if (token) headers.authorization = `Bearer ${token}`;
      else if (basic) headers.authorization = basic;
      return { tls, headers };
    },
  };
}
