// Requests to the API server over a bounded keep-alive pool: GET/POST/PUT with a byte cap on the
// answer, and long-lived GETs (watches) on their own connections. Used by the Jobs read behind the
// numNodes warning, which is on the admission path (a client-node call there cost ~6.4 ms against
// ~1.8 ms for a plain keep-alive GET, bench/history/2026-12-01-issue-10.md), by the CRD follower and the certificate
// store. Credentials and TLS come from the connection on every request (a token file that rotates,
// a rotated certificate); a change of TLS material builds a new pool. A kubeconfig's proxy-url is
// spoken here too, so the byte cap holds through a proxy.
import type * as Http from 'node:http';
import https from 'node:https';
import type { ApiConnection, TlsMaterial } from './connection.ts';
import { proxyAuthorization } from './proxy-credentials.ts';
import { Slots } from './slots.ts';

// node:http as CommonJS exports, not an ESM import: an import builds the module's namespace, which
// reads its lazy WebSocket, CloseEvent and MessageEvent exports, and those load Node's bundled
// undici (5 MiB of RSS at the reconcile command's import) that nothing here uses (bench/PROFILE.md, "RSS").
const http = process.getBuiltinModule('node:http');

/** Connections kept to the API server, in use and idle: the requests in flight beyond it queue. */
export const MAX_API_SOCKETS = 8;
/** An idle connection is closed after this (client-go's idle timeout is 90 s). */
const IDLE_SOCKET_MS = 30_000;

export interface ApiResponse {
  status: number;
  body: Buffer;
  /** The response's headers (the API server's `warning` headers: kubectl trainjob shows them). */
  headers?: Http.IncomingHttpHeaders;
}

export type ApiMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface ApiRequestOptions {
  method?: ApiMethod;
  /** Sent as JSON. */
  body?: unknown;
  /** The body's content type (default application/json; a PATCH names its patch type here). */
  contentType?: string;
  /** Ends the exchange: the request is destroyed and the call fails. */
  signal: AbortSignal;
  /** A larger response body is abandoned (the connection destroyed) and the call fails. */
  maxBytes: number;
}

/** The exchange itself failed (no complete answer): too large, cut off, refused. */
export class ApiTransportError extends Error {}

export interface ApiClient {
  readonly server: URL;
  request(path: string, options: ApiRequestOptions): Promise<ApiResponse>;
  /**
   * A long-lived GET (a watch): the response once its headers arrived, its body streaming until
   * the server ends it or `signal` aborts. Watches have their own connections, so they never hold
   * the sockets the admission path's reads need.
   */
  stream(path: string, signal: AbortSignal): Promise<Http.IncomingMessage>;
}

interface Pool {
  tls: TlsMaterial;
  /** Bounded, kept alive: the requests. */
  agent: Http.Agent;
  /** One connection per watch. */
  streams: Http.Agent;
  inFlight: number;
  retired: boolean;
}

const sameBuffer = (a: Buffer | undefined, b: Buffer | undefined) =>
  a === undefined || b === undefined ? a === b : a.equals(b);
const sameTls = (a: TlsMaterial, b: TlsMaterial) =>
  a.rejectUnauthorized === b.rejectUnauthorized &&
  a.servername === b.servername &&
  sameBuffer(a.ca, b.ca) &&
  sameBuffer(a.cert, b.cert) &&
  sameBuffer(a.key, b.key);

type ProxyAgentFactory = typeof import('./proxy-agents.ts').proxyAgent;

/** socks5, socks5h, socks4, socks4a: the SOCKS agent carries http:// requests too. */
const isSocks = (proxy: URL) => proxy.protocol.startsWith('socks');

async function agentFor(
  server: URL,
  proxy: URL | undefined,
  tls: TlsMaterial,
  options: Http.AgentOptions,
): Promise<Http.Agent> {
  const secure = server.protocol === 'https:';
  if (proxy && (secure || isSocks(proxy))) {
    const proxyAgent: ProxyAgentFactory = (await import('./proxy-agents.ts')).proxyAgent;
    return proxyAgent(proxy, { ...options, ...(secure ? tls : {}) });
  }
  // An http:// server behind an HTTP(S) proxy: the connection is to the proxy.
  if (proxy) return proxy.protocol === 'https:' ? new https.Agent(options) : new http.Agent(options);
  return secure ? new https.Agent({ ...options, ...tls }) : new http.Agent(options);
}

interface Target {
  url: URL;
  path?: string;
  headers: Record<string, string>;
}

/**
 * Where a request for `url` goes, decided once per client: to the server (directly or through a
 * tunnel), or, for an http:// server behind an HTTP(S) proxy, to the proxy in absolute form.
 */
function router(server: URL, proxy: URL | undefined): (url: URL) => Target {
  if (!proxy || server.protocol === 'https:' || isSocks(proxy)) return (url) => ({ url, headers: {} });
  const proxyOrigin = new URL(proxy.origin);
  const authorization = proxyAuthorization(proxy);
  const headers: Record<string, string> = {
    host: server.host,
    ...(authorization ? { 'proxy-authorization': authorization } : {}),
  };
  return (url) => ({ url: proxyOrigin, path: url.href, headers });
}

/**
 * `headers` go with every request, over TLS or not (impersonation: client-go sets it outside the
 * credentials, which go only over TLS).
 */
// eslint-disable-next-line max-lines-per-function -- request and stream share the pool, its retirement and the slots
export function apiClient(
  connection: ApiConnection,
  options: { headers?: Record<string, string | string[]> } = {},
): ApiClient {
  const { server, proxyUrl } = connection;
  const target = router(server, proxyUrl);
  let pool: Pool | undefined;
  // The requests in flight, whatever the agent: a proxy tunnel is counted by its agent only once up.
  const slots = new Slots(MAX_API_SOCKETS);

  const poolFor = async (tls: TlsMaterial): Promise<Pool> => {
    if (pool && sameTls(pool.tls, tls)) return pool;
    const [agent, streams] = await Promise.all([
      agentFor(server, proxyUrl, tls, {
        keepAlive: true,
        timeout: IDLE_SOCKET_MS,
        scheduling: 'lifo',
        maxSockets: MAX_API_SOCKETS,
        maxFreeSockets: MAX_API_SOCKETS,
      }),
      // No idle timeout (a quiet watch is not idle) and no connection kept after a watch ends:
      // not keepAlive (maxFreeSockets 0 is read as the default, 256). TCP probes: stream() below.
      agentFor(server, proxyUrl, tls, { keepAlive: false }),
    ]);
    // Another request may have built one meanwhile for the same material.
    if (pool && sameTls(pool.tls, tls)) {
      agent.destroy();
      streams.destroy();
      return pool;
    }
    if (pool) retire(pool);
    pool = { tls, agent, streams, inFlight: 0, retired: false };
    return pool;
  };
  // A replaced pool closes once the requests it carries are done.
  const retire = (p: Pool) => {
    p.retired = true;
    if (p.inFlight === 0) destroy(p);
  };
  const destroy = (p: Pool) => {
    p.agent.destroy();
    p.streams.destroy();
  };
  const release = (p: Pool) => {
    p.inFlight--;
    if (p.retired && p.inFlight === 0) destroy(p);
  };

  const prepare = async (path: string, signal: AbortSignal) => {
    const { tls, headers: credentials } = await connection.material();
    signal.throwIfAborted();
    const url = new URL(server.pathname.replace(/\/$/, '') + path, server);
    const to = target(url);
    const headers: Record<string, string | string[]> = {
      accept: 'application/json',
      'user-agent': 'trainjob-webhook',
      ...credentials,
      ...options.headers,
      ...to.headers,
    };
    return { to, headers, pool: await poolFor(tls) };
  };

  const requestInSlot = async (
    path: string,
    { method = 'GET', body, contentType = 'application/json', signal, maxBytes }: ApiRequestOptions,
  ): Promise<ApiResponse> => {
    const { to, headers, pool: p } = await prepare(path, signal);
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    if (payload) Object.assign(headers, { 'content-type': contentType, 'content-length': String(payload.length) });
    p.inFlight++;
    const once = () => exchange({ ...to, method, agent: p.agent, headers, payload, signal, maxBytes });
    try {
      try {
        return await once();
      } catch (err) {
        // A kept-alive connection the server closed just as it was reused: Node's advice is to
        // retry once (not a create, which may have happened).
        if (
          (err as { reusedSocket?: boolean }).reusedSocket &&
          (err as NodeJS.ErrnoException).code === 'ECONNRESET' &&
          !signal.aborted &&
          method !== 'POST'
        )
          return await once();
        throw err;
      }
    } finally {
      release(p);
    }
  };

  return {
    server,
    async request(path, options) {
      await slots.acquire(options.signal);
      try {
        return await requestInSlot(path, options);
      } finally {
        slots.release();
      }
    },
    async stream(path, signal) {
      const { to, headers, pool: p } = await prepare(path, signal);
      p.inFlight++;
      try {
        const res = await new Promise<Http.IncomingMessage>((resolve, reject) => {
          const req = send(
            to.url,
            { method: 'GET', agent: p.streams, headers, signal, ...(to.path ? { path: to.path } : {}) },
            resolve,
          );
          // TCP keep-alive probes find a dead peer under a quiet watch (client-go's dialer: 30 s).
          req.on('socket', (socket) => socket.setKeepAlive(true, 30_000));
          req.on('error', reject);
          req.end();
        });
        res.once('close', () => release(p));
        return res;
      } catch (err) {
        release(p);
        throw err;
      }
    },
  };
}

/**
 * The same client, telling `onRequest` of every request and watch as it is sent (method, path
 * with query): the reconciler's request count. A throw there never fails a request.
 */
export function countingRequests(client: ApiClient, onRequest: (method: string, path: string) => void): ApiClient {
  const count = (method: string, path: string) => {
    try {
      onRequest(method, path);
    } catch {
      // counting never fails a request
    }
  };
  return {
    server: client.server,
    request(path, options) {
      count(options.method ?? 'GET', path);
      return client.request(path, options);
    },
    stream(path, signal) {
      count('GET', path);
      return client.stream(path, signal);
    },
  };
}

const send = (url: URL, options: Http.RequestOptions, onResponse: (res: Http.IncomingMessage) => void) =>
  (url.protocol === 'https:' ? https.request : http.request)(url, options, onResponse);

interface Exchange {
  url: URL;
  path?: string;
  method: string;
  agent: Http.Agent;
  headers: Record<string, string | string[]>;
  payload?: Buffer;
  signal: AbortSignal;
  maxBytes: number;
}

function exchange({ url, path, method, agent, headers, payload, signal, maxBytes }: Exchange): Promise<ApiResponse> {
  return new Promise((resolve, reject) => {
    const request = send(url, { method, agent, headers, signal, ...(path ? { path } : {}) }, (res) => {
      const declared = Number(res.headers['content-length']);
      if (declared > maxBytes) {
        res.destroy();
        return reject(new ApiTransportError(`the response is ${declared} bytes, more than the ${maxBytes} read`));
      }
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > maxBytes) {
          res.destroy();
          reject(new ApiTransportError(`the response is more than the ${maxBytes} bytes read`));
          return;
        }
        chunks.push(chunk);
      });
      res.once('end', () =>
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks, size), headers: res.headers }),
      );
      res.on('error', reject);
      res.once('close', () => {
        if (!res.complete) reject(new ApiTransportError('the connection closed before the whole response arrived'));
      });
    });
    request.on('error', (err: Error & { reusedSocket?: boolean }) => {
      err.reusedSocket = request.reusedSocket;
      reject(err);
    });
    request.end(payload);
  });
}
