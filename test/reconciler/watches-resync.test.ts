// The watches tell the informer's periodic resync apart from a watch event: a resync changes
// nothing, so the event filter (decision-inputs.ts) would drop it, and run.ts queues a 'resync'
// key without asking the filter. Against a loopback server that lists one TrainJob and holds
// every watch open.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { apiClient, type ApiClient } from '../../src/cluster/api-request.ts';
import { directConnection } from '../../src/cluster/connection.ts';
import { createLogger } from '../../src/observability/logger.ts';
import { createWatches, jitteredResyncMs } from '../../src/reconciler/watches.ts';
import { cacheShapeFor } from '../../src/reconciler/cache-shape.ts';
import { waitFor } from '../harness/wait.ts';
import { listen } from '../cluster/support/loopback.ts';

const trainJob = {
  apiVersion: 'trainer.kubeflow.org/v1alpha1',
  kind: 'TrainJob',
  metadata: { name: 'a', namespace: 'ns', uid: 'u1', resourceVersion: '5', generation: 1 },
  spec: { trainer: { numNodes: 1 } },
};

describe('watches: the resync is its own source', () => {
  let server: Server;
  let client: ApiClient;
  before(async () => {
    server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.searchParams.get('watch') === 'true') {
        res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
        return;
      }
      const items = url.pathname.endsWith('/trainjobs') ? [trainJob] : [];
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ kind: 'List', metadata: { resourceVersion: '10' }, items }));
    });
    client = apiClient(
      directConnection({ server: `http://127.0.0.1:${await listen(server)}`, insecureSkipTlsVerify: false }),
    );
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });

  it("hands a listed TrainJob on as 'trainjob', then each resync as 'resync'", async () => {
    const seen: string[] = [];
    const watches = createWatches(client, {
      onKey: (key, source) => seen.push(`${key} ${source}`),
      logger: createLogger('silent'),
      resyncMs: 40,
      shape: cacheShapeFor('companion'),
    });
    await watches.start();
    try {
      await waitFor('two resyncs', () => seen.filter((s) => s === 'ns/a resync').length >= 2, { intervalMs: 10 });
      assert.equal(seen[0], 'ns/a trainjob');
      assert.deepEqual(new Set(seen), new Set(['ns/a trainjob', 'ns/a resync']));
    } finally {
      await watches.stop();
    }
  });
});

describe("the resync period is jittered as controller-runtime's calculateResyncPeriod: a factor in [0.9, 1.1)", () => {
  it('at the ends of the random draw and in the middle', () => {
    const tenHours = 10 * 60 * 60_000;
    assert.equal(
      jitteredResyncMs(tenHours, () => 0),
      9 * 60 * 60_000,
    );
    assert.equal(
      jitteredResyncMs(tenHours, () => 0.5),
      tenHours,
    );
    const top = jitteredResyncMs(tenHours, () => 0.999_999);
    assert.ok(top < 11 * 60 * 60_000 && top > 10.99 * 60 * 60_000, String(top));
  });
  it('every draw within the bounds, and draws differ', () => {
    const draws = Array.from({ length: 50 }, () => jitteredResyncMs(1_000_000));
    assert.ok(draws.every((d) => d >= 900_000 && d < 1_100_000));
    assert.ok(new Set(draws).size > 1);
  });
});
