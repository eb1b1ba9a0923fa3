// Review (s14) of the watch connections (src/cluster/api-request.ts): the watches' agent is built
// with `keepAlive: true, maxFreeSockets: 0` and the comment "no connection kept after a watch
// ends", but Node reads maxFreeSockets as `options.maxFreeSockets || 256` (lib/_http_agent.js):
// 0 means the default, so every connection whose watch the server ended is kept in the free list,
// with no idle timeout (that agent has none, on purpose), and the next watch is sent on it. A
// connection left idle between watches (1 s to 60 s of backoff) that a load balancer or the API
// server closed meanwhile then fails the next watch at once (ECONNRESET on a reused socket: a
// warning and a longer backoff). The test: two watches in a row that the server ends normally; the
// second must come on a new connection.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { apiClient } from '../../src/cluster/api-request.ts';
import { watchOnce } from '../../src/cluster/api-watch.ts';
import { directConnection } from '../../src/cluster/connection.ts';
import { listen } from './support/loopback.ts';

describe('review: a watch connection after its watch ended', () => {
  let server: Server;
  let url = '';
  const peers: number[] = [];

  before(async () => {
    server = createServer((req, res) => {
      peers.push(req.socket.remotePort ?? 0);
      // A watch the server ends (its timeoutSeconds): one event, then a complete response.
      res.writeHead(200, { 'content-type': 'application/json' }).end(`${JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'x' } } })}\n`);
    });
    url = `http://127.0.0.1:${await listen(server)}`;
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });

  it('is not kept: the next watch opens its own connection ("no connection kept after a watch ends")', async () => {
    const client = apiClient(directConnection({ server: url, insecureSkipTlsVerify: false }));
    const handlers = { onEvent: () => {}, onMalformed: () => {} };
    for (let i = 0; i < 2; i++) assert.equal(await watchOnce(client, '/api/v1/namespaces/ns/secrets', {}, handlers, { signal: new AbortController().signal }), undefined, 'ended by the server');
    assert.equal(peers.length, 2);
    assert.notEqual(peers[1], peers[0], 'the second watch came on the first one\'s connection: it was kept');
  });
});
