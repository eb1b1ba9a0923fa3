// Review finding (helper "review-fp", fa48dae): the Jobs read behind the numNodes warning is capped
// in bytes (JOBS_READ_MAX_BYTES) "so a hostile or huge answer costs at most that"
// (src/webhook/jobset-read.ts), but jobsOf keeps one placeholder entry (three objects) for every list
// item, whether or not the item has pods. A JobList of tiny items under the cap (`0,` is two bytes)
// then keeps ~50 times its size in heap: 8 MiB made 4.2 M entries, ~500 MiB of heap and ~1.8 s of
// blocked event loop, beyond the deployment's 512Mi limit. The warning uses only Jobs that have pods
// (podsOfJobs drops the others), so keeping only those loses nothing. A loopback server stands in
// for the API server; memory is compared after forced collections, nothing is timed.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { it } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { jobSetReader } from '../../src/webhook/jobset-read.ts';
import { apiClient } from '../../src/cluster/api-request.ts';
import { kubeConfigConnection } from '../../src/cluster/kubeconfig-connection.ts';
import { jobSetPodsWarnings } from '../../src/rules/jobset-pods.ts';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const CAP = 1024 * 1024;

it('an answer under the byte cap keeps about that much memory, not one entry per pod-less item', async () => {
  // As many items as fit under the cap; none has pods.
  const count = Math.floor((CAP - 16) / 2);
  const body = Buffer.from(`{"items":[${'0,'.repeat(count - 1)}0]}`);
  assert.ok(body.length <= CAP);
  // The warm-up read gets an empty list; the read under test the tiny items.
  const server = createServer((req, res) => {
    const answer = req.url?.includes('tiny-items') ? body : Buffer.from('{"items":[]}');
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': answer.length }).end(answer);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: `http://127.0.0.1:${(server.address() as { port: number }).port}`, skipTLSVerify: true }],
      users: [{ name: 'u', token: 't' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    const read = jobSetReader(apiClient(kubeConfigConnection(kc)), { maxBytes: CAP, timeoutMs: 60_000 });
    // One read first, so the pool, client-node's agent and the modules are in the baseline.
    assert.equal((await read('ns', 'warm-up')).kind, 'read');
    gc();
    const baseline = process.memoryUsage().heapUsed;
    const result = await read('ns', 'tiny-items');
    gc();
    const retained = process.memoryUsage().heapUsed - baseline;
    assert.equal(result.kind, 'read');
    assert.deepEqual(jobSetPodsWarnings(result, 'ns/tiny-items'), [], 'no Job has pods: nothing to warn about');
    assert.ok(retained < 4 * CAP, `the read of a ${body.length}-byte answer keeps ${(retained / 2 ** 20).toFixed(1)} MiB of heap`);
  } finally {
    server.closeAllConnections();
    server.close();
  }
});
