// One object followed by name (src/reconciler/follow-by-name.ts) against a loopback server: the
// list and watch carry fieldSelector metadata.name=NAME; a list that finds none says so; the
// object as listed (after a watch ended with 410 Gone), then as the watch changes it, then its
// deletion; a refused list (403) is reported with its status and retried; a watch cut off mid-stream
// (resumed from its resourceVersion, no list) is followed by the object again once the next watch
// is up, so that an observer of failures does not stay at "failing".
import assert from 'node:assert/strict';
import { createServer, type Server, type ServerResponse } from 'node:http';
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import { apiClient } from '../../src/cluster/api-request.ts';
import { directConnection } from '../../src/cluster/connection.ts';
import { followByName } from '../../src/reconciler/follow-by-name.ts';
import { listen } from '../cluster/support/loopback.ts';
import { waitFor } from '../harness/wait.ts';

const deployment = (rv: string, image: string) => ({
  metadata: { name: 'mgr', namespace: 'ns', resourceVersion: rv },
  spec: { template: { spec: { containers: [{ name: 'manager', image }] } } },
});

describe('followByName', () => {
  let server: Server;
  let url = '';
  const lists: ((res: ServerResponse) => void)[] = [];
  const watches: ((res: ServerResponse) => void)[] = [];
  const selectors: string[] = [];
  /** Each test follows a path of its own: a request a stopped follower had already sent cannot
   * take the next test's scripted answers. */
  let run = 0;
  const path = () => `/apis/apps/v1/namespaces/ns${run}/deployments`;
  /** Every follower started, stopped after its test whether it passed or not (one left running
   * keeps the test file's process alive). */
  const started: { stop(): Promise<void> }[] = [];
  const hold = (res: ServerResponse) =>
    res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' }).flushHeaders();

  before(async () => {
    server = createServer((req, res) => {
      const u = new URL(req.url ?? '/', 'http://x');
      // An earlier test's request: held open (never answered) until the server closes.
      if (u.pathname !== path()) return hold(res);
      selectors.push(u.searchParams.get('fieldSelector') ?? '');
      const h = (u.searchParams.get('watch') === 'true' ? watches : lists).shift();
      if (h) h(res);
      // Held open, its headers sent at once (as the API server flushes a watch's).
      else hold(res);
    });
    url = `http://127.0.0.1:${await listen(server)}`;
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });
  beforeEach(() => {
    run += 1;
    lists.length = 0;
    watches.length = 0;
    selectors.length = 0;
  });
  afterEach(async () => {
    await Promise.all(started.splice(0).map((f) => f.stop()));
  });

  /** A follower of ns/mgr whose callbacks are written down; an error as its status and whether it matches `says`. */
  const follow = (says: RegExp) => {
    const seen: string[] = [];
    const follower = followByName(
      apiClient(directConnection({ server: url, insecureSkipTlsVerify: false })),
      { path: path(), name: 'mgr' },
      {
        onObject: (o) => seen.push(`object ${(o.metadata as { resourceVersion?: string }).resourceVersion}`),
        onDeleted: () => seen.push('deleted'),
        onNone: () => seen.push('none'),
        onError: (message, status) => seen.push(`error ${status} ${says.test(message)}`),
      },
      { initialMs: 5, maxMs: 10 },
    );
    started.push(follower);
    return { seen, follower };
  };

  it('none, then the object, its change and its deletion; a 403 reported with its status', async () => {
    const json = (res: ServerResponse, code: number, body: unknown) =>
      res.writeHead(code, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    lists.push(
      (res) => json(res, 403, { code: 403, message: 'deployments.apps "mgr" is forbidden' }),
      (res) => json(res, 200, { metadata: { resourceVersion: '1' }, items: [] }),
    );
    watches.push((res) =>
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(`${JSON.stringify({ type: 'ERROR', object: { kind: 'Status', code: 410, message: 'too old' } })}\n`),
    );
    lists.push((res) => json(res, 200, { metadata: { resourceVersion: '2' }, items: [deployment('2', 'a:1')] }));
    watches.push((res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
      res.write(`${JSON.stringify({ type: 'MODIFIED', object: deployment('3', 'a:2') })}\n`);
      res.write(`${JSON.stringify({ type: 'DELETED', object: deployment('4', 'a:2') })}\n`);
    });
    const { seen, follower } = follow(/forbidden/);
    await follower.start();
    await waitFor('the deletion', () => seen.includes('deleted'), { intervalMs: 10 });
    await follower.stop();
    assert.deepEqual(seen, ['error 403 true', 'none', 'error 410 false', 'object 2', 'object 3', 'deleted']);
    assert.ok(selectors.every((s) => s === 'metadata.name=mgr'));
  });

  it('a watch cut off mid-stream: reported, then the object said again once the next watch is up (no list)', async () => {
    let listed = 0;
    lists.push((res) => {
      listed++;
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ metadata: { resourceVersion: '7' }, items: [deployment('7', 'a:1')] }));
    });
    // The first watch is cut off after its headers (an API server restart, a proxy): no status.
    watches.push((res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
      res.write('{"type":"BOOK');
      setTimeout(() => res.socket?.destroy(), 20);
    });
    const { seen, follower } = follow(/mid-stream/);
    await follower.start();
    await waitFor('three callbacks', () => seen.length >= 3, { intervalMs: 10 });
    await follower.stop();
    assert.deepEqual(seen, ['object 7', 'error undefined true', 'object 7']);
    assert.equal(listed, 1, 'resumed by a watch from its resourceVersion, not a list');
  });
});
