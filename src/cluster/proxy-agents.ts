// The agents behind a kubeconfig's proxy-url: a CONNECT tunnel through an HTTP(S) proxy for an
// https:// server (as Go's net/http and client-node's hpagent build it), and socks-proxy-agent for
// the SOCKS schemes (socks5, socks5h, socks4, socks4a). An http:// server behind an HTTP(S) proxy
// needs no special agent: the request goes to the proxy in absolute form (api-request.ts), as Go's
// net/http does. Loaded only when a kubeconfig names a proxy.
import http from 'node:http';
import https from 'node:https';
import { isIP, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { SocksProxyAgent } from 'socks-proxy-agent';
import { authority } from './kube-access.ts';
import { proxyAuthorization } from './proxy-credentials.ts';

export function proxyAgent(
  proxy: URL,
  options: http.AgentOptions & Record<string, unknown>,
  connectTimeoutMs = CONNECT_TIMEOUT_MS,
): http.Agent {
  if (proxy.protocol.startsWith('socks')) return new SocksProxyAgent(remoteNames(proxy), options);
  return new ConnectTunnelAgent(proxy, options, connectTimeoutMs);
}

/**
 * Go's SOCKS5 dialer hands the host name to the proxy ("socks5 is treated the same as socks5h"):
 * kubectl through `ssh -D` reaches a name only the far side resolves. socks-proxy-agent resolves
 * socks5:// names locally, so it is given socks5h://. socks4:// stays local (SOCKS4 carries only
 * an address; socks4a:// is its remote form).
 */
function remoteNames(proxy: URL): URL {
  if (proxy.protocol !== 'socks5:') return proxy;
  const remote = new URL(proxy.href);
  remote.protocol = 'socks5h:';
  return remote;
}

/** A proxy that never answers CONNECT fails the request after this (a watch's agent has no idle timeout). */
const CONNECT_TIMEOUT_MS = 30_000;

/**
 * TLS to the API server inside a CONNECT tunnel through an HTTP(S) proxy. hpagent 1.2.0 wrote the
 * CONNECT target as `host:port` with an IPv6 host unbracketed, which a proxy refuses.
 */
class ConnectTunnelAgent extends https.Agent {
  /** The CONNECT request's options but its target: the proxy's, the same for every tunnel. */
  readonly #toProxy: https.RequestOptions;
  readonly #secureProxy: boolean;
  readonly #authorization: string | undefined;

  constructor(proxy: URL, options: https.AgentOptions, connectTimeoutMs: number) {
    super(options);
    const host = proxy.hostname.replace(/^\[(.*)\]$/, '$1');
    this.#secureProxy = proxy.protocol === 'https:';
    this.#authorization = proxyAuthorization(proxy);
    this.#toProxy = {
      method: 'CONNECT',
      host,
      port: proxy.port || (this.#secureProxy ? 443 : 80),
      setHost: false,
      agent: false,
      timeout: connectTimeoutMs,
      // An IP is no TLS server name (RFC 6066; Node warns, DEP0123).
      ...(this.#secureProxy && !isIP(host) ? { servername: host } : {}),
    };
  }

  override createConnection(
    options: https.RequestOptions & { host: string; port: number; timeout?: number },
    callback: (err: Error | null, socket?: Duplex) => void,
  ): undefined {
    const target = authority(options.host, options.port);
    const headers: Record<string, string> = {
      host: target,
      ...(this.#authorization ? { 'proxy-authorization': this.#authorization } : {}),
    };
    const connect = (this.#secureProxy ? https : http).request({
      ...this.#toProxy,
      path: target,
      headers,
      ...(options.timeout ? { timeout: options.timeout } : {}),
    });
    connect.once('connect', (response, socket: Socket) => {
      connect.removeAllListeners();
      if (response.statusCode !== 200) {
        socket.destroy();
        return callback(new Error(`the proxy answered CONNECT ${target} with HTTP ${response.statusCode}`));
      }
      // https.Agent hands `socket` to tls.connect: TLS to the API server over the tunnel.
      callback(null, super.createConnection({ ...options, socket } as https.RequestOptions) as Duplex);
    });
    connect.once('timeout', () => connect.destroy(new Error('the proxy did not answer CONNECT in time')));
    connect.once('error', (err) => {
      connect.removeAllListeners();
      connect.on('error', () => {});
      callback(err);
    });
    connect.end();
    return undefined;
  }
}
