// Review finding (helper "review-fp", fa48dae): a kubeconfig with proxy-url read the Jobs through
// client-node (src/cluster/jobs-client-node.ts, since removed), which ignored the byte cap that the
// direct GET enforces (jobSetReader's maxBytes, JOBS_READ_MAX_BYTES): the whole answer was read and
// every Job kept whole. The request layer (src/cluster/api-request.ts) now speaks proxy-url itself,
// so the same JobList, larger than the cap, is refused directly and through a plain HTTP proxy (a
// loopback server forwarding absolute-form requests, as an HTTP proxy does for an http:// API server).
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { shareConnections } from '../../src/cluster/client-node.ts';
import { jobSetReader } from '../../src/webhook/jobset-read.ts';
import { apiClient, type ApiClient } from '../../src/cluster/api-request.ts';
import { kubeConfigConnection } from '../../src/cluster/kubeconfig-connection.ts';
import { forwardingProxy, listen } from '../cluster/support/loopback.ts';

const CAP = 16 * 1024;
const job = (i: number) => ({ metadata: { name: `big-node-${i}`, annotations: { note: 'x'.repeat(1024) } }, status: i % 2 ? { active: 1 } : {} });
const LIST = JSON.stringify({ apiVersion: 'batch/v1', kind: 'JobList', metadata: {}, items: Array.from({ length: 64 }, (_, i) => job(i)) });


function kubeConfig(server: string, proxyUrl?: string): ApiClient {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server, skipTLSVerify: true, ...(proxyUrl ? { proxyUrl } : {}) }],
    users: [{ name: 'u', token: 't' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return apiClient(kubeConfigConnection(shareConnections(kc)));
}

describe('the Jobs read through proxy-url', () => {
  let api: Server;
  let proxy: Server;
  let apiUrl = '';
  let proxyUrl = '';
  let proxied = 0;

  before(async () => {
    api = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(LIST));
    apiUrl = `http://127.0.0.1:${await listen(api)}`;
    // Absolute-form requests forwarded to their target.
    proxy = forwardingProxy(() => proxied++);
    proxyUrl = `http://127.0.0.1:${await listen(proxy)}`;
  });
  after(() => {
    for (const s of [api, proxy]) {
      s.closeAllConnections();
      s.close();
    }
  });

  it('answers larger than the cap are refused, through the proxy as directly', async () => {
    assert.ok(LIST.length > CAP);
    const direct = await jobSetReader(kubeConfig(apiUrl), { maxBytes: CAP })('ns', 'big');
    assert.equal(direct.kind, 'failed', 'read directly: over the cap');
    const viaProxy = await jobSetReader(kubeConfig(apiUrl, proxyUrl), { maxBytes: CAP })('ns', 'big');
    assert.ok(proxied > 0, 'the read went through the proxy');
    assert.equal(viaProxy.kind, 'failed', `through the proxy: a ${LIST.length}-byte answer over the ${CAP}-byte cap was ${viaProxy.kind === 'read' ? 'read in full' : viaProxy.kind}`);
  });

  it('through the proxy, the same Jobs are kept as directly: those with pods, their name and counts', async () => {
    const direct = await jobSetReader(kubeConfig(apiUrl))('ns', 'big');
    const viaProxy = await jobSetReader(kubeConfig(apiUrl, proxyUrl))('ns', 'big');
    assert.equal(direct.kind, 'read');
    assert.deepEqual(viaProxy, direct);
  });
});
