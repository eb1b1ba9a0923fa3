// Watches over the request layer (src/cluster/api-watch.ts) against a loopback server standing in
// for the API server: events split across writes, a malformed line (reported, skipped), a line over
// the limit, an ERROR event, a 410 answer, a connection closed mid-stream and a normal end, each
// ending the watch with its reason or none; followWatch restarts with backoff that starts over only
// once 2 min passed since the last wait began (client-go's reflector), not on an event.
//
// A watch's connection is not kept once the server ends the watch (src/cluster/api-request.ts):
// that agent has no idle timeout (a quiet watch is not idle), so a kept connection would sit idle
// through the backoff between watches (1 s to 60 s), and one a load balancer or the API server
// closed meanwhile would fail the next watch at once (ECONNRESET on a reused socket: a warning and
// a longer backoff). Node reads an agent's maxFreeSockets as `options.maxFreeSockets || 256`
// (lib/_http_agent.js), so `keepAlive: true, maxFreeSockets: 0` would keep up to 256 of them: the
// watches' agent does not keep alive.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { apiClient, type ApiClient } from '../../src/cluster/api-request.ts';
import { BACKOFF_RESET_MS, followWatch, watchOnce, type WatchEvent } from '../../src/cluster/api-watch.ts';
import { directConnection } from '../../src/cluster/connection.ts';
import { listen } from './support/loopback.ts';

type Handler = (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;
const tick = () => new Promise((resolve) => setImmediate(resolve));
const line = (type: string, object: unknown) => `${JSON.stringify({ type, object })}\n`;
const streaming = (res: ServerResponse) =>
  res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });

describe('watches', () => {
  let server: Server;
  let url = '';
  let client: ApiClient;
  let handlers: Handler[] = [];
  const urls: string[] = [];

  before(async () => {
    server = createServer((req, res) => {
      urls.push(req.url ?? '');
      const h = handlers.shift();
      if (h) void h(req, res);
      else res.writeHead(500).end();
    });
    url = `http://127.0.0.1:${await listen(server)}`;
    client = apiClient(directConnection({ server: url, insecureSkipTlsVerify: false }));
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });

  const run = async (handler: Handler, maxLineBytes?: number) => {
    handlers = [handler];
    const events: WatchEvent[] = [];
    const malformed: string[] = [];
    const reason = await watchOnce(
      client,
      '/apis/x/v1/things',
      { fieldSelector: 'metadata.name=a' },
      { onEvent: (e) => events.push(e), onMalformed: (m) => malformed.push(m) },
      { signal: new AbortController().signal, maxLineBytes },
    );
    return { reason, events, malformed };
  };

  it('asks for a watch by name with a server-side timeout; events split across writes arrive whole, in order; a normal end has no reason', async () => {
    const body = line('ADDED', { n: 1 }) + line('MODIFIED', { n: 2 }) + line('DELETED', { n: 3 });
    const got = await run(async (_req, res) => {
      streaming(res);
      const cuts = [0, 5, 40, 41, body.length];
      for (let i = 1; i < cuts.length; i++) {
        res.write(body.slice(cuts[i - 1], cuts[i]));
        await tick();
      }
      res.end();
    });
    assert.deepEqual(got, {
      reason: undefined,
      events: [
        { type: 'ADDED', object: { n: 1 } },
        { type: 'MODIFIED', object: { n: 2 } },
        { type: 'DELETED', object: { n: 3 } },
      ],
      malformed: [],
    });
    const url = new URL(urls.at(-1)!, 'http://x');
    assert.equal(url.pathname, '/apis/x/v1/things');
    assert.equal(url.searchParams.get('watch'), 'true');
    assert.equal(url.searchParams.get('fieldSelector'), 'metadata.name=a');
    assert.ok(Number(url.searchParams.get('timeoutSeconds')) >= 300);
  });

  it('a line that is not JSON, or not an event, is reported and skipped; the watch goes on', async () => {
    const got = await run((_req, res) => {
      streaming(res);
      res.end(`{"type":"ADDED","object":{"n":1}}\n{not json\n[1,2]\n${line('MODIFIED', { n: 2 })}`);
    });
    assert.deepEqual(
      got.events.map((e) => e.type),
      ['ADDED', 'MODIFIED'],
    );
    assert.deepEqual(got.malformed, [
      'a line that is not JSON (9 characters) skipped',
      'a line that is not a watch event (no type) skipped',
    ]);
    assert.equal(got.reason, undefined);
  });

  it('a line over the limit ends the watch with that reason (nothing more buffered)', async () => {
    let closed = false;
    const got = await run(async (_req, res) => {
      res.on('close', () => (closed = true));
      streaming(res);
      res.write(line('ADDED', { n: 1 }));
      // More than the limit, never a newline: the client must give up, not wait for one.
      for (let i = 0; i < 64 && !closed; i++) {
        res.write('x'.repeat(1024));
        await tick();
      }
    }, 4096);
    assert.equal(got.reason, 'an event longer than 4096 bytes');
    assert.deepEqual(
      got.events.map((e) => e.type),
      ['ADDED'],
    );
  });

  it('an ERROR event (410 Gone) ends the watch with its status and message', async () => {
    const got = await run((_req, res) => {
      streaming(res);
      res.write(line('ADDED', { n: 1 }));
      res.write(
        line('ERROR', {
          kind: 'Status',
          apiVersion: 'v1',
          status: 'Failure',
          message: 'too old resource version: 1 (2)',
          reason: 'Expired',
          code: 410,
        }),
      );
      res.write(line('MODIFIED', { n: 2 }));
    });
    assert.equal(got.reason, 'ERROR event: HTTP 410: too old resource version: 1 (2)');
    assert.deepEqual(
      got.events.map((e) => e.type),
      ['ADDED'],
      'nothing after the ERROR event',
    );
  });

  it('a non-200 answer (410 Gone) ends it with the status and the Status message', async () => {
    const got = await run((_req, res) => {
      res
        .writeHead(410, { 'content-type': 'application/json' })
        .end(JSON.stringify({ kind: 'Status', message: 'the resourceVersion is too old', code: 410 }));
    });
    assert.deepEqual(got, { reason: 'HTTP 410: the resourceVersion is too old', events: [], malformed: [] });
  });

  it('a connection closed mid-stream ends it with that reason, after the events that arrived', async () => {
    const got = await run(async (_req, res) => {
      streaming(res);
      res.write(line('ADDED', { n: 1 }) + '{"type":"MODI');
      await tick();
      res.socket?.destroy();
    });
    assert.deepEqual(got, {
      reason: 'the connection closed mid-stream',
      events: [{ type: 'ADDED', object: { n: 1 } }],
      malformed: [],
    });
  });

  it('a watch connection the server ended is not kept: the next watch opens its own ("no connection kept after a watch ends")', async () => {
    const peers: number[] = [];
    // A watch the server ends (its timeoutSeconds): one event, then a complete response.
    const endedByServer: Handler = (req, res) => {
      peers.push(req.socket.remotePort ?? 0);
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(`${JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'x' } } })}\n`);
    };
    handlers = [endedByServer, endedByServer];
    const fresh = apiClient(directConnection({ server: url, insecureSkipTlsVerify: false }));
    const ignore = { onEvent: () => {}, onMalformed: () => {} };
    for (let i = 0; i < 2; i++)
      assert.equal(
        await watchOnce(fresh, '/api/v1/namespaces/ns/secrets', {}, ignore, { signal: new AbortController().signal }),
        undefined,
        'ended by the server',
      );
    assert.equal(peers.length, 2);
    assert.notEqual(peers[1], peers[0], "the second watch came on the first one's connection: it was kept");
  });

  it('nothing listening: the reason names the failure', async () => {
    const closed = apiClient(directConnection({ server: 'http://127.0.0.1:1', insecureSkipTlsVerify: false }));
    const reason = await watchOnce(
      closed,
      '/x',
      {},
      { onEvent: () => {}, onMalformed: () => {} },
      { signal: new AbortController().signal },
    );
    assert.match(reason ?? '', /ECONNREFUSED/);
  });

  // Each followWatch test is bounded (an event that never comes fails it in a minute, not at the
  // 10-minute run timeout) and stops its watch afterwards whatever happened: a watch left
  // restarting every few milliseconds would keep the file's process alive and busy.
  it(
    'followWatch restarts after each end, doubling the wait; the wait starts over once 2 min passed since the last one began (not on an event); stop ends it',
    { timeout: 60_000 },
    async (t) => {
      const status = (code: number) => (_req: IncomingMessage, res: ServerResponse) =>
        void res.writeHead(code).end(JSON.stringify({ message: `no ${code}` }));
      const addedThenEnd = (livesMs: number) => (_req: IncomingMessage, res: ServerResponse) => {
        clock += livesMs;
        streaming(res);
        res.end(line('ADDED', { n: 1 }));
      };
      let clock = 0;
      const ended: [string | undefined, number][] = [];
      const events: string[] = [];
      let stop = () => {};
      t.after(() => stop());
      const done = new Promise<void>((resolve) => {
        handlers = [
          status(500),
          status(503),
          addedThenEnd(0),
          addedThenEnd(BACKOFF_RESET_MS),
          status(410),
          addedThenEnd(BACKOFF_RESET_MS - 1),
          (_req, res) => {
            streaming(res);
            res.write(line('MODIFIED', { n: 2 }));
            // Held open: stop() must end it.
          },
        ];
        stop = followWatch(
          client,
          '/x',
          {},
          {
            onEvent: (e) => {
              events.push(e.type);
              if (e.type === 'MODIFIED') resolve();
            },
            onMalformed: () => {},
            onEnded: (reason, retryMs) => void ended.push([reason, retryMs]),
          },
          { firstRetryMs: 1, maxRetryMs: 8, now: () => clock },
        );
      });
      await done;
      stop();
      await tick();
      assert.deepEqual(events, ['ADDED', 'ADDED', 'ADDED', 'MODIFIED']);
      assert.deepEqual(ended, [
        ['HTTP 500: no 500', 1],
        ['HTTP 503: no 503', 2],
        [undefined, 4], // an event does not start the backoff over
        [undefined, 1], // 2 min since the last wait began
        ['HTTP 410: no 410', 2],
        [undefined, 4], // a moment short of 2 min
      ]);
    },
  );

  it(
    'a proxy that ends every watch at once, after the ADDED a watch begins with: the wait grows to its bound, the watch is not restarted every second',
    { timeout: 60_000 },
    async (t) => {
      const ended: number[] = [];
      let stopIt = () => {};
      t.after(() => stopIt());
      await new Promise<void>((resolve) => {
        handlers = Array.from({ length: 6 }, () => (_req: IncomingMessage, res: ServerResponse) => {
          streaming(res);
          res.end(line('ADDED', { n: 1 }));
        });
        const stop = followWatch(
          client,
          '/x',
          {},
          {
            onEvent: () => {},
            onMalformed: () => {},
            onEnded: (_reason, retryMs) => {
              ended.push(retryMs);
              if (ended.length === 6) {
                stop();
                resolve();
              }
            },
          },
          { firstRetryMs: 1, maxRetryMs: 8, now: () => 0 },
        );
        stopIt = stop;
      });
      assert.deepEqual(ended, [1, 2, 4, 8, 8, 8]);
    },
  );
});
