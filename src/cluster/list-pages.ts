// A collection listed in pages (limit/continue), as client-go's pager does for a reflector's list,
// so that 10,000 objects are not one response held whole: each page is parsed and handed on before
// the next is asked for. A continue token that expired (410) starts the list over from its first
// page (client-go falls back to a full list). Items of a list carry no apiVersion and kind: they
// get the list's.
import type { ApiClient } from './api-request.ts';
import { withQuery } from './api-json.ts';
import { ApiError } from './errors.ts';
import { isObject } from '../json/object.ts';

/** client-go's reflector lists 500 objects a page. */
export const LIST_PAGE_SIZE = 500;
/** One page of 500 of the largest objects followed (a JobSet with full templates is tens of KB). */
export const MAX_LIST_PAGE_BYTES = 256 * 1024 * 1024;
const ERROR_BODY_CHARS = 64 * 1024;

export interface ListOptions {
  labelSelector?: string;
  fieldSelector?: string;
  pageSize?: number;
  maxPageBytes?: number;
  signal?: AbortSignal;
  timeoutMs?: number;
}

export interface Listed {
  /** The list's resourceVersion: a watch from it misses nothing. */
  resourceVersion: string;
  items: unknown[];
}

/** Every item of the collection at one resourceVersion. Throws an ApiError on a non-2xx answer. */
export async function listAll(client: ApiClient, path: string, options: ListOptions = {}): Promise<Listed> {
  for (let restarts = 0; ; restarts++) {
    try {
      return await listPages(client, path, options);
    } catch (err) {
      // A token outlived its compaction window: start over (a second expiry in a row is an error).
      if (!(err instanceof ExpiredContinue) || restarts > 0) throw err instanceof ExpiredContinue ? err.cause : err;
    }
  }
}

class ExpiredContinue extends Error {}

async function listPages(client: ApiClient, path: string, options: ListOptions): Promise<Listed> {
  const items: unknown[] = [];
  let token: string | undefined;
  for (;;) {
    const page = await onePage(client, path, options, token);
    items.push(...page.items);
    if (!page.continue) return { resourceVersion: page.resourceVersion, items };
    token = page.continue;
  }
}

interface Page {
  resourceVersion: string;
  continue?: string;
  items: unknown[];
}

async function onePage(
  client: ApiClient,
  path: string,
  options: ListOptions,
  token: string | undefined,
): Promise<Page> {
  const url = withQuery(path, {
    labelSelector: options.labelSelector,
    fieldSelector: options.fieldSelector,
    limit: String(options.pageSize ?? LIST_PAGE_SIZE),
    continue: token,
  });
  const signal = options.signal
    ? AbortSignal.any([options.signal, AbortSignal.timeout(options.timeoutMs ?? 60_000)])
    : AbortSignal.timeout(options.timeoutMs ?? 60_000);
  const res = await client.request(url, { signal, maxBytes: options.maxPageBytes ?? MAX_LIST_PAGE_BYTES });
  const text = res.body.toString('utf8');
  if (res.status < 200 || res.status > 299) {
    const err = new ApiError(res.status, text.slice(0, ERROR_BODY_CHARS), `list ${path}`);
    if (res.status === 410 && token !== undefined) throw new ExpiredContinue('continue token expired', { cause: err });
    throw err;
  }
  return pageOf(text, path, res.body.length);
}

/** A list's page as parsed: its items with the list's apiVersion and kind, its resourceVersion and token. */
function pageOf(text: string, path: string, bytes: number): Page {
  let list: unknown;
  try {
    list = JSON.parse(text);
  } catch {
    throw new Error(`list ${path}: the API server's answer is not JSON (${bytes} bytes)`);
  }
  if (!isObject(list) || !Array.isArray(list.items)) throw new Error(`list ${path}: the answer is not a list`);
  const meta = isObject(list.metadata) ? list.metadata : {};
  const apiVersion = typeof list.apiVersion === 'string' ? list.apiVersion : undefined;
  const kind = typeof list.kind === 'string' ? list.kind.replace(/List$/, '') : undefined;
  const items = list.items.map((item: unknown) =>
    isObject(item) && (item.apiVersion === undefined || item.kind === undefined) ? { apiVersion, kind, ...item } : item,
  );
  return {
    resourceVersion: typeof meta.resourceVersion === 'string' ? meta.resourceVersion : '',
    ...(typeof meta.continue === 'string' && meta.continue !== '' ? { continue: meta.continue } : {}),
    items,
  };
}
