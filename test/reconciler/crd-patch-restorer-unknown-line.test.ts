// The CRD patch restorer, against a loopback server that sends the TrainJob CRD of a Trainer line
// it does not know (a later Trainer: a spec.trainer field no known line has): nothing is written,
// one warning says why and what to do by hand, and trainjob_reconciler_crd_patch_restores_total
// counts it `refused`. The chart's v2.3.0 CRD, sent the same way, is patched (the control).
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { apiClient } from '../../src/cluster/api-request.ts';
import { directConnection } from '../../src/cluster/connection.ts';
import { crdPatchPlanner } from '../../src/commands/crd-patch-planner.ts';
import { createLogger } from '../../src/observability/logger.ts';
import { startCrdPatchRestorer } from '../../src/reconciler/crd-patch-restorer.ts';
import { createReconcilerMetrics } from '../../src/reconciler/metrics.ts';
import { trainJobCrdV230Object } from '../crd/fixtures.ts';
import { listen } from '../cluster/support/loopback.ts';
import { waitFor } from '../harness/wait.ts';

type Obj = Record<string, any>;
const V230 = trainJobCrdV230Object();
const live = (crd: unknown): Obj => {
  const out = structuredClone(crd) as Obj;
  out.metadata = { ...out.metadata, resourceVersion: '41', uid: 'u-1' };
  return out;
};
const laterTrainer = (): Obj => {
  const crd = live(V230);
  crd.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.trainer.properties.gpuSharing = {
    type: 'string',
  };
  return crd;
};

describe('the CRD patch restorer on a Trainer line it does not know', () => {
  let server: Server;
  let url = '';
  let crd: Obj = {};
  const writes: string[] = [];
  before(async () => {
    server = createServer((req, res) => {
      const u = new URL(req.url ?? '/', 'http://x');
      if (req.method === 'GET' && u.searchParams.get('watch') === 'true') {
        res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
        res.write(`${JSON.stringify({ type: 'ADDED', object: crd })}\n`);
        return; // held open, as a watch is
      }
      if (req.method === 'GET') return void res.writeHead(200).end(JSON.stringify(crd));
      writes.push(`${req.method} ${u.pathname}`);
      // A write answered with the object (a patch) or anything (an Event): the test counts them.
      req.resume();
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(crd)));
    });
    url = `http://127.0.0.1:${await listen(server)}`;
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });

  const run = async (sent: Obj, until: (lines: Obj[], metrics: string) => boolean) => {
    crd = sent;
    writes.length = 0;
    const lines: Obj[] = [];
    const logger = createLogger('info', { write: (line: string) => void lines.push(JSON.parse(line)) });
    const metrics = createReconcilerMetrics();
    const restorer = startCrdPatchRestorer({
      client: apiClient(directConnection({ server: url, insecureSkipTlsVerify: false })),
      planner: crdPatchPlanner,
      fieldManager: 'trainjob-webhook-crd-patch-restorer',
      logger,
      metrics,
      mayWrite: () => true,
      identity: 'test',
    });
    try {
      const text = async () => (await metrics.registry.metrics()) as string;
      await waitFor('the restorer decided', async () => until(lines, await text()), {
        timeoutMs: 20_000,
        intervalMs: 50,
      });
      // A moment more: a write would follow the decision at once.
      await new Promise((r) => setTimeout(r, 200));
      return { lines, metrics: await text() };
    } finally {
      restorer.stop();
    }
  };

  it('writes nothing, warns with the way out by hand, counts it refused', async () => {
    const { lines, metrics } = await run(laterTrainer(), (_, m) => m.includes('result="refused"'));
    assert.deepEqual(writes, [], 'no PATCH of the CRD, no Event');
    assert.match(metrics, /trainjob_reconciler_crd_patch_restores_total\{result="refused"\} 1/);
    assert.doesNotMatch(metrics, /result="restored"/);
    assert.match(metrics, /trainjob_reconciler_crd_patch_in_force 0/);
    const refusal = lines.filter((l) => /cannot be put back/.test(l.msg));
    assert.equal(refusal.length, 1, JSON.stringify(lines));
    assert.equal(refusal[0].level, 'warn');
    assert.match(refusal[0].msg, /nothing written: .*of no Trainer line this restorer knows/);
    assert.match(refusal[0].msg, /apply it by hand: .*trainjob-webhook rules --format crd-patch --crd crd\.yaml/);
  });

  it("the chart's v2.3.0 CRD, sent the same way, is patched (the control)", async () => {
    await run(live(V230), (_, m) => m.includes('result="restored"'));
    assert.ok(
      writes.includes('PATCH /apis/apiextensions.k8s.io/v1/customresourcedefinitions/trainjobs.trainer.kubeflow.org'),
      writes.join(', '),
    );
  });
});
