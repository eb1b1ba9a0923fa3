// Connections to the API server are reused and bounded. `serve`'s calls (the Jobs read on the
// admission path among them) share a keep-alive pool of at most MAX_API_SOCKETS connections
// (src/cluster/api-request.ts); the reconciler's go through @kubernetes/client-node 2.0.1, which
// opens a new connection for every call and never closes it unless shareConnections gives it one
// pool (a file-descriptor leak under sustained scaling). A loopback server standing in for the API server counts the
// connections behind 1,000 reads.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { BatchV1Api, KubeConfig } from '@kubernetes/client-node';
import { shareConnections } from '../../src/cluster/client-node.ts';
import { apiClient, MAX_API_SOCKETS } from '../../src/cluster/api-request.ts';
import { kubeConfigConnection } from '../../src/cluster/kubeconfig-connection.ts';
import { jobSetReader } from '../../src/webhook/jobset-read.ts';

describe('API server connections', () => {
  let server: Server;
  let port = 0;
  const sockets = new Set<Socket>();
  let opened = 0;

  before(async () => {
    server = createServer((_req, res) =>
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end('{"kind":"JobList","apiVersion":"batch/v1","metadata":{},"items":[]}'),
    );
    server.on('connection', (s) => {
      opened++;
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as { port: number }).port;
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });

  const kubeConfig = (): KubeConfig => {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
      users: [{ name: 'u', token: 't' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    return kc;
  };

  describe('the Jobs read (its own pool)', () => {
    it('1,000 reads one after another use one connection', async () => {
      opened = 0;
      const read = jobSetReader(apiClient(kubeConfigConnection(kubeConfig())));
      for (let i = 0; i < 1000; i++) assert.equal((await read('ns', `js-${i}`)).kind, 'read');
      assert.equal(opened, 1, `${opened} connections opened`);
    });

    it(`1,000 reads 20 at a time open at most ${MAX_API_SOCKETS} connections`, async () => {
      opened = 0;
      const read = jobSetReader(apiClient(kubeConfigConnection(kubeConfig())));
      const batch = (i: number) => Promise.all(Array.from({ length: 20 }, (_, j) => read('ns', `js-${i}-${j}`)));
      for (let i = 0; i < 50; i++) for (const r of await batch(i)) assert.equal(r.kind, 'read');
      assert.ok(opened <= MAX_API_SOCKETS, `${opened} connections opened`);
      assert.ok(opened >= 2, `${opened}: the reads in flight did not run side by side`);
    });
  });

  describe('client-node calls', () => {
    const listJobs = (api: BatchV1Api, i: number) =>
      api.listNamespacedJob({ namespace: 'ns', labelSelector: `x=${i}` });

    it('with shareConnections, 1,000 calls 20 at a time: connections bounded by the requests in flight', async () => {
      opened = 0;
      const api = shareConnections(kubeConfig()).makeApiClient(BatchV1Api);
      const batch = (i: number) => Promise.all(Array.from({ length: 20 }, (_, j) => listJobs(api, i * 20 + j)));
      for (let i = 0; i < 5; i++) await batch(i);
      const afterFirst = opened;
      for (let i = 5; i < 50; i++) await batch(i);
      // The first batches open what 20 concurrent requests need (undici may open a few spare); the
      // other 900 calls open none: the count does not grow with the number of calls.
      assert.ok(afterFirst <= 60, `${afterFirst} connections opened by the first 100 calls`);
      assert.equal(opened, afterFirst, `${opened - afterFirst} more connections opened by the next 900 calls`);
    });

    it('without sharing, client-node opens a connection per call (the leak shareConnections guards against)', async () => {
      opened = 0;
      const api = kubeConfig().makeApiClient(BatchV1Api);
      for (let i = 0; i < 50; i++) await listJobs(api, i);
      assert.ok(opened >= 40, `${opened} connections opened`);
    });
  });
});
