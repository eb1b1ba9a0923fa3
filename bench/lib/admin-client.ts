// The benches' client of the control plane they start: plain HTTPS with the admin's client
// certificate, on one keep-alive connection, so what is measured is the API server, not a client.
import { Agent, request } from 'node:https';
import type { ControlPlane } from '../../test/harness/index.ts';
import type { Obj } from '../../test/e2e/support/trainjobs.ts';
import type { Send } from './apiserver-world.ts';

export interface AdminClient {
  send: Send;
  /** A GET's body as text (/metrics). */
  text(urlPath: string): Promise<string>;
  close(): void;
}

/** One HTTPS client on one keep-alive connection, with the admin's client certificate. */
export async function adminClient(cp: ControlPlane): Promise<AdminClient> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const base: Obj = {};
  await cp.kubeConfig.applyToHTTPSOptions(base);
  const exchange = (method: string, urlPath: string, body: unknown, contentType: string) =>
    new Promise<{ status: number; text: string }>((resolve, reject) => {
      const url = new URL(cp.server + urlPath);
      const req = request(
        {
          ...base,
          agent,
          method,
          hostname: url.hostname,
          port: url.port,
          path: url.pathname + url.search,
          headers: { 'content-type': contentType, accept: 'application/json' },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }));
        },
      );
      req.on('error', reject);
      req.end(body === undefined ? undefined : JSON.stringify(body));
    });
  const send: Send = async (method, urlPath, body, contentType = 'application/json') => {
    const res = await exchange(method, urlPath, body, contentType);
    return { status: res.status, body: JSON.parse(res.text || '{}') as Obj };
  };
  const text = async (urlPath: string) => (await exchange('GET', urlPath, undefined, 'application/json')).text;
  return { send, text, close: () => agent.destroy() };
}
