// The agents behind a kubeconfig's proxy-url, as client-node builds them: hpagent's
// HttpsProxyAgent (a CONNECT tunnel) for an https:// server behind an HTTP(S) proxy, and
// socks-proxy-agent for socks5://. An http:// server behind an HTTP(S) proxy needs no special
// agent: the request goes to the proxy in absolute form (api-request.ts), as Go's net/http does.
// Loaded only when a kubeconfig names a proxy.
import type http from 'node:http';
import { HttpsProxyAgent } from 'hpagent';
import { SocksProxyAgent } from 'socks-proxy-agent';

export function proxyAgent(proxy: URL, options: http.AgentOptions & Record<string, unknown>): http.Agent {
  if (proxy.protocol === 'socks5:') return new SocksProxyAgent(proxy, options);
  return new HttpsProxyAgent({ ...options, proxy });
}
