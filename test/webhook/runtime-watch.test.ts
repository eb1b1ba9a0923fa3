// The runtimes as serve --watch-runtimes keeps them (src/webhook/runtime-watch.ts), against a
// loopback server answering the list and watch of both kinds: a runtime is found only while its
// cache is listed and its watch runs, a name the cache does not hold is left to a GET (never taken
// as absent), a watch's change is followed, a failed watch makes every read a GET until a watch
// runs again, and each distinct failure is said once.
import assert from 'node:assert/strict';
import { createServer, type ServerResponse } from 'node:http';
import { describe, it, type TestContext } from 'node:test';
import { apiClient } from '../../src/cluster/api-request.ts';
import { directConnection } from '../../src/cluster/connection.ts';
import { runtimeForCache, watchRuntimes } from '../../src/webhook/runtime-watch.ts';
import { listen } from '../cluster/support/loopback.ts';
import { waitFor } from '../harness/wait.ts';

const CTR = '/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes';
const TR = '/apis/trainer.kubeflow.org/v1alpha1/trainingruntimes';

const runtime = (name: string, namespace?: string, numNodes = 1) => ({
  apiVersion: 'trainer.kubeflow.org/v1alpha1',
  kind: namespace ? 'TrainingRuntime' : 'ClusterTrainingRuntime',
  metadata: { name, ...(namespace ? { namespace } : {}), resourceVersion: '5', uid: `u-${name}`, managedFields: [{}] },
  spec: { mlPolicy: { numNodes } },
});

/** A loopback API: lists answer `items[path]`; each path's watches are held open for the test to write to. */
async function loopback(t: TestContext, items: Record<string, unknown[]>) {
  const watches: Record<string, ServerResponse[]> = { [CTR]: [], [TR]: [] };
  let refuseWatches = false;
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.searchParams.get('watch') === 'true') {
      if (refuseWatches) return void res.writeHead(500, { 'content-type': 'application/json' }).end('{}');
      res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
      res.write(''); // headers out: the watch is taken
      watches[url.pathname]?.push(res);
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ metadata: { resourceVersion: '10' }, items: items[url.pathname] ?? [] }));
  });
  const port = await listen(server);
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  const client = apiClient(directConnection({ server: `http://127.0.0.1:${port}`, insecureSkipTlsVerify: false }));
  return {
    client,
    watches,
    send: (path: string, type: string, object: unknown) =>
      watches[path].at(-1)!.write(`${JSON.stringify({ type, object })}\n`),
    refuseWatches: (on: boolean) => (refuseWatches = on),
  };
}

describe('runtimes from list+watch caches (serve --watch-runtimes)', () => {
  it('keeps a runtime as its name, namespace and spec', () => {
    assert.deepEqual(runtimeForCache(runtime('torch', 'team')), {
      metadata: { name: 'torch', namespace: 'team' },
      spec: { mlPolicy: { numNodes: 1 } },
    });
    assert.deepEqual(runtimeForCache(runtime('torch')), {
      metadata: { name: 'torch' },
      spec: { mlPolicy: { numNodes: 1 } },
    });
    assert.equal(runtimeForCache({ metadata: {} }), undefined);
    assert.equal(runtimeForCache('x'), undefined);
  });

  it('finds a listed runtime of either kind once its watch runs; a name it does not hold is left to a GET', async (t) => {
    const api = await loopback(t, { [CTR]: [runtime('torch')], [TR]: [runtime('mine', 'team')] });
    const watch = watchRuntimes(api.client, () => {});
    t.after(() => watch.stop());
    assert.equal(watch.read('ClusterTrainingRuntime', 'team', 'torch'), undefined, 'not listed yet: read');
    await waitFor('both watches taken', () => api.watches[CTR].length === 1 && api.watches[TR].length === 1);
    await waitFor('the caches current', () => watch.read('ClusterTrainingRuntime', 'team', 'torch') !== undefined);
    assert.deepEqual(watch.read('ClusterTrainingRuntime', 'any', 'torch'), {
      kind: 'found',
      value: { metadata: { name: 'torch' }, spec: { mlPolicy: { numNodes: 1 } } },
    });
    assert.equal(watch.read('TrainingRuntime', 'team', 'mine')?.kind, 'found');
    assert.equal(watch.read('TrainingRuntime', 'other', 'mine'), undefined, 'another namespace: not held, read');
    assert.equal(watch.read('ClusterTrainingRuntime', 'team', 'mine'), undefined, 'the other kind: not held, read');
    assert.equal(watch.read('ClusterTrainingRuntime', 'team', 'new'), undefined, 'created a moment ago: read');
  });

  it("follows the watch's changes, additions and deletions", async (t) => {
    const api = await loopback(t, { [CTR]: [runtime('torch')] });
    const watch = watchRuntimes(api.client, () => {});
    t.after(() => watch.stop());
    await waitFor('current', () => watch.read('ClusterTrainingRuntime', '', 'torch') !== undefined);
    api.send(CTR, 'MODIFIED', runtime('torch', undefined, 4));
    api.send(CTR, 'ADDED', runtime('jax'));
    await waitFor('the change and the addition', () => watch.read('ClusterTrainingRuntime', '', 'jax') !== undefined);
    assert.deepEqual(watch.read('ClusterTrainingRuntime', '', 'torch'), {
      kind: 'found',
      value: { metadata: { name: 'torch' }, spec: { mlPolicy: { numNodes: 4 } } },
    });
    api.send(CTR, 'DELETED', runtime('jax'));
    await waitFor('the deletion', () => watch.read('ClusterTrainingRuntime', '', 'jax') === undefined);
  });

  it('while its watch does not run, every read is a GET, and the failure is said once', async (t) => {
    const api = await loopback(t, { [CTR]: [runtime('torch')] });
    const said: string[] = [];
    const watch = watchRuntimes(api.client, (m) => said.push(m));
    t.after(() => watch.stop());
    await waitFor('current', () => watch.read('ClusterTrainingRuntime', '', 'torch') !== undefined);
    api.refuseWatches(true);
    // The server ends the watch; taking it again is refused (500), retried with backoff.
    api.watches[CTR].at(-1)!.end();
    await waitFor('the failure heard', () => said.length > 0, { timeoutMs: 30_000 });
    assert.equal(watch.read('ClusterTrainingRuntime', '', 'torch'), undefined, 'no watch runs: read');
    assert.match(said[0], /^ClusterTrainingRuntimes: .*numNodes changes GET the runtime until the watch runs again$/);
    api.refuseWatches(false);
    await waitFor('current again', () => watch.read('ClusterTrainingRuntime', '', 'torch') !== undefined, {
      timeoutMs: 60_000,
    });
    assert.equal(new Set(said).size, said.length, 'each distinct failure once');
  });
});
