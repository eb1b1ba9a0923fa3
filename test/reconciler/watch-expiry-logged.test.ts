// A watch whose resourceVersion was compacted away (410 Gone, as the API server says it: an ERROR
// event carrying a Status) is routine on long watches and answered by a list: the reconciler logs
// it at info, as client-go does at V(4); any other failure of a watch stays a warning. Against a
// loopback server whose TrainJob watches first answer 410, then a 500, then hold.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { apiClient, type ApiClient } from '../../src/cluster/api-request.ts';
import { directConnection } from '../../src/cluster/connection.ts';
import { createLogger } from '../../src/observability/logger.ts';
import { createWatches } from '../../src/reconciler/watches.ts';
import { cacheShapeFor } from '../../src/reconciler/cache-shape.ts';
import { waitFor } from '../harness/wait.ts';
import { listen } from '../cluster/support/loopback.ts';

describe('watches: a 410 Gone is logged at info, other failures as warnings', () => {
  let server: Server;
  let client: ApiClient;
  let trainJobWatches = 0;
  before(async () => {
    server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      const ours = url.pathname.endsWith('/trainjobs');
      if (url.searchParams.get('watch') === 'true') {
        const n = ours ? ++trainJobWatches : 0;
        if (n === 2) return void res.writeHead(500, { 'content-type': 'application/json' }).end('{"code":500}');
        res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
        if (n === 1) {
          const status = {
            kind: 'Status',
            status: 'Failure',
            reason: 'Expired',
            code: 410,
            message: 'too old resource version: 5 (90)',
          };
          res.end(`${JSON.stringify({ type: 'ERROR', object: status })}\n`);
        }
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ kind: 'List', metadata: { resourceVersion: '10' }, items: [] }));
    });
    client = apiClient(
      directConnection({ server: `http://127.0.0.1:${await listen(server)}`, insecureSkipTlsVerify: false }),
    );
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });

  it('the expiry at info, the 500 as a warning', async () => {
    const lines: { level: string; msg: string; watch?: string }[] = [];
    const logger = createLogger('info', { write: (line: string) => void lines.push(JSON.parse(line)) });
    const watches = createWatches(client, {
      onKey: () => {},
      logger,
      resyncMs: 0,
      shape: cacheShapeFor('companion'),
    });
    await watches.start();
    try {
      await waitFor('the TrainJob watch taken a third time', () => trainJobWatches >= 3, { timeoutMs: 30_000 });
      const trainJob = lines.filter((l) => l.watch === 'trainjob');
      assert.deepEqual(
        trainJob.map((l) => `${l.level} ${l.msg}`),
        ['info watch expired (410 Gone); listing again', 'warn watch failed; restarting it'],
      );
    } finally {
      await watches.stop();
    }
  });
});
