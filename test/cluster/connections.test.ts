// Connections to the API server are reused and bounded. `serve`'s calls (the Jobs read on the
// admission path among them) share a keep-alive pool of at most MAX_API_SOCKETS connections
// (src/cluster/api-request.ts), and so do the reconciler's (its reads and writes through the same
// request layer; @kubernetes/client-node 2.0.1, which it used before, opened a connection per call
// and never closed it). A loopback server standing in for the API server counts the connections
// behind 1,000 reads.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { apiClient, MAX_API_SOCKETS } from '../../src/cluster/api-request.ts';
import { kubeConfigConnection } from '../../src/cluster/kubeconfig-connection.ts';
import { jobSetReader } from '../../src/scale/reads/jobset-read.ts';
import { createReconcilerCluster } from '../../src/reconciler/cluster.ts';

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
    // Node's default of 5 s would close an idle kept connection during a pause of a loaded
    // machine between two reads, and the one-connection count would see a second connection.
    server.keepAliveTimeout = 60_000;
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

  describe("the reconciler's calls", () => {
    it(`1,000 calls 20 at a time open at most ${MAX_API_SOCKETS} connections, the same as serve's`, async () => {
      opened = 0;
      const cluster = createReconcilerCluster(apiClient(kubeConfigConnection(kubeConfig())), {
        fieldManager: 'm',
        identity: 'i',
      });
      const batch = (i: number) =>
        Promise.all(Array.from({ length: 20 }, (_, j) => cluster.listChildren('ns', `js-${i}-${j}`)));
      for (let i = 0; i < 50; i++) await batch(i);
      assert.ok(opened <= MAX_API_SOCKETS, `${opened} connections opened`);
    });
  });
});
