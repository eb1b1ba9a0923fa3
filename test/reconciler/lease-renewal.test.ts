// The leader elector's requests against a loopback Lease API (GET, POST, PUT with resourceVersion
// conflicts, as the API server answers them): it creates the Lease, then renews it as it last wrote
// it without reading it first (client-go's fast path); when someone else wrote the Lease meanwhile,
// its renewal conflicts, it reads the Lease and waits out the other holder.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { apiClient } from '../../src/cluster/api-request.ts';
import { directConnection } from '../../src/cluster/connection.ts';
import { createLogger } from '../../src/observability/logger.ts';
import { createLeaderElector, type LeaseObject } from '../../src/reconciler/lease.ts';
import { listen } from '../cluster/support/loopback.ts';

describe('leader election: requests', () => {
  let server: Server;
  let url = '';
  let stored: LeaseObject | undefined;
  let rv = 1;
  const seen: string[] = [];

  before(async () => {
    server = createServer((req, res) => {
      seen.push(req.method ?? '');
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

  it('renews with PUTs alone; a conflict makes it read, and it waits for another holder', async () => {
    const elector = createLeaderElector(
      apiClient(directConnection({ server: url, insecureSkipTlsVerify: false })),
      {
        namespace: 'ns',
        name: 'l',
        identity: 'me',
        leaseDurationMs: 3000,
        renewDeadlineMs: 2000,
        retryPeriodMs: 100,
        annotations: {},
      },
      createLogger('silent'),
    );
    let started = 0;
    elector.run({ onStartedLeading: () => started++, onStoppedLeading: () => {} });
    const until = async (cond: () => boolean) => {
      for (let i = 0; i < 200 && !cond(); i++) await new Promise((r) => setTimeout(r, 10));
      assert.ok(cond());
    };
    await until(() => seen.filter((m) => m === 'PUT').length >= 4);
    assert.equal(started, 1);
    assert.deepEqual(seen.slice(0, 2), ['GET', 'POST']);
    assert.deepEqual(new Set(seen.slice(2)), new Set(['PUT']), `renewals: ${seen.slice(2).join(' ')}`);
    // Someone else takes the Lease (a new resourceVersion): the next renewal conflicts, then a read.
    stored = {
      ...stored!,
      metadata: { ...stored!.metadata, resourceVersion: String(++rv) },
      spec: { ...stored!.spec, holderIdentity: 'other' },
    };
    seen.length = 0;
    await until(() => seen.includes('GET'));
    assert.equal(seen[0], 'PUT');
    assert.equal(seen[1], 'GET');
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(stored!.spec?.holderIdentity, 'other', 'the other holder is waited for, not overwritten');
    assert.deepEqual(new Set(seen.slice(1)), new Set(['GET']));
    await elector.stop();
  });
});
