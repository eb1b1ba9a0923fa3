// The leader elector's updates keep what others put on the Lease: a PUT replaces the whole object,
// so a renewal or a takeover that sent only name, namespace, resourceVersion and annotations would
// drop labels and owner references someone set (kubectl label, a cleanup controller's owner); as
// client-go's LeaseLock, it writes back the metadata it read or last wrote, changing the spec alone.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { apiClient } from '../../src/cluster/api-request.ts';
import { directConnection } from '../../src/cluster/connection.ts';
import { createLogger } from '../../src/observability/logger.ts';
import { createLeaderElector, type LeaseObject } from '../../src/reconciler/lease.ts';
import { waitFor } from '../harness/wait.ts';
import { listen } from '../cluster/support/loopback.ts';

describe('leader election: updates keep the Lease metadata others wrote', () => {
  let server: Server;
  let url = '';
  let stored: LeaseObject | undefined;
  let rv = 1;
  const puts: LeaseObject[] = [];

  before(async () => {
    // A PUT stores exactly the body it was sent (as the API server does, resourceVersion checked).
    server = createServer((req, res) => {
      const send = (code: number, body: unknown) =>
        res.writeHead(code, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      if (req.method === 'GET') return stored ? send(200, stored) : send(404, { code: 404 });
      let text = '';
      req.on('data', (c) => (text += c));
      req.on('end', () => {
        const body = JSON.parse(text) as LeaseObject;
        if (req.method === 'POST' && stored) return send(409, { code: 409 });
        if (req.method === 'PUT' && body.metadata.resourceVersion !== stored?.metadata.resourceVersion)
          return send(409, { code: 409, message: 'the object has been modified' });
        if (req.method === 'PUT') puts.push(body);
        stored = { ...body, metadata: { ...body.metadata, resourceVersion: String(++rv) } };
        send(req.method === 'POST' ? 201 : 200, stored);
      });
    });
    url = `http://127.0.0.1:${await listen(server)}`;
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });

  const owner = { apiVersion: 'v1', kind: 'ConfigMap', name: 'keeper', uid: 'u-1' };

  it('a takeover of an expired Lease and the renewals after it keep its labels and owner references', async (t) => {
    stored = {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: {
        name: 'l',
        namespace: 'ns',
        uid: 'lease-uid',
        resourceVersion: String(++rv),
        labels: { team: 'ml' },
        annotations: { note: 'kept' },
        ownerReferences: [owner],
      },
      spec: { holderIdentity: 'gone', leaseDurationSeconds: 1, renewTime: '2020-01-01T00:00:00.000000Z' },
    };
    const elector = createLeaderElector(
      apiClient(directConnection({ server: url, insecureSkipTlsVerify: false })),
      {
        namespace: 'ns',
        name: 'l',
        identity: 'me',
        leaseDurationMs: 1000,
        renewDeadlineMs: 800,
        retryPeriodMs: 50,
        annotations: { mine: 'yes' },
      },
      createLogger('silent'),
    );
    t.after(() => elector.stop());
    elector.run({ onStartedLeading: () => {}, onStoppedLeading: () => {} });
    // The old holder's record is first observed, then waited out (leaseDurationMs), then taken.
    await waitFor('the takeover and two renewals', async () => puts.length >= 3, { timeoutMs: 30_000 });
    for (const body of puts) {
      assert.deepEqual(body.metadata.labels, { team: 'ml' });
      assert.deepEqual(body.metadata.ownerReferences, [owner]);
      assert.equal(body.metadata.uid, 'lease-uid');
      assert.deepEqual(body.metadata.annotations, { note: 'kept', mine: 'yes' });
    }
    assert.equal(stored?.spec?.holderIdentity, 'me');
  });
});
