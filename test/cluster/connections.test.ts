// Connections to the API server are reused and bounded: @kubernetes/client-node 2.0.1 opens a new
// connection for every call and never closes it (a file-descriptor leak under sustained scaling).
// A loopback server standing in for the API server counts the connections behind 1,000 reads.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { shareConnections } from '../../src/cluster/client.ts';
import { jobSetReader } from '../../src/cluster/jobsets.ts';

describe('API server connections', () => {
  let server: Server;
  let port = 0;
  const sockets = new Set<Socket>();
  let opened = 0;

  before(async () => {
    server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"kind":"JobList","apiVersion":"batch/v1","metadata":{},"items":[]}'));
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

  it('1,000 reads one after another use one connection', async () => {
    opened = 0;
    const read = jobSetReader(shareConnections(kubeConfig()));
    for (let i = 0; i < 1000; i++) assert.equal((await read('ns', `js-${i}`)).kind, 'read');
    assert.ok(opened <= 2, `${opened} connections opened`);
    assert.ok(sockets.size <= 2, `${sockets.size} connections open`);
  });

  it('1,000 reads 20 at a time: connections bounded by the requests in flight', async () => {
    opened = 0;
    const read = jobSetReader(shareConnections(kubeConfig()));
    const batch = (i: number) => Promise.all(Array.from({ length: 20 }, (_, j) => read('ns', `js-${i}-${j}`)));
    for (let i = 0; i < 5; i++) await batch(i);
    const afterFirst = opened;
    for (let i = 5; i < 50; i++) await batch(i);
    // The first batches open what 20 concurrent requests need (undici may open a few spare); the
    // other 900 reads open none: the count does not grow with the number of reads.
    assert.ok(afterFirst <= 60, `${afterFirst} connections opened by the first 100 reads`);
    assert.equal(opened, afterFirst, `${opened - afterFirst} more connections opened by the next 900 reads`);
  });

  it('without sharing, client-node opens a connection per read (the leak this guards against)', async () => {
    opened = 0;
    const read = jobSetReader(kubeConfig());
    for (let i = 0; i < 50; i++) await read('ns', `js-${i}`);
    assert.ok(opened >= 40, `${opened} connections opened`);
  });
});
