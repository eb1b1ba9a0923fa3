// JSON reads and writes of API objects, as raw JSON (nothing renamed or dropped, unlike a typed
// client: the CRD's x-kubernetes-validations, a webhook configuration's unknown fields). A non-2xx
// answer is an ApiError (its status in `code`, its body in `body`), as client-node's ApiException
// was, so callers keep statusCode/describeError/orUndefinedIfNotFound.
import type { ApiClient, ApiMethod } from './api-request.ts';
import { ApiError } from './errors.ts';

/** The largest object read or written here is a CRD (~0.5 MB of JSON); etcd caps objects at 1.5 MiB. */
export const MAX_OBJECT_BYTES = 8 * 1024 * 1024;
/** A call that has no answer by then fails (client-node had no limit; a hung call would stall a rotation). */
export const API_CALL_TIMEOUT_MS = 30_000;
/** How much of an error body is kept for its message. */
const ERROR_BODY_CHARS = 64 * 1024;

export interface JsonApi {
  get(path: string): Promise<unknown>;
  post(path: string, body: unknown): Promise<unknown>;
  put(path: string, body: unknown): Promise<unknown>;
  /** A JSON patch (RFC 6902): `ops` applied in order by the API server, all or none. */
  jsonPatch(path: string, ops: unknown[]): Promise<unknown>;
  /** A JSON merge patch (RFC 7386). */
  mergePatch(path: string, body: unknown): Promise<unknown>;
  /** Server-Side Apply of `body` (JSON is YAML) under `fieldManager`; `force` takes conflicting fields. */
  apply(path: string, body: unknown, options: { fieldManager: string; force?: boolean }): Promise<unknown>;
  /** A DELETE with a DeleteOptions body (preconditions, propagationPolicy). */
  delete(path: string, options: DeleteOptions): Promise<unknown>;
}

export interface DeleteOptions {
  propagationPolicy?: 'Foreground' | 'Background' | 'Orphan';
  preconditions?: { uid?: string; resourceVersion?: string };
}

/** `path?query` from a record; undefined values left out. */
export function withQuery(path: string, query: Record<string, string | undefined>): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined) params.set(k, v);
  const q = params.toString();
  return q ? `${path}${path.includes('?') ? '&' : '?'}${q}` : path;
}

export function jsonApi(
  client: ApiClient,
  { timeoutMs = API_CALL_TIMEOUT_MS, maxBytes = MAX_OBJECT_BYTES } = {},
): JsonApi {
  const call = async (method: ApiMethod, path: string, body?: unknown, contentType?: string): Promise<unknown> => {
    const res = await client.request(path, {
      method,
      body,
      ...(contentType ? { contentType } : {}),
      signal: AbortSignal.timeout(timeoutMs),
      maxBytes,
    });
    const text = res.body.toString('utf8');
    if (res.status < 200 || res.status > 299)
      throw new ApiError(res.status, text.slice(0, ERROR_BODY_CHARS), `${method} ${path}`);
    try {
      return JSON.parse(text);
    } catch {
      throw new Error(`${method} ${path}: the API server's answer is not JSON (${res.body.length} bytes)`);
    }
  };
  return {
    get: (path) => call('GET', path),
    post: (path, body) => call('POST', path, body),
    put: (path, body) => call('PUT', path, body),
    jsonPatch: (path, ops) => call('PATCH', path, ops, 'application/json-patch+json'),
    mergePatch: (path, body) => call('PATCH', path, body, 'application/merge-patch+json'),
    apply: (path, body, { fieldManager, force }) =>
      call(
        'PATCH',
        withQuery(path, { fieldManager, force: force ? 'true' : undefined }),
        body,
        'application/apply-patch+yaml',
      ),
    delete: (path, options) => call('DELETE', path, { apiVersion: 'v1', kind: 'DeleteOptions', ...options }),
  };
}
