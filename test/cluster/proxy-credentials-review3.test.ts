// Third review (s14) of d104ff4 (a bad percent escape in proxy-url's credentials refused at
// load). The check is decodeURIComponent on the user and password, which also throws on an escape
// that is valid but not UTF-8 ("p%E9ss", a Latin-1 password; "%FF"): such a kubeconfig is refused
// at load ("invalid URL escape"), and the Proxy-Authorization is built with decodeURIComponent
// too. Go's url.Parse accepts any %XX (checked with Go 1.26: "http://user:p%E9ss@proxy:3128"
// parses, Password() = "p\xe9ss"; only "%zz" is "invalid URL escape"), and net/http sends the
// raw bytes in Proxy-Authorization (basicAuth over the string's bytes). So kubectl works through
// that proxy and serve refuses to start. The escapes should decode to bytes, not to UTF-8 text.
//
// Checked and fine: a proxy-url without credentials (nothing to decode; an escape in the path,
// which Go refuses, is accepted and unused: lenient, not a failure); "%zz" refused (review 2's
// test); UTF-8 escapes ("%C3%A9") decoded and sent as UTF-8, as Go sends them.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { connectCluster } from '../../src/cluster/connect.ts';
import { listen } from './support/loopback.ts';

describe('review 3: proxy-url credentials with an escape that is not UTF-8', () => {
  let dir = '';
  let proxy: Server;
  let proxyPort = 0;
  const seen: (string | undefined)[] = [];

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'tjw-review3-proxy-'));
    // Records Proxy-Authorization and refuses: the CONNECT (https:// server) and the absolute-form request (http:// server).
    proxy = createServer((req, res) => {
      seen.push(req.headers['proxy-authorization']);
      res.writeHead(407).end();
    });
    proxy.on('connect', (req: IncomingMessage, client: Socket) => {
      seen.push(req.headers['proxy-authorization']);
      client.end('HTTP/1.1 407 Proxy Authentication Required\r\n\r\n');
    });
    proxyPort = await listen(proxy);
  });
  after(async () => {
    proxy.closeAllConnections();
    proxy.close();
    await rm(dir, { recursive: true, force: true });
  });

  const cases: [string, string, Buffer][] = [
    ['a Latin-1 password', 'user:p%E9ss', Buffer.from('user:p\xe9ss', 'latin1')],
    ['a 0xFF byte', 'us%FFer:pw', Buffer.from('us\xffer:pw', 'latin1')],
  ];
  for (const [name, userinfo, raw] of cases) {
    for (const server of ['https://127.0.0.1:6443', 'http://127.0.0.1:8080']) {
      it(`${name} (${userinfo}) loads as client-go loads it and its bytes go in Proxy-Authorization (${server.split(':')[0]} server)`, async () => {
        const file = path.join(dir, `${server.split(':')[0]}-${userinfo.replace(/\W/g, '')}.kubeconfig`);
        const tls = server.startsWith('https') ? ', insecure-skip-tls-verify: true' : '';
        await writeFile(file, `clusters: [{name: k, cluster: {server: "${server}", proxy-url: "http://${userinfo}@127.0.0.1:${proxyPort}"${tls}}}]\ncontexts: [{name: c, context: {cluster: k, user: u}}]\ncurrent-context: c\nusers: [{name: u, user: {token: t}}]\n`);
        const cluster = await connectCluster({ mode: 'kubeconfig', path: file });
        seen.length = 0;
        await cluster!.client.request('/version', { signal: AbortSignal.timeout(10_000), maxBytes: 1024 }).catch(() => undefined);
        assert.deepEqual(seen, [`Basic ${raw.toString('base64')}`]);
      });
    }
  }

  it('control: UTF-8 escapes (%C3%A9) are decoded and sent as UTF-8, as Go sends them', async () => {
    const file = path.join(dir, 'utf8.kubeconfig');
    await writeFile(file, `clusters: [{name: k, cluster: {server: "https://127.0.0.1:6443", proxy-url: "http://user:p%C3%A9ss@127.0.0.1:${proxyPort}", insecure-skip-tls-verify: true}}]\ncontexts: [{name: c, context: {cluster: k, user: u}}]\ncurrent-context: c\nusers: [{name: u, user: {token: t}}]\n`);
    const cluster = await connectCluster({ mode: 'kubeconfig', path: file });
    seen.length = 0;
    await cluster!.client.request('/version', { signal: AbortSignal.timeout(10_000), maxBytes: 1024 }).catch(() => undefined);
    assert.deepEqual(seen, [`Basic ${Buffer.from('user:p\u00e9ss', 'utf8').toString('base64')}`]);
  });
});
