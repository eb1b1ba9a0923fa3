// One object followed by name (src/reconciler/follow-by-name.ts) against a loopback server: the
// list and watch carry fieldSelector metadata.name=NAME; a list that finds none says so; the
// object as listed (after a watch ended with 410 Gone), then as the watch changes it, then its
// deletion; a refused list (403) is reported with its status and retried.
import assert from 'node:assert/strict';
import { createServer, type Server, type ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { apiClient } from '../../src/cluster/api-request.ts';
import { directConnection } from '../../src/cluster/connection.ts';
import { followByName } from '../../src/reconciler/follow-by-name.ts';
import { listen } from '../cluster/support/loopback.ts';

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

  before(async () => {
    server = createServer((req, res) => {
      const u = new URL(req.url ?? '/', 'http://x');
      selectors.push(u.searchParams.get('fieldSelector') ?? '');
      const h = (u.searchParams.get('watch') === 'true' ? watches : lists).shift();
      if (h) h(res);
      else res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
    });
    url = `http://127.0.0.1:${await listen(server)}`;
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });

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
    const seen: string[] = [];
    const follower = followByName(
      apiClient(directConnection({ server: url, insecureSkipTlsVerify: false })),
      { path: '/apis/apps/v1/namespaces/ns/deployments', name: 'mgr' },
      {
        onObject: (o) => seen.push(`object ${(o.metadata as { resourceVersion?: string }).resourceVersion}`),
        onDeleted: () => seen.push('deleted'),
        onNone: () => seen.push('none'),
        onError: (message, status) => seen.push(`error ${status} ${/forbidden/.test(message)}`),
      },
      { initialMs: 5, maxMs: 10 },
    );
    await follower.start();
    for (let i = 0; i < 400 && !seen.includes('deleted'); i++) await new Promise((r) => setTimeout(r, 10));
    await follower.stop();
    assert.deepEqual(seen, ['error 403 true', 'none', 'error 410 false', 'object 2', 'object 3', 'deleted']);
    assert.ok(selectors.every((s) => s === 'metadata.name=mgr'));
  });
});
