// A list+watch cache of one collection, as client-go's reflector and shared informer keep one
// (k8s.io/client-go/tools/cache/reflector.go, shared_informer.go): a paged list (list-pages.ts;
// without a resourceVersion, a consistent read: one at resourceVersion=0 may be served from the
// watch cache whole, the limit ignored, which 10,000 JobSets must not be),
// then a watch from the list's resourceVersion with bookmarks, restarted from the last
// resourceVersion seen when the server ends it; a watch refused with 410 Gone ("too old resource
// version") lists again; failures back off (800 ms doubling to 30 s, jittered, reset once 2 min
// passed since the last wait began). A list replaces the store: objects gone meanwhile are
// deleted. Every object passes `transform` as it enters the store (client-go's SetTransform; one
// that returns undefined keeps the object out) and is frozen: reads hand out the stored object,
// never a copy. A periodic resync hands every stored object to onUpdate again. synced() once the
// first list is in the store.
import type { ApiClient } from './api-request.ts';
import { watchUntilEnd, type WatchEnd, type WatchEvent } from './api-watch.ts';
import { describeError, statusCode } from './errors.ts';
import { listAll } from './list-pages.ts';
import { deepFreeze, keyOfObject } from './stored-object.ts';

export interface InformerHandlers<T> {
  onAdd?(obj: T): void;
  onUpdate?(old: T, obj: T): void;
  onDelete?(obj: T): void;
  /** Every list that succeeded, with what it stored (a follower by name reads "none" from it). */
  onListed?(items: T[]): void;
  /** A list or watch failed, or a line was skipped; `code`: the HTTP status, when there is one. */
  onError?(message: string, code: number | undefined): void;
  /**
   * A watch was taken by the server (200). After a failure that is resumed by a watch (no list,
   * so no event for what did not change), this is when the store is known current again.
   */
  onWatching?(): void;
  /** Every line a running watch delivered, bookmarks included: the watch is alive and current to here. */
  onWatchActivity?(): void;
  /** A watch ended (by the server, a failure, or stop): until the next onWatching nothing is delivered. */
  onWatchEnded?(): void;
}

export interface InformerOptions<T> {
  client: ApiClient;
  /** The collection's path: `/apis/GROUP/VERSION/PLURAL`, or namespaced. */
  path: string;
  labelSelector?: string;
  fieldSelector?: string;
  /** Keeps what is read of an object (undefined: not stored). Must not change its input. */
  transform?: (obj: unknown) => T | undefined;
  /** Stored objects are also found by these values (client-go's indexers): byIndex(value). */
  indexBy?: (obj: T) => string | undefined;
  handlers: InformerHandlers<T>;
  /** Every stored object handed to onUpdate again this often (0: never). */
  resyncMs?: number;
  pageSize?: number;
  backoff?: { initialMs?: number; maxMs?: number; resetMs?: number; jitter?: number };
  /** The server ends each watch after this (default: 5-10 min, random). */
  timeoutSeconds?: number;
  now?: () => number;
}

export interface Informer<T> {
  /**
   * Starts listing and watching; resolves once the first list is stored or has failed (a failed
   * list is retried: see synced()).
   */
  start(): Promise<void>;
  stop(): Promise<void>;
  /** The first list is in the store. */
  synced(): boolean;
  get(namespace: string | undefined, name: string): T | undefined;
  list(): T[];
  byIndex(value: string): T[];
}

/** A watch the server ends sooner than this without an event counts as a failure (client-go: 1 s). */
const SHORT_WATCH_MS = 1000;

/** client-go's reflector: NewExponentialBackoffManager(800ms, 30s, 2min, 2.0, 1.0). */
export const INFORMER_BACKOFF = { initialMs: 800, maxMs: 30_000, resetMs: 120_000, jitter: 1 };

/** The store and its index; the informer's events come from its changes. */
class Store<T> {
  readonly objects = new Map<string, T>();
  readonly #index = new Map<string, Set<string>>();
  readonly #indexOf = new Map<string, string>();
  readonly indexBy?: (obj: T) => string | undefined;
  constructor(indexBy?: (obj: T) => string | undefined) {
    this.indexBy = indexBy;
  }

  set(key: string, obj: T): T | undefined {
    const old = this.objects.get(key);
    this.#unindex(key);
    this.objects.set(key, obj);
    const value = this.indexBy?.(obj);
    if (value !== undefined) {
      this.#indexOf.set(key, value);
      let keys = this.#index.get(value);
      if (!keys) this.#index.set(value, (keys = new Set()));
      keys.add(key);
    }
    return old;
  }

  delete(key: string): T | undefined {
    const old = this.objects.get(key);
    this.#unindex(key);
    this.objects.delete(key);
    return old;
  }

  byIndex(value: string): T[] {
    return [...(this.#index.get(value) ?? [])].map((k) => this.objects.get(k)!);
  }

  #unindex(key: string) {
    const value = this.#indexOf.get(key);
    if (value === undefined) return;
    this.#indexOf.delete(key);
    const keys = this.#index.get(value);
    keys?.delete(key);
    if (keys?.size === 0) this.#index.delete(value);
  }
}

// eslint-disable-next-line max-lines-per-function -- the reflector's loop and the store it fills share their state
export function createInformer<T>(opts: InformerOptions<T>): Informer<T> {
  const { client, path, handlers } = opts;
  const transform = opts.transform ?? ((o: unknown) => o as T);
  const backoff = { ...INFORMER_BACKOFF, ...opts.backoff };
  const now = opts.now ?? (() => performance.now());
  const store = new Store<T>(opts.indexBy);
  const stop = new AbortController();
  let synced = false;
  let running: Promise<void> | undefined;
  let resync: NodeJS.Timeout | undefined;
  let retryMs = backoff.initialMs;
  let lastWaitAt: number | undefined;
  let firstListed: () => void = () => {};
  const firstList = new Promise<void>((resolve) => (firstListed = resolve));

  const report = (message: string, code?: number) => handlers.onError?.(message, code);
  const enter = (raw: unknown): { key: string; obj: T } | undefined => {
    const key = keyOfObject(raw);
    if (key === undefined) return undefined;
    const obj = transform(raw);
    return obj === undefined ? undefined : { key, obj: deepFreeze(obj) };
  };

  const replace = (items: unknown[]) => {
    const seen = new Set<string>();
    const stored: T[] = [];
    const changes: (() => void)[] = [];
    for (const raw of items) {
      const entry = enter(raw);
      if (!entry) continue;
      seen.add(entry.key);
      stored.push(entry.obj);
      const old = store.set(entry.key, entry.obj);
      changes.push(old === undefined ? () => handlers.onAdd?.(entry.obj) : () => handlers.onUpdate?.(old, entry.obj));
    }
    for (const key of [...store.objects.keys()])
      if (!seen.has(key)) {
        const old = store.delete(key)!;
        changes.push(() => handlers.onDelete?.(old));
      }
    synced = true;
    for (const change of changes) change();
    handlers.onListed?.(stored);
  };

  const apply = (event: WatchEvent): string | undefined => {
    const rv = resourceVersionOf(event.object);
    if (event.type === 'BOOKMARK') return rv;
    const key = keyOfObject(event.object);
    if (key === undefined) {
      report(`watch on ${path}: a ${event.type} event without an object's name skipped`);
      return rv;
    }
    if (event.type === 'DELETED') {
      const old = store.delete(key);
      if (old !== undefined) handlers.onDelete?.(old);
      return rv;
    }
    if (event.type !== 'ADDED' && event.type !== 'MODIFIED') {
      report(`watch on ${path}: an event of type ${event.type.slice(0, 40)} skipped`);
      return rv;
    }
    const entry = enter(event.object);
    // An object the transform keeps out (no longer one of ours) leaves the store.
    if (!entry) {
      const old = store.delete(key);
      if (old !== undefined) handlers.onDelete?.(old);
      return rv;
    }
    const old = store.set(key, entry.obj);
    if (old === undefined) handlers.onAdd?.(entry.obj);
    else handlers.onUpdate?.(old, entry.obj);
    return rv;
  };

  const wait = async () => {
    const at = now();
    if (lastWaitAt !== undefined && at - lastWaitAt >= backoff.resetMs) retryMs = backoff.initialMs;
    lastWaitAt = at;
    const delay = retryMs * (1 + Math.random() * backoff.jitter);
    retryMs = Math.min(retryMs * 2, backoff.maxMs);
    await sleep(delay, stop.signal);
  };

  const list = async (): Promise<string | undefined> => {
    try {
      const listed = await listAll(client, path, {
        labelSelector: opts.labelSelector,
        fieldSelector: opts.fieldSelector,
        pageSize: opts.pageSize,
        signal: stop.signal,
      });
      if (stop.signal.aborted) return undefined;
      replace(listed.items);
      return listed.resourceVersion;
    } catch (err) {
      if (!stop.signal.aborted) report(`list ${path} failed: ${describeError(err)}`, statusCode(err));
      return undefined;
    }
  };

  /** Watches from `rv` until the watch must list again (410, or another refusal) or the informer stops. */
  const watchFrom = async (rv: string): Promise<void> => {
    let from = rv;
    while (!stop.signal.aborted) {
      const startedAt = now();
      let events = 0;
      const query: Record<string, string> = { resourceVersion: from, allowWatchBookmarks: 'true' };
      if (opts.labelSelector) query.labelSelector = opts.labelSelector;
      if (opts.fieldSelector) query.fieldSelector = opts.fieldSelector;
      const end: WatchEnd = await watchUntilEnd(
        client,
        path,
        query,
        {
          onEvent: (e) => {
            events++;
            from = apply(e) ?? from;
            handlers.onWatchActivity?.();
          },
          onMalformed: (reason) => report(`watch on ${path}: ${reason}`),
          onOpen: () => handlers.onWatching?.(),
        },
        { signal: stop.signal, ...(opts.timeoutSeconds ? { timeoutSeconds: opts.timeoutSeconds } : {}) },
      );
      handlers.onWatchEnded?.();
      if (stop.signal.aborted) return;
      // Ended by the server: watch on, unless it ended at once with nothing (client-go's "very short
      // watch": a proxy that closes every stream would make this a busy loop).
      if (end.reason === undefined) {
        if (events > 0 || now() - startedAt >= SHORT_WATCH_MS) continue;
        end.reason = 'a very short watch: ended at once without an event';
      }
      report(`watch on ${path} ended: ${end.reason}`, end.code);
      // Gone: the resourceVersion is compacted away; any other answer: list again too (client-go);
      // a broken connection: watch on from where it was.
      if (end.code !== undefined) return;
      await wait();
    }
  };

  const run = async () => {
    while (!stop.signal.aborted) {
      const rv = await list();
      firstListed();
      if (rv === undefined) {
        await wait();
        continue;
      }
      await watchFrom(rv);
      if (!stop.signal.aborted) await wait();
    }
  };

  return {
    start() {
      if (running) return firstList;
      running = run().finally(firstListed);
      if (opts.resyncMs)
        resync = setInterval(() => {
          if (synced) for (const obj of store.objects.values()) handlers.onUpdate?.(obj, obj);
        }, opts.resyncMs).unref();
      return firstList;
    },
    async stop() {
      stop.abort();
      clearInterval(resync);
      await running;
    },
    synced: () => synced,
    get: (namespace, name) => store.objects.get(namespace ? `${namespace}/${name}` : name),
    list: () => [...store.objects.values()],
    byIndex: (value) => store.byIndex(value),
  };
}

function resourceVersionOf(object: unknown): string | undefined {
  const rv = (object as { metadata?: { resourceVersion?: unknown } } | null)?.metadata?.resourceVersion;
  return typeof rv === 'string' && rv !== '' ? rv : undefined;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}
