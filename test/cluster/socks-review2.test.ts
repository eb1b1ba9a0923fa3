// Second review (s14) of 3723cc9's SOCKS schemes (src/cluster/proxy-agents.ts, socks-proxy-agent),
// beside client-go. client-go hands proxy-url to Go's net/http, where "socks5 is treated the same
// as socks5h" (net/http Transport.Proxy): the API server's host name goes to the proxy (SOCKS5
// address type 3) and the proxy resolves it. socks-proxy-agent resolves a socks5:// (and socks4://)
// target locally first. The common kubectl set-up, `proxy-url: socks5://localhost:1080` (an ssh -D
// tunnel) in front of a server name that only the far side's DNS knows, works with kubectl and
// fails here with ENOTFOUND before the proxy is asked. socks5h:// behaves as Go (the control
// case); socks4:// and socks4a:// have no client-go meaning (client-go refuses them).
import assert from 'node:assert/strict';
import { createServer as createHttpsServer, type Server } from 'node:https';
import { connect, createServer as createNetServer, type Server as NetServer, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { apiClient } from '../../src/cluster/api-request.ts';
import { directConnection } from '../../src/cluster/connection.ts';
import { createCA, issueServingCert, type CertificateAuthority } from '../harness/pki.ts';
import { listen } from './support/loopback.ts';

/** A name that resolves nowhere but at this proxy (RFC 6761: .invalid never resolves). */
const FAR_NAME = 'api.cluster.invalid';

/** A SOCKS5 proxy whose own "DNS" knows FAR_NAME as 127.0.0.1; `asked` gets each CONNECT's address as sent. */
function socks5(asked: (address: string) => void): NetServer {
  return createNetServer((client: Socket) => {
    client.on('error', () => {});
    client.once('data', () => {
      client.write(Buffer.from([5, 0]));
      client.once('data', (req: Buffer) => {
        const type = req[3];
        const address = type === 1 ? [...req.subarray(4, 8)].join('.') : type === 3 ? req.subarray(5, 5 + req[4]).toString() : `address type ${type}`;
        asked(address);
        const host = address === FAR_NAME ? '127.0.0.1' : address;
        const upstream = connect(req.readUInt16BE(req.length - 2), host, () => {
          client.write(Buffer.from([5, 0, 0, 1, 0, 0, 0, 0, 0, 0]));
          client.pipe(upstream).pipe(client);
        });
        upstream.on('error', () => client.destroy());
      });
    });
  });
}

describe('review 2: a socks5:// proxy-url and a server name only the proxy can resolve', () => {
  let ca: CertificateAuthority;
  let api: Server;
  let socks: NetServer;
  let apiPort = 0;
  let socksPort = 0;
  const asked: string[] = [];

  before(async () => {
    ca = await createCA();
    const serving = await issueServingCert(ca, 'apiserver', { dnsNames: [FAR_NAME], ips: [] });
    api = createHttpsServer({ cert: serving.certPem, key: serving.keyPem }, (_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
    apiPort = await listen(api);
    socks = socks5((a) => asked.push(a));
    socksPort = await listen(socks);
  });
  after(() => {
    api.closeAllConnections();
    api.close();
    socks.close();
  });

  const call = (scheme: string) =>
    apiClient(directConnection({ server: `https://${FAR_NAME}:${apiPort}`, proxyUrl: `${scheme}://127.0.0.1:${socksPort}`, ca: { data: Buffer.from(ca.certPem) }, insecureSkipTlsVerify: false })).request('/version', {
      signal: AbortSignal.timeout(10_000),
      maxBytes: 1024,
    });

  it('socks5://: the name goes to the proxy and the call succeeds, as with client-go ("socks5 is treated the same as socks5h")', async () => {
    asked.length = 0;
    assert.equal((await call('socks5')).status, 200);
    assert.deepEqual(asked, [FAR_NAME]);
  });

  it('socks5h://: the name goes to the proxy (the control case)', async () => {
    asked.length = 0;
    assert.equal((await call('socks5h')).status, 200);
    assert.deepEqual(asked, [FAR_NAME]);
  });
});
