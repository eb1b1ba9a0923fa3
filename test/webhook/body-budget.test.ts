// The bound on request bodies held at once (src/webhook/body-budget.ts): the budget's rules, the
// real server holding at most two maximum-size bodies while many are sent at once (every one
// answered), and the server's peak RSS staying under a bound when 24 are sent together (without
// the bound it grows with their number: 708 MiB for 16, 1,053 MiB for 32; with it ~430 MiB for
// either, bench/PROFILE.md).
import { describe, it } from 'node:test';
import { waitFor } from '../harness/wait.ts';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { request } from 'node:https';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ByteBudget, MAX_SIZE_BODIES_IN_FLIGHT } from '../../src/webhook/body-budget.ts';
import { ADMISSION_BODY_LIMIT, buildAdmissionServer } from '../../src/webhook/server.ts';
import { createValidator } from '../../src/rules/validator.ts';
import { createLogger } from '../../src/observability/logger.ts';
import { createMetrics } from '../../src/observability/metrics.ts';
import { buildPolicy } from '../../src/rules/policy.ts';
import { generateSelfSigned } from '../../src/certs/selfsigned.ts';
import { VALIDATE_PATH } from '../../src/webhook/validate.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

describe('ByteBudget', () => {
  it('grants what fits, queues the rest first come first served, and gives back once', async () => {
    const budget = new ByteBudget(10);
    const a = await budget.acquire(6);
    const order: string[] = [];
    const b = budget.acquire(6).then((r) => (order.push('b'), r));
    const c = budget.acquire(1).then((r) => (order.push('c'), r)); // fits, but waits behind b
    await new Promise((r) => setImmediate(r));
    assert.deepEqual([budget.used, budget.waiting, order], [6, 2, []]);
    a();
    a(); // a second call gives nothing back
    const releaseB = await b;
    const releaseC = await c;
    assert.deepEqual([budget.used, budget.waiting, order], [7, 0, ['b', 'c']]);
    releaseB();
    releaseC();
    assert.deepEqual([budget.used, budget.peak], [0, 7]);
  });
  it('a request larger than the whole budget takes all of it, so it still runs alone', async () => {
    const budget = new ByteBudget(10);
    const release = await budget.acquire(50);
    assert.equal(budget.used, 10);
    release();
  });
});

/** An allowed UPDATE of about `bytes` (two equal objects with a long env). */
function updateOfSize(bytes: number): string {
  const base = JSON.parse(readFileSync(path.join(root, 'examples/allowed-numnodes-suspended.json'), 'utf8'));
  const perEntry = JSON.stringify({ name: 'VAR_000000', value: 'v'.repeat(40) }).length + 1;
  const n = Math.floor((bytes - 8_000) / 2 / perEntry);
  const env = Array.from({ length: n }, (_, i) => ({
    name: `VAR_${String(i).padStart(6, '0')}`,
    value: 'v'.repeat(40),
  }));
  base.request.object.spec.trainer.env = env;
  base.request.oldObject.spec.trainer.env = env;
  base.request.object.spec.trainer.numNodes = base.request.oldObject.spec.trainer.numNodes;
  return JSON.stringify(base);
}

function post(url: string, body: string): Promise<{ status: number; allowed: unknown }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url + VALIDATE_PATH,
      {
        method: 'POST',
        rejectUnauthorized: false,
        agent: false,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (text += d));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            allowed: (JSON.parse(text) as { response?: { allowed?: unknown } }).response?.allowed,
          }),
        );
      },
    );
    req.once('error', reject);
    req.end(body);
  });
}

const body = updateOfSize(ADMISSION_BODY_LIMIT - 64 * 1024);

describe('bodies in flight', () => {
  it(`the server holds at most ${MAX_SIZE_BODIES_IN_FLIGHT} maximum-size bodies at once and answers all 8 sent together, and small ones beside them`, async () => {
    const budget = new ByteBudget(MAX_SIZE_BODIES_IN_FLIGHT * ADMISSION_BODY_LIMIT);
    const app = await buildAdmissionServer(
      { tls: await generateSelfSigned(), bodyBudget: budget },
      {
        validator: createValidator({ policy: buildPolicy() }),
        logger: createLogger('silent'),
        metrics: createMetrics(),
      },
    );
    const url = await app.listen({ host: '127.0.0.1', port: 0 });
    try {
      const small = readFileSync(path.join(root, 'examples/allowed-numnodes-suspended.json'), 'utf8');
      const answers = await Promise.all([
        ...Array.from({ length: 8 }, () => post(url, body)),
        ...Array.from({ length: 8 }, () => post(url, small)),
      ]);
      assert.deepEqual(
        answers.map((a) => [a.status, a.allowed]),
        Array.from({ length: 16 }, () => [200, true]),
      );
      assert.ok(budget.peak <= budget.capacity, `peak ${budget.peak} over ${budget.capacity}`);
      assert.ok(budget.peak >= Buffer.byteLength(body), 'the large bodies went through the budget');
      // Given back on each response's 'close', which may come a moment after the client read it.
      await waitFor('the budget given back', () => budget.used === 0, { intervalMs: 10 });
    } finally {
      await app.close();
    }
  });

  it('24 maximum-size bodies sent together: the server answers every one and its peak RSS stays under 550 MiB', async () => {
    const child = spawn(process.execPath, [path.join(root, 'test/webhook/support/max-body-server.ts')], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      const url = await new Promise<string>((resolve, reject) => {
        child.stdout.once('data', (d: Buffer) => resolve(d.toString().trim()));
        child.once('exit', (code) => reject(new Error(`server exited with ${code}`)));
      });
      const answers = await Promise.all(Array.from({ length: 24 }, () => post(url, body)));
      assert.deepEqual(new Set(answers.map((a) => `${a.status} ${a.allowed}`)), new Set(['200 true']));
      const hwm = Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1]) / 1024;
      console.log(`# peak RSS with 24 maximum-size bodies sent at once: ${hwm.toFixed(0)} MiB`);
      assert.ok(hwm < 550, `peak RSS ${hwm.toFixed(0)} MiB`);
    } finally {
      child.kill('SIGTERM');
    }
  });
});
