// SIGTERM under load: `serve` (a real process) is sent SIGTERM while AdmissionReviews flow on
// keep-alive connections and on new ones. Every request the server decided reaches its client
// (zero dropped), every connection the server had accepted gets its answers, and the process exits
// 0 on its own within its drain timeout (25 s; a drain that outlasts it exits 1). What fails is
// only what the server never accepted: a connection refused once the listener is closed, or a new
// one the kernel resets because it still sat in the listen backlog when the listener closed (Node
// keeps an accepted connection through close(), even mid-handshake). The API server would not
// retry either (client-go retries a POST on no connection error), which is why the Deployment's
// preStop sleep lets the pod's endpoint go before SIGTERM: no new connection comes by then.
// Short form in `npm test`: one run; `npm run test:faults`: five.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { admissionClient, load, startServeProcess, UPSTREAM_CRD } from './serve-process.ts';
import { longForm } from './support.ts';

const RUNS = longForm() ? 5 : 1;

describe('SIGTERM under load', { timeout: 60_000 * RUNS }, () => {
  for (let run = 1; run <= RUNS; run++) {
    it(`run ${run}: every decided request is answered, the others were never accepted, and the process exits 0`, async (t) => {
      const dir = await mkdtemp(path.join(tmpdir(), 'tjw-sigterm-load-'));
      after(() => rm(dir, { recursive: true, force: true }));
      const serve = await startServeProcess(['--crd', UPSTREAM_CRD], dir);
      after(() => serve.child.kill('SIGKILL'));

      const clients = [
        ...Array.from({ length: 4 }, () => admissionClient({ port: serve.port })),
        admissionClient({ port: serve.port, keepAlive: false }),
      ];
      after(() => clients.forEach((c) => c.close()));
      // Each loop ends at its first refused connection: the listener is closed.
      const traffic = load(clients, `run${run}`, (r) => !r.ok && r.code === 'ECONNREFUSED');
      await traffic.progress(100 + 50 * run);
      const sentBeforeSignal = traffic.results.length;
      serve.child.kill('SIGTERM');
      const exit = await serve.exited;
      await traffic.done();

      assert.deepEqual(exit, { code: 0, signal: null }, 'exited 0 on its own (within the drain timeout)');
      assert.ok(serve.lines.some((l) => l.msg === 'shut down'));
      const answered = new Set(
        traffic.results
          .filter(({ uid, result }) => result.ok && result.status === 200 && result.uid === uid)
          .map(({ uid }) => uid),
      );
      const dropped = [...serve.decidedUids()].filter((uid) => !answered.has(uid));
      assert.deepEqual(dropped, [], 'decided by the server but never answered to the client');
      const failures = traffic.results.filter(({ result }) => !result.ok || result.status !== 200);
      // Never accepted: refused once the listener is closed, or reset by the kernel while still in
      // the listen backlog when it closed (a new connection, its TLS handshake not even begun on
      // the server's side). In a cluster neither happens: the pod's preStop sleep lets its endpoint
      // go before SIGTERM, so no new connection arrives by then.
      const neverAccepted = (r: (typeof failures)[number]['result']) =>
        !r.ok && (r.code === 'ECONNREFUSED' || (r.code === 'ECONNRESET' && !r.reused && !r.handshaken));
      const otherwise = failures.filter(({ result }) => !neverAccepted(result));
      assert.deepEqual(
        otherwise.slice(0, 5),
        [],
        `${otherwise.length} requests failed on a connection the server had accepted`,
      );
      const reset = failures.filter(({ result }) => !result.ok && result.code === 'ECONNRESET').map(({ uid }) => uid);
      assert.deepEqual(
        reset.filter((uid) => serve.decidedUids().has(uid)),
        [],
        'no reset request was decided',
      );
      if (reset.length)
        t.diagnostic(`${reset.length} new connection(s) reset in the listen backlog as it closed: ${reset.join(', ')}`);
      assert.ok(traffic.results.length > sentBeforeSignal, 'requests were still being sent when the signal came');
      assert.equal(
        failures.filter(({ result }) => !result.ok && result.code === 'ECONNREFUSED').length,
        clients.length,
        'each client ends on one refused connection',
      );
    });
  }
});
