// What a failed API call looks like to its callers, whichever client made it: client-node's
// ApiException and this project's ApiError (api-json.ts) both carry the HTTP status in `code` and
// the response body as text in `body`. No import of a client, so `serve` can use these without
// loading @kubernetes/client-node.
import { isObject } from '../json/object.ts';

/** A non-2xx answer from the API server: its status and (the start of) its body. */
export class ApiError extends Error {
  override name = 'ApiError';
  readonly code: number;
  readonly body: string;
  constructor(code: number, body: string, what: string) {
    super(`${what}: HTTP ${code}`);
    this.code = code;
    this.body = body;
  }
}

/** The HTTP status of a failed API call (client-node's ApiException or ApiError), if the error is one. */
export function statusCode(err: unknown): number | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'number' ? code : undefined;
}

/** The call's result, or undefined when the object is not there (HTTP 404). */
export async function orUndefinedIfNotFound<T>(call: Promise<T>): Promise<T | undefined> {
  try {
    return await call;
  } catch (err) {
    if (statusCode(err) === 404) return undefined;
    throw err;
  }
}

/**
 * The `message` of a Status object, the API server's reason for a refusal, from a body as text
 * or already parsed (client-node's ApiException may carry either): '' when it is JSON without a
 * string message, undefined when it is not JSON.
 */
export function statusMessage(body: unknown): string | undefined {
  let parsed = body;
  if (typeof body === 'string') {
    try {
      parsed = JSON.parse(body);
    } catch {
      return undefined;
    }
  } else if (!isObject(body)) return undefined;
  const message = (parsed as { message?: unknown } | null)?.message;
  return typeof message === 'string' ? message : '';
}

/**
 * The whole message of a refusal (a webhook's may list several causes) on one line, at most 1500
 * characters: the Status message of the error's body, else the error's own message.
 */
export function refusalMessage(err: unknown): string {
  const message =
    statusMessage((err as { body?: unknown } | null)?.body) || (err instanceof Error ? err.message : String(err));
  return message.replace(/\s+/g, ' ').slice(0, 1500);
}

/** `HTTP 410: <message>`, one line, at most 300 characters of the message. */
export function describeStatus(code: number | undefined, message: string): string {
  return (code ? `HTTP ${code}: ` : '') + message.split('\n')[0].slice(0, 300);
}

/** A short, single-line reason for a failed API call, without response bodies that may be large. */
export function describeError(err: unknown): string {
  const body = (err as { body?: unknown } | null)?.body;
  const reason = statusMessage(body);
  return describeStatus(statusCode(err), reason || (err instanceof Error ? err.message : String(err)));
}
