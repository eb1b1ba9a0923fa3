// Where the servers listen (src/process/listen.ts), on real sockets: the default moves on from an
// IPv6 address the host cannot bind to IPv4; an address that was given is never replaced.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import Fastify from 'fastify';
import { listenOn } from '../../src/process/listen.ts';

/** An IPv6 address no host has (the documentation prefix): binding it fails with EADDRNOTAVAIL. */
const UNBINDABLE_IPV6 = '2001:db8::1';

function server() {
  const app = Fastify();
  app.get('/', async () => 'ok');
  after(() => app.close());
  return app;
}

describe('listenOn', () => {
  it('by default, the next address when the host cannot bind an IPv6 one (as on a host without IPv6)', async () => {
    const app = server();
    const url = await listenOn(app, undefined, 0, [UNBINDABLE_IPV6, '127.0.0.1']);
    assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.equal(await (await fetch(url)).text(), 'ok');
  });

  it('an address that was given is used alone: its failure is the error', async () => {
    await assert.rejects(listenOn(server(), UNBINDABLE_IPV6, 0), { code: 'EADDRNOTAVAIL' });
  });

  it('a busy port is an error, not a reason to try another address', async () => {
    const first = server();
    const port = Number(new URL(await listenOn(first, '127.0.0.1', 0)).port);
    await assert.rejects(listenOn(server(), undefined, port, ['127.0.0.1', '0.0.0.0']), { code: 'EADDRINUSE' });
  });
});
