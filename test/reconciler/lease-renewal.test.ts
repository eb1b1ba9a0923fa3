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
import { waitFor } from '../harness/wait.ts';

describe('leader election: requests', () => {
  let server: Server;
  let url = '';
  let stored: LeaseObject | undefined;
  let rv = 1;
  /** Each request as the server decided it ("PUT 200", "PUT 409", ...), in that order. */
  const seen: string[] = [];
  /** Set by the test: the next PUT finds the Lease taken by "other" (written just before it). */
  let takeOverAtNextPut = false;

  before(async () => {
    server = createServer((req, res) => {
      const send = (code: number, body: unknown) => {
        seen.push(`${req.method} ${code}`);
        res.writeHead(code, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      };
      if (req.method === 'GET') return stored ? send(200, stored) : send(404, { code: 404 });
      let text = '';
      req.on('data', (c) => (text += c));
      req.on('end', () => {
        const body = JSON.parse(text) as LeaseObject;
        if (req.method === 'PUT' && takeOverAtNextPut) {
          // Another replica's write lands first (a new resourceVersion and renewTime), done here
          // rather than from the test so that a renewal already on its way cannot slip past it;
          // it holds the Lease for an hour, so that no wait of this test can outlast it.
          takeOverAtNextPut = false;
          stored = {
            ...stored!,
            metadata: { ...stored!.metadata, resourceVersion: String(++rv) },
            spec: { ...stored!.spec, holderIdentity: 'other', leaseDurationSeconds: 3600, renewTime: 'now' },
          };
        }
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

  it('renews with PUTs alone; a conflict makes it read, and it waits for another holder', async (t) => {
    const elector = createLeaderElector(
      apiClient(directConnection({ server: url, insecureSkipTlsVerify: false })),
      {
        namespace: 'ns',
        name: 'l',
        identity: 'me',
        // Long enough that a loaded machine's pauses neither lose the Lease (a second
        // onStartedLeading) nor time a request out; the retry period is what the test waits on.
        leaseDurationMs: 120_000,
        renewDeadlineMs: 60_000,
        retryPeriodMs: 100,
        annotations: {},
      },
      createLogger('silent'),
    );
    let started = 0;
    elector.run({ onStartedLeading: () => started++, onStoppedLeading: () => {} });
    // Stopped whether the test passes or not: its retry timer would keep the file's process alive.
    t.after(() => elector.stop());
    const count = (from: number, entry: string) => seen.slice(from).filter((s) => s === entry).length;
    await waitFor('four renewals', () => count(0, 'PUT 200') >= 4, { intervalMs: 10 });
    assert.equal(started, 1);
    assert.deepEqual(seen.slice(0, 2), ['GET 404', 'POST 201']);
    assert.deepEqual(new Set(seen.slice(2)), new Set(['PUT 200']), `renewals: ${seen.slice(2).join(' ')}`);
    // Someone else takes the Lease: the next renewal conflicts, then the elector reads it, and
    // reads it again each retry period without writing (three reads: three chances to overwrite it).
    takeOverAtNextPut = true;
    await waitFor('the conflicting renewal', () => seen.includes('PUT 409'), { intervalMs: 10 });
    const conflict = seen.indexOf('PUT 409');
    const wrote = () => seen.slice(conflict + 1).some((s) => !s.startsWith('GET'));
    await waitFor('three reads after the conflict (or a write)', () => count(conflict, 'GET 200') >= 3 || wrote(), {
      intervalMs: 10,
    });
    assert.deepEqual(
      seen.slice(conflict + 1),
      seen.slice(conflict + 1).map(() => 'GET 200'),
      'only reads after the conflict',
    );
    assert.equal(stored!.spec?.holderIdentity, 'other', 'the other holder is waited for, not overwritten');
    assert.equal(started, 1);
  });
});
