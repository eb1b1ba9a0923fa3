// A watch on the API server (GET ...?watch=true): newline-delimited JSON events, each handed on
// as it arrives. One watch ends when the server ends it (its timeoutSeconds), with an ERROR event
// (410 Gone: the resourceVersion is too old, and the like), a non-200 answer, a line over the
// limit or a broken connection; followWatch starts it again with backoff, as client-go's
// reflector does. A line that is not a JSON event is reported and skipped.
import type { ApiClient } from './api-request.ts';
import { ApiError, describeError, describeStatus, statusMessage } from './errors.ts';
import { lineSplitter } from './watch-lines.ts';

export interface WatchEvent {
  type: string;
  object: unknown;
}

export interface WatchHandlers {
  onEvent(event: WatchEvent): void;
  /** A line that is not a watch event (skipped). */
  onMalformed(reason: string): void;
  /** The server took the watch (200): its events follow. */
  onOpen?(): void;
}

/**
 * An event larger than this ends the watch (a CRD, the largest object followed, is ~0.5 MB of JSON;
 * etcd caps objects at 1.5 MiB).
 */
export const MAX_WATCH_LINE_BYTES = 8 * 1024 * 1024;
/** How much of a non-200 answer is read for its message. */
const MAX_ERROR_BODY_BYTES = 64 * 1024;

export interface WatchOptions {
  signal: AbortSignal;
  maxLineBytes?: number;
  /**
   * The server ends the watch after this (client-go's reflector: 5-10 min, random); the client
   * gives up a minute later.
   */
  timeoutSeconds?: number;
}

/** Runs one watch until it ends: undefined when the server ended it (or `signal` did), else the reason. */
export async function watchOnce(
  client: ApiClient,
  path: string,
  query: Record<string, string>,
  handlers: WatchHandlers,
  options: WatchOptions,
): Promise<string | undefined> {
  return (await watchUntilEnd(client, path, query, handlers, options)).reason;
}

/** How a watch ended: no reason when the server (or `signal`) ended it; `code`, an HTTP status said (410: too old). */
export interface WatchEnd {
  reason?: string;
  code?: number;
}

/** watchOnce, with the HTTP status of a refusal or ERROR event (an informer relists on 410 Gone). */
export async function watchUntilEnd(
  client: ApiClient,
  path: string,
  query: Record<string, string>,
  handlers: WatchHandlers,
  options: WatchOptions,
): Promise<WatchEnd> {
  const timeoutSeconds = options.timeoutSeconds ?? 300 + Math.floor(Math.random() * 300);
  const params = new URLSearchParams({ ...query, watch: 'true', timeoutSeconds: String(timeoutSeconds) });
  const local = new AbortController();
  const onAbort = () => local.abort();
  options.signal.addEventListener('abort', onAbort, { once: true });
  const deadline = setTimeout(() => local.abort(), (timeoutSeconds + 60) * 1000).unref();
  try {
    if (options.signal.aborted) return {};
    const res = await client.stream(`${path}?${params}`, local.signal);
    if (res.statusCode !== 200) {
      const body = await readSome(res, MAX_ERROR_BODY_BYTES);
      return { reason: describeError(new ApiError(res.statusCode ?? 0, body, `watch ${path}`)), code: res.statusCode };
    }
    handlers.onOpen?.();
    return await new Promise<WatchEnd>((resolve) => {
      let ended: string | undefined;
      let code: number | undefined;
      const end = (reason: string, status?: number) => {
        if (ended === undefined) code = status;
        ended ??= reason;
        res.destroy();
      };
      const lines = lineSplitter(options.maxLineBytes ?? MAX_WATCH_LINE_BYTES, (line) => {
        if (ended !== undefined) return;
        let event: unknown;
        try {
          event = JSON.parse(line);
        } catch {
          return handlers.onMalformed(`a line that is not JSON (${line.length} characters) skipped`);
        }
        const type = (event as { type?: unknown } | null)?.type;
        if (typeof type !== 'string') return handlers.onMalformed('a line that is not a watch event (no type) skipped');
        const object = (event as { object?: unknown }).object;
        if (type === 'ERROR') return end(`ERROR event: ${describeWatchError(object)}`, statusOf(object));
        handlers.onEvent({ type, object });
      });
      res.on('data', (chunk: Buffer) => {
        if (ended === undefined && !lines.push(chunk))
          end(`an event longer than ${options.maxLineBytes ?? MAX_WATCH_LINE_BYTES} bytes`);
      });
      res.on('error', () => {});
      res.once('close', () => {
        if (ended === undefined && !res.complete && !local.signal.aborted) ended = 'the connection closed mid-stream';
        if (ended === undefined && local.signal.aborted && !options.signal.aborted)
          ended = `no end from the server ${timeoutSeconds + 60} s after it was asked to end at ${timeoutSeconds} s`;
        resolve(ended === undefined ? {} : { reason: ended, ...(code !== undefined ? { code } : {}) });
      });
    });
  } catch (err) {
    return options.signal.aborted ? {} : { reason: describeError(err) };
  } finally {
    clearTimeout(deadline);
    options.signal.removeEventListener('abort', onAbort);
  }
}

/** An ERROR event's object is a Status: its code. */
function statusOf(object: unknown): number | undefined {
  const code = (object as { code?: unknown } | null)?.code;
  return typeof code === 'number' ? code : undefined;
}

/** An ERROR event's object is a Status: its code and message. */
function describeWatchError(object: unknown): string {
  return describeStatus(statusOf(object), statusMessage(object) || 'no message');
}

async function readSome(res: AsyncIterable<Buffer> & { destroy(): void }, max: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of res) {
      chunks.push(chunk);
      size += chunk.length;
      if (size >= max) break;
    }
  } catch {
    // What arrived is the message.
  } finally {
    res.destroy();
  }
  return Buffer.concat(chunks).subarray(0, max).toString('utf8');
}

export interface FollowHandlers extends WatchHandlers {
  /** A watch ended for `reason` (undefined: the server ended it); the next starts in `retryMs`. */
  onEnded(reason: string | undefined, retryMs: number): void;
}

/** A follower's trouble as one-line messages naming what is watched: a skipped line, an end and the retry. */
export function reportingTo(
  what: string,
  onError: (message: string) => void,
): Pick<FollowHandlers, 'onMalformed' | 'onEnded'> {
  return {
    onMalformed: (reason) => onError(`watch on ${what}: ${reason}`),
    onEnded: (reason, retryMs) => {
      if (reason) onError(`watch on ${what} ended: ${reason}; retrying in ${retryMs} ms`);
    },
  };
}

export const FIRST_RETRY_MS = 1000;
export const MAX_RETRY_MS = 60_000;
/** The backoff starts over when this long passed since the last wait began (client-go's reflector: 2 min). */
export const BACKOFF_RESET_MS = 120_000;

export interface FollowOptions extends Omit<WatchOptions, 'signal'> {
  firstRetryMs?: number;
  maxRetryMs?: number;
  backoffResetMs?: number;
  /** Milliseconds, for the backoff reset. */
  now?: () => number;
}

/**
 * Keeps a watch running: restarted after each end, with backoff that starts over only once
 * BACKOFF_RESET_MS passed since the last wait began (the watch lived a while). Not on an event: a
 * watch without resourceVersion begins with an ADDED of the object, so a proxy that cuts every
 * stream at once would restart it (and warn) every second. Returns a stop function.
 */
export function followWatch(
  client: ApiClient,
  path: string,
  query: Record<string, string>,
  handlers: FollowHandlers,
  {
    firstRetryMs = FIRST_RETRY_MS,
    maxRetryMs = MAX_RETRY_MS,
    backoffResetMs = BACKOFF_RESET_MS,
    now = () => performance.now(),
    ...options
  }: FollowOptions = {},
): () => void {
  const stop = new AbortController();
  let retryMs = firstRetryMs;
  let lastWaitAt: number | undefined;
  const run = async () => {
    while (!stop.signal.aborted) {
      const reason = await watchOnce(client, path, query, handlers, { ...options, signal: stop.signal });
      if (stop.signal.aborted) return;
      const at = now();
      if (lastWaitAt !== undefined && at - lastWaitAt >= backoffResetMs) retryMs = firstRetryMs;
      lastWaitAt = at;
      handlers.onEnded(reason, retryMs);
      const delay = retryMs;
      retryMs = Math.min(retryMs * 2, maxRetryMs);
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          stop.signal.removeEventListener('abort', done);
          resolve();
        };
        const timer = setTimeout(done, delay).unref();
        stop.signal.addEventListener('abort', done, { once: true });
      });
    }
  };
  void run();
  return () => stop.abort();
}
