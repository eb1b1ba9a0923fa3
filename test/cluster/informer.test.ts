// The list+watch cache (src/cluster/informer.ts) against a loopback server standing in for the API
// server, behaving as client-go's reflector: a paged list (limit/continue, an expired continue
// token starts over), a watch from the list's resourceVersion with bookmarks, a watch the server
// ends resumed from the last resourceVersion seen (a bookmark's too), 410 Gone relisted (objects
// gone meanwhile deleted), a connection cut mid-stream watched again without a list, a failed list
// retried; the transform keeps objects out (and takes out one that stops qualifying) and stored
// objects are frozen; the resync hands every object to onUpdate again.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import { apiClient, type ApiClient } from '../../src/cluster/api-request.ts';
import { directConnection } from '../../src/cluster/connection.ts';
import { createInformer, type InformerOptions } from '../../src/cluster/informer.ts';
import { listen } from './support/loopback.ts';
import { waitFor } from '../harness/wait.ts';

interface Thing {
  metadata: { name: string; namespace?: string; resourceVersion?: string; labels?: Record<string, string> };
  spec?: Record<string, unknown>;
}

type Handler = (req: IncomingMessage, res: ServerResponse, url: URL) => void;
const thing = (name: string, rv: string, spec: Record<string, unknown> = {}): Thing => ({
  metadata: { name, namespace: 'ns', resourceVersion: rv },
  spec,
});
const line = (type: string, object: unknown) => `${JSON.stringify({ type, object })}\n`;
const streaming = (res: ServerResponse) =>
  res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });

/** The harness's waitFor with its minute's bound (5 s before: a loaded machine outlasts it). */
const until = (cond: () => boolean, what: string) => waitFor(what, cond, { intervalMs: 5 });

describe('informer: list and watch as client-go reflector does', () => {
  let server: Server;
  let client: ApiClient;
  /** What the list answers: every object at this resourceVersion. */
  let objects: Thing[] = [];
  let listRv = '10';
  let listAnswers: Handler[] = [];
  let watches: Handler[] = [];
  const urls: URL[] = [];
  /** Each test's informer lists and watches a path of its own: a request a stopped informer had
   * already sent cannot take the next test's scripted answers. */
  let run = 0;
  const path = () => `/apis/x/v1/things-${run}`;
  /** Every informer started, stopped after its test whether it passed or not (one left running
   * keeps the test file's process alive). */
  const started: { stop(): Promise<void> }[] = [];

  before(async () => {
    server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      // An earlier test's request: held open (never answered) until the server closes.
      if (url.pathname !== path()) return void streaming(res);
      urls.push(url);
      if (url.searchParams.get('watch') === 'true') {
        const h = watches.shift();
        // No scripted watch left: hold it open until the test ends.
        if (h) h(req, res, url);
        else streaming(res);
        return;
      }
      const answer = listAnswers.shift();
      if (answer) return answer(req, res, url);
      const limit = Number(url.searchParams.get('limit') ?? objects.length);
      const from = Number(url.searchParams.get('continue') ?? 0);
      const items = objects.slice(from, from + limit);
      const next = from + limit < objects.length ? String(from + limit) : undefined;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          apiVersion: 'x/v1',
          kind: 'ThingList',
          metadata: { resourceVersion: listRv, ...(next ? { continue: next } : {}) },
          items,
        }),
      );
    });
    client = apiClient(
      directConnection({ server: `http://127.0.0.1:${await listen(server)}`, insecureSkipTlsVerify: false }),
    );
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });
  beforeEach(() => {
    run += 1;
    objects = [];
    listRv = '10';
    listAnswers = [];
    watches = [];
    urls.length = 0;
  });
  afterEach(async () => {
    await Promise.all(started.splice(0).map((i) => i.stop()));
  });

  const start = (over: Partial<InformerOptions<Thing>> = {}) => {
    const seen: string[] = [];
    const errors: { message: string; code?: number }[] = [];
    const informer = createInformer<Thing>({
      client,
      path: path(),
      pageSize: 2,
      backoff: { initialMs: 10, maxMs: 20, jitter: 0 },
      handlers: {
        onAdd: (o) => seen.push(`add ${o.metadata.name}@${o.metadata.resourceVersion}`),
        onUpdate: (_old, o) => seen.push(`update ${o.metadata.name}@${o.metadata.resourceVersion}`),
        onDelete: (o) => seen.push(`delete ${o.metadata.name}`),
        onError: (message, code) => errors.push({ message, code }),
      },
      ...over,
    });
    started.push(informer);
    informer.start();
    return { informer, seen, errors };
  };
  const lists = () => urls.filter((u) => u.searchParams.get('watch') !== 'true');
  const watchUrls = () => urls.filter((u) => u.searchParams.get('watch') === 'true');

  it('lists in pages, is synced after the first list, then watches from its resourceVersion with bookmarks', async () => {
    objects = ['a', 'b', 'c', 'd', 'e'].map((n) => thing(n, '5'));
    watches.push((_req, res) => {
      streaming(res);
      res.write(line('ADDED', thing('f', '11')));
      res.write(line('MODIFIED', thing('a', '12')));
      res.write(line('DELETED', thing('b', '13')));
    });
    const { informer, seen } = start({ labelSelector: 'owner' });
    await until(() => seen.length === 8, 'the events');
    assert.equal(informer.synced(), true);
    assert.deepEqual(
      lists().map((u) => [
        u.searchParams.get('limit'),
        u.searchParams.get('continue'),
        u.searchParams.get('labelSelector'),
      ]),
      [
        ['2', null, 'owner'],
        ['2', '2', 'owner'],
        ['2', '4', 'owner'],
      ],
    );
    const w = watchUrls()[0].searchParams;
    assert.equal(w.get('resourceVersion'), '10');
    assert.equal(w.get('allowWatchBookmarks'), 'true');
    assert.equal(w.get('labelSelector'), 'owner');
    assert.deepEqual(seen, [
      'add a@5',
      'add b@5',
      'add c@5',
      'add d@5',
      'add e@5',
      'add f@11',
      'update a@12',
      'delete b',
    ]);
    assert.deepEqual(
      informer
        .list()
        .map((o) => o.metadata.name)
        .sort(),
      ['a', 'c', 'd', 'e', 'f'],
    );
    assert.equal(informer.get('ns', 'a')?.metadata.resourceVersion, '12');
    // Items of a list carry the list's apiVersion and kind.
    assert.equal((informer.get('ns', 'c') as unknown as { kind: string }).kind, 'Thing');
    await informer.stop();
  });

  it('a watch the server ends is resumed from the last resourceVersion seen, a bookmark too, with no list', async () => {
    objects = [thing('a', '5')];
    watches.push(
      (_req, res) => {
        streaming(res);
        res.write(line('MODIFIED', thing('a', '20')));
        res.end(line('BOOKMARK', { metadata: { resourceVersion: '25' } }));
      },
      (_req, res) => {
        streaming(res);
        res.write(line('MODIFIED', thing('a', '30')));
        // cut mid-stream: watched again from 30
        setTimeout(() => res.destroy(), 20);
      },
    );
    const { informer, seen } = start();
    await until(() => watchUrls().length === 3, 'the third watch');
    assert.deepEqual(
      watchUrls().map((u) => u.searchParams.get('resourceVersion')),
      ['10', '25', '30'],
    );
    assert.equal(lists().length, 1);
    assert.deepEqual(seen, ['add a@5', 'update a@20', 'update a@30']);
    await informer.stop();
  });

  it('410 Gone lists again: what is gone meanwhile is deleted, the rest updated', async () => {
    objects = [thing('a', '5'), thing('b', '5')];
    watches.push((_req, res) => {
      // Meanwhile: a deleted, b changed, c created, and the watch's resourceVersion compacted away.
      objects = [thing('b', '41'), thing('c', '42')];
      listRv = '50';
      streaming(res);
      res.end(
        line('ERROR', { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version: 5 (40)' }),
      );
    });
    const { informer, seen, errors } = start();
    await until(() => watchUrls().length === 2, 'the watch after the relist');
    assert.equal(watchUrls()[1].searchParams.get('resourceVersion'), '50');
    assert.deepEqual(seen, ['add a@5', 'add b@5', 'update b@41', 'add c@42', 'delete a']);
    assert.equal(errors[0].code, 410);
    assert.match(errors[0].message, /too old resource version/);
    await informer.stop();
  });

  it('a failed list is reported with its status and retried; the informer is not synced until one works', async () => {
    objects = [thing('a', '5')];
    listAnswers.push((_req, res) =>
      res.writeHead(500, { 'content-type': 'application/json' }).end('{"message":"boom"}'),
    );
    const { informer, errors } = start();
    await until(() => informer.synced(), 'synced');
    assert.equal(lists().length, 2);
    assert.equal(errors[0].code, 500);
    assert.match(errors[0].message, /boom/);
    await informer.stop();
  });

  it('an expired continue token starts the list over from its first page', async () => {
    objects = ['a', 'b', 'c'].map((n) => thing(n, '5'));
    listAnswers.push(
      (_req, res) =>
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ metadata: { resourceVersion: '9', continue: 'old' }, items: [thing('a', '5')] })),
      (_req, res) => res.writeHead(410, { 'content-type': 'application/json' }).end('{"message":"expired"}'),
    );
    const { informer, seen } = start();
    await until(() => informer.synced(), 'synced');
    assert.deepEqual(
      lists().map((u) => u.searchParams.get('continue')),
      [null, 'old', null, '2'],
    );
    assert.deepEqual(seen, ['add a@5', 'add b@5', 'add c@5']);
    await informer.stop();
  });

  it('the transform keeps objects out, takes out one that stops qualifying, and stored objects are frozen', async () => {
    objects = [thing('a', '5', { ours: true }), thing('b', '5', { ours: false })];
    watches.push((_req, res) => {
      streaming(res);
      res.write(line('MODIFIED', thing('a', '11', { ours: false })));
      res.write(line('MODIFIED', thing('b', '12', { ours: true })));
    });
    const { informer, seen } = start({
      transform: (o) => {
        const t = o as Thing;
        return t.spec?.ours
          ? { metadata: { name: t.metadata.name, namespace: 'ns', resourceVersion: t.metadata.resourceVersion } }
          : undefined;
      },
    });
    await until(() => seen.length === 3, 'the events');
    assert.deepEqual(seen, ['add a@5', 'delete a', 'add b@12']);
    const b = informer.get('ns', 'b')!;
    assert.equal(Object.isFrozen(b) && Object.isFrozen(b.metadata), true);
    assert.equal(b.spec, undefined, 'only what the transform kept');
    assert.throws(() => {
      (b.metadata as { name: string }).name = 'x';
    }, TypeError);
    await informer.stop();
  });

  it('the resync hands every stored object to onUpdate again; the index finds objects by value', async () => {
    objects = [
      { metadata: { name: 'a', namespace: 'ns', resourceVersion: '5', labels: { set: 's1' } } },
      { metadata: { name: 'b', namespace: 'ns', resourceVersion: '5', labels: { set: 's1' } } },
      { metadata: { name: 'c', namespace: 'ns', resourceVersion: '5', labels: { set: 's2' } } },
    ];
    const { informer, seen } = start({ resyncMs: 50, indexBy: (o) => o.metadata.labels?.set });
    await until(() => seen.filter((s) => s.startsWith('update')).length >= 3, 'a resync');
    assert.deepEqual(
      informer
        .byIndex('s1')
        .map((o) => o.metadata.name)
        .sort(),
      ['a', 'b'],
    );
    assert.deepEqual(informer.byIndex('none'), []);
    await informer.stop();
  });
});
