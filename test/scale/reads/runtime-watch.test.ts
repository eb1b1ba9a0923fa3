// The ClusterTrainingRuntimes as serve --watch-runtimes keeps them (src/scale/reads/runtime-watch.ts),
// against a loopback server answering their list and watch: a runtime is found only while the
// cache is current (listed, a watch open, heard from within the trust window: an event or a
// bookmark), a name the cache does not hold is left to a GET (never taken as absent), a watch's
// change is followed, a stalled or ended watch makes every read a GET, a skipped line does not,
// each distinct failure is said once however often it recurs, and nothing is trusted after stop.
import assert from 'node:assert/strict';
import { createServer, type ServerResponse } from 'node:http';
import { describe, it, type TestContext } from 'node:test';
import { apiClient } from '../../../src/cluster/api-request.ts';
import { directConnection } from '../../../src/cluster/connection.ts';
import { runtimeForCache, watchRuntimes } from '../../../src/scale/reads/runtime-watch.ts';
import { listen } from '../../cluster/support/loopback.ts';
import { waitFor } from '../../harness/wait.ts';

const CTR = '/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes';

const runtime = (name: string, numNodes = 1) => ({
  apiVersion: 'trainer.kubeflow.org/v1alpha1',
  kind: 'ClusterTrainingRuntime',
  metadata: { name, resourceVersion: '5', uid: `u-${name}`, managedFields: [{}] },
  spec: { mlPolicy: { numNodes } },
});
const kept = (name: string, numNodes = 1) => ({
  kind: 'found',
  value: { metadata: { name }, spec: { mlPolicy: { numNodes } } },
});

/** A loopback API: the list answers `items`; each watch is held open for the test to write to, or refused. */
async function loopback(t: TestContext, items: unknown[]) {
  const watches: ServerResponse[] = [];
  let refused = 0;
  let refuseWatches = false;
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname !== CTR) return void res.writeHead(404).end();
    if (url.searchParams.get('watch') === 'true') {
      if (refuseWatches) {
        refused++;
        return void res.writeHead(500, { 'content-type': 'application/json' }).end('{"code":500}');
      }
      res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
      res.write('');
      watches.push(res);
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ metadata: { resourceVersion: '10' }, items }));
  });
  const port = await listen(server);
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  return {
    client: apiClient(directConnection({ server: `http://127.0.0.1:${port}`, insecureSkipTlsVerify: false })),
    watches,
    refused: () => refused,
    send: (type: string, object: unknown) => watches.at(-1)!.write(`${JSON.stringify({ type, object })}\n`),
    refuseWatches: (on: boolean) => (refuseWatches = on),
  };
}

/** A clock the test moves; the informer's own waits use real time. */
const clock = () => {
  let t = 0;
  return { now: () => t, advance: (ms: number) => (t += ms) };
};

describe('ClusterTrainingRuntimes from a list+watch cache (serve --watch-runtimes)', () => {
  it('keeps a runtime as its name and spec', () => {
    assert.deepEqual(runtimeForCache(runtime('torch')), {
      metadata: { name: 'torch' },
      spec: { mlPolicy: { numNodes: 1 } },
    });
    assert.equal(runtimeForCache({ metadata: {} }), undefined);
    assert.equal(runtimeForCache('x'), undefined);
  });

  it('finds a listed runtime once its watch is open; a name it does not hold is left to a GET', async (t) => {
    const api = await loopback(t, [runtime('torch')]);
    const watch = watchRuntimes(api.client, () => {});
    t.after(() => watch.stop());
    assert.equal(watch.read('torch'), undefined, 'not listed yet: read');
    await waitFor('the watch open', () => api.watches.length === 1);
    await waitFor('the cache current', () => watch.read('torch') !== undefined);
    assert.deepEqual(watch.read('torch'), kept('torch'));
    assert.equal(watch.read('created-a-moment-ago'), undefined, 'not held: read');
  });

  it("follows the watch's changes, additions and deletions", async (t) => {
    const api = await loopback(t, [runtime('torch')]);
    const watch = watchRuntimes(api.client, () => {});
    t.after(() => watch.stop());
    await waitFor('current', () => watch.read('torch') !== undefined);
    api.send('MODIFIED', runtime('torch', 4));
    api.send('ADDED', runtime('jax'));
    await waitFor('the change and the addition', () => watch.read('jax') !== undefined);
    assert.deepEqual(watch.read('torch'), kept('torch', 4));
    api.send('DELETED', runtime('jax'));
    await waitFor('the deletion', () => watch.read('jax') === undefined);
  });

  it('a watch not heard from within the trust window is not trusted; a bookmark renews it; a skipped line does not end it', async (t) => {
    const api = await loopback(t, [runtime('torch')]);
    const c = clock();
    const said: string[] = [];
    const watch = watchRuntimes(api.client, (m) => said.push(m), { trustMs: 1000, now: c.now });
    t.after(() => watch.stop());
    await waitFor('current', () => watch.read('torch') !== undefined);
    c.advance(1001);
    assert.equal(watch.read('torch'), undefined, 'a stalled stream: read');
    api.send('BOOKMARK', { metadata: { resourceVersion: '11' } });
    await waitFor('the bookmark heard', () => watch.read('torch') !== undefined);
    c.advance(600);
    api.send('MODIFIED', { metadata: {} }); // no name: skipped, and said
    await waitFor('the skipped line said', () => said.length === 1);
    assert.deepEqual(watch.read('torch'), kept('torch'), 'the watch still runs: trusted');
  });

  it('while no watch runs every read is a GET, and a failure that recurs is said once', async (t) => {
    const api = await loopback(t, [runtime('torch')]);
    const said: string[] = [];
    const watch = watchRuntimes(api.client, (m) => said.push(m));
    t.after(() => watch.stop());
    await waitFor('current', () => watch.read('torch') !== undefined);
    api.refuseWatches(true);
    api.watches.at(-1)!.end(); // the server ends the watch; taking it again is refused, retried
    await waitFor('the watch ended', () => watch.read('torch') === undefined);
    await waitFor('three refused watches', () => api.refused() >= 3, { timeoutMs: 60_000 });
    assert.equal(watch.read('torch'), undefined, 'no watch runs: read');
    const refusals = said.filter((m) => /500/.test(m));
    assert.equal(refusals.length, 1, `said once: ${said.join(' | ')}`);
    assert.match(
      refusals[0],
      /^ClusterTrainingRuntimes: .*numNodes changes GET the runtime while the cache is not current$/,
    );
    api.refuseWatches(false);
    await waitFor('current again', () => watch.read('torch') !== undefined, { timeoutMs: 60_000 });
  });

  it('nothing is trusted once stopped', async (t) => {
    const api = await loopback(t, [runtime('torch')]);
    const watch = watchRuntimes(api.client, () => {});
    await waitFor('current', () => watch.read('torch') !== undefined);
    await watch.stop();
    assert.equal(watch.read('torch'), undefined);
  });
});
