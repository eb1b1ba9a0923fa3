// A proxy that takes the CONNECT and never answers: the tunnel fails after the CONNECT timeout
// instead of holding the request (a watch's agent has no idle timeout of its own).
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { proxyAgent } from '../../src/cluster/proxy-agents.ts';
import { listen } from './support/loopback.ts';

describe('a CONNECT the proxy never answers', () => {
  let proxy: Server;
  let port = 0;
  const held: Socket[] = [];
  before(async () => {
    proxy = createServer();
    proxy.on('connect', (_req: IncomingMessage, client: Socket) => void held.push(client));
    port = await listen(proxy);
  });
  after(() => {
    for (const s of held) s.destroy();
    proxy.close();
  });

  it('fails the request with a message naming the proxy', { timeout: 10_000 }, async () => {
    const agent = proxyAgent(new URL(`http://127.0.0.1:${port}`), { keepAlive: false }, 200);
    const failure = await new Promise<Error>((resolve) => {
      const req = https.request('https://api.example:6443/version', { agent }, () => resolve(new Error('answered')));
      req.on('error', resolve);
      req.end();
    });
    assert.match(failure.message, /the proxy did not answer CONNECT in time/);
    assert.equal(held.length, 1);
  });
});
