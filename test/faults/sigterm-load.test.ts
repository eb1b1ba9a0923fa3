// SIGTERM under load: `serve` (a real process) is sent SIGTERM while AdmissionReviews flow on
// keep-alive connections and on new ones. Every request the server decided reaches its client
// (zero dropped); every request that failed failed with a refused connection, which the API
// server retries on another endpoint; and the process exits 0 on its own, within its drain timeout
// (25 s; a drain that outlasts it exits 1). Short form in `npm test`: one run; `npm run
// test:faults`: five.
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
    it(`run ${run}: every decided request is answered, the others are refused connections, and the process exits 0`, async () => {
      const dir = await mkdtemp(path.join(tmpdir(), 'tjw-sigterm-load-'));
      after(() => rm(dir, { recursive: true, force: true }));
      const serve = await startServeProcess(['--crd', UPSTREAM_CRD], dir);
      after(() => serve.child.kill('SIGKILL'));

      const clients = [...Array.from({ length: 4 }, () => admissionClient({ port: serve.port })), admissionClient({ port: serve.port, keepAlive: false })];
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
      const answered = new Set(traffic.results.filter(({ uid, result }) => result.ok && result.status === 200 && result.uid === uid).map(({ uid }) => uid));
      const dropped = [...serve.decidedUids()].filter((uid) => !answered.has(uid));
      assert.deepEqual(dropped, [], 'decided by the server but never answered to the client');
      const failures = traffic.results.filter(({ result }) => !result.ok || result.status !== 200);
      const notRefused = failures.filter(({ result }) => result.ok || result.code !== 'ECONNREFUSED');
      assert.deepEqual(notRefused.slice(0, 5), [], `${notRefused.length} requests failed otherwise than by a refused connection`);
      assert.ok(traffic.results.length > sentBeforeSignal, 'requests were still being sent when the signal came');
      assert.equal(failures.length, clients.length, 'each client ends on one refused connection');
    });
  }
});
