// One GET to the API server over a bounded keep-alive pool, with the KubeConfig's credentials and
// TLS. Used by the Jobs read behind the numNodes warning, which is on the admission path: a
// client-node call there cost ~6.4 ms against ~1.8 ms for a plain keep-alive GET (bench/RESULTS.md).
// Credentials come from kc.applyToHTTPSOptions on every request, as client-node's own calls get them, so
// a bearer token that rotates on disk (the in-cluster token file, re-read after 60 s by
// client-node's FileAuth), an exec plugin's token or a rotated client certificate are picked up.
import http from 'node:http';
import https from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';

/** Connections kept to the API server, in use and idle: the reads in flight beyond it queue. */
export const MAX_API_SOCKETS = 8;
/** An idle connection is closed after this (client-go's idle timeout is 90 s). */
const IDLE_SOCKET_MS = 30_000;

export interface ApiResponse {
  status: number;
  body: Buffer;
}

export interface ApiGetOptions {
  /** Ends the exchange: the request is destroyed and the GET fails. */
  signal: AbortSignal;
  /** A larger response body is abandoned (the connection destroyed) and the GET fails. */
  maxBytes: number;
}

export class ApiGetError extends Error {}

/** The TLS material and server a pool was built from; a change (a rotated certificate) builds a new pool. */
interface Material {
  server: string;
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  rejectUnauthorized?: boolean;
  servername?: string;
}

interface Pool {
  material: Material;
  agent: http.Agent;
  inFlight: number;
  retired: boolean;
}

const sameBuffer = (a: Buffer | undefined, b: Buffer | undefined) => (a === undefined || b === undefined ? a === b : a.equals(b));
const sameMaterial = (a: Material, b: Material) =>
  a.server === b.server && a.rejectUnauthorized === b.rejectUnauthorized && a.servername === b.servername && sameBuffer(a.ca, b.ca) && sameBuffer(a.cert, b.cert) && sameBuffer(a.key, b.key);

const asBuffer = (v: unknown): Buffer | undefined => (v === undefined || v === null ? undefined : Buffer.isBuffer(v) ? v : Buffer.from(String(v)));

export type ApiGet = (path: string, options: ApiGetOptions) => Promise<ApiResponse>;

/**
 * A GET function for `kc`'s current cluster. The cluster must be reached directly (no proxy-url):
 * the caller checks `reachableDirectly` first.
 */
export function apiGetter(kc: KubeConfig): ApiGet {
  let pool: Pool | undefined;

  const poolFor = (material: Material): Pool => {
    if (pool && sameMaterial(pool.material, material)) return pool;
    if (pool) retire(pool);
    const common = { keepAlive: true, maxSockets: MAX_API_SOCKETS, maxFreeSockets: MAX_API_SOCKETS, timeout: IDLE_SOCKET_MS, scheduling: 'lifo' as const };
    const agent = material.server.startsWith('https:')
      ? new https.Agent({ ...common, ca: material.ca, cert: material.cert, key: material.key, rejectUnauthorized: material.rejectUnauthorized, servername: material.servername })
      : new http.Agent(common);
    pool = { material, agent, inFlight: 0, retired: false };
    return pool;
  };
  // A replaced pool closes once the requests it carries are done.
  const retire = (p: Pool) => {
    p.retired = true;
    if (p.inFlight === 0) p.agent.destroy();
  };

  return async (path, { signal, maxBytes }) => {
    const cluster = kc.getCurrentCluster();
    if (!cluster) throw new ApiGetError('no current cluster in the kubeconfig');
    // Also builds client-node's own agent (cached per cluster), which is not used here.
    const opts: https.RequestOptions = {};
    await kc.applyToHTTPSOptions(opts);
    signal.throwIfAborted();
    const headers: Record<string, string> = { accept: 'application/json', 'user-agent': 'trainjob-webhook' };
    for (const [k, v] of Object.entries(opts.headers ?? {})) headers[k.toLowerCase()] = String(v);
    if (opts.auth) headers.authorization = `Basic ${Buffer.from(opts.auth).toString('base64')}`;
    const base = new URL(cluster.server);
    const url = new URL(base.pathname.replace(/\/$/, '') + path, base);
    const material: Material = { server: base.origin, ca: asBuffer(opts.ca), cert: asBuffer(opts.cert), key: asBuffer(opts.key), rejectUnauthorized: opts.rejectUnauthorized, servername: opts.servername };
    const p = poolFor(material);
    p.inFlight++;
    try {
      try {
        return await getOnce(url, p.agent, headers, signal, maxBytes);
      } catch (err) {
        // A kept-alive connection the server closed just as it was reused: Node's advice is to retry once.
        if ((err as { reusedSocket?: boolean }).reusedSocket && (err as NodeJS.ErrnoException).code === 'ECONNRESET' && !signal.aborted) return await getOnce(url, p.agent, headers, signal, maxBytes);
        throw err;
      }
    } finally {
      p.inFlight--;
      if (p.retired && p.inFlight === 0) p.agent.destroy();
    }
  };
}

/** False when the kubeconfig routes through a proxy (proxy-url), which apiGetter does not speak. */
export function reachableDirectly(kc: KubeConfig): boolean {
  return !kc.getCurrentCluster()?.proxyUrl;
}

function getOnce(url: URL, agent: http.Agent, headers: Record<string, string>, signal: AbortSignal, maxBytes: number): Promise<ApiResponse> {
  return new Promise((resolve, reject) => {
    const request = (url.protocol === 'https:' ? https.request : http.request)(url, { method: 'GET', agent, headers, signal }, (res) => {
      const declared = Number(res.headers['content-length']);
      if (declared > maxBytes) {
        res.destroy();
        return reject(new ApiGetError(`the response is ${declared} bytes, more than the ${maxBytes} read`));
      }
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > maxBytes) {
          res.destroy();
          reject(new ApiGetError(`the response is more than the ${maxBytes} bytes read`));
          return;
        }
        chunks.push(chunk);
      });
      res.once('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks, size) }));
      res.on('error', reject);
      res.once('close', () => {
        if (!res.complete) reject(new ApiGetError('the connection closed before the whole response arrived'));
      });
    });
    request.on('error', (err: Error & { reusedSocket?: boolean }) => {
      err.reusedSocket = request.reusedSocket;
      reject(err);
    });
    request.end();
  });
}
