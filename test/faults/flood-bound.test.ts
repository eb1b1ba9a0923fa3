// What bounds the webhook under a flood of hostile AdmissionReviews (issue 18), each case a cause
// measured on the old code (bench/history/2026-12-03-issue-18.md, "Hostile flood"): unbounded field errors, deep text
// parsed before it was refused, decisions that together outgrow the heap, whole answers handed to
// TLS, and log lines that carry whatever the request says. `npm run bench:flood` floods a real
// `serve` with all of them at once.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Writable } from 'node:stream';
import { request } from 'node:https';
import { connect } from 'node:tls';
import { setTimeout as sleep } from 'node:timers/promises';
import { review, trainJob, testCert } from '../webhook/fixtures.ts';
import { crdServer, VALIDATE, UPSTREAM_TRAINJOB_CRD } from './support.ts';
import { loadPolicyFromFile } from '../../src/rules/crd-policy.ts';
import { createValidator } from '../../src/rules/validator.ts';
import { createLogger } from '../../src/observability/logger.ts';
import { createMetrics } from '../../src/observability/metrics.ts';
import { buildAdmissionServer } from '../../src/webhook/server.ts';
import { DecisionBudget } from '../../src/webhook/decision-budget.ts';

/** The admission server as `serve` builds it, with the upstream CRD and these settings. */
async function policyServer(config: { decisionBudget?: DecisionBudget } = {}, logger = createLogger('silent')) {
  const policy = await loadPolicyFromFile(UPSTREAM_TRAINJOB_CRD);
  return buildAdmissionServer(
    { tls: await testCert(), ...config },
    { validator: createValidator({ policy }), logger, metrics: createMetrics() },
  );
}

type Server = Awaited<ReturnType<typeof policyServer>>;

/** A logger at info whose lines are kept. */
function capturingLogger() {
  const lines: string[] = [];
  const logger = createLogger(
    'info',
    new Writable({
      write(chunk, _e, cb) {
        lines.push(String(chunk));
        cb();
      },
    }) as never,
  );
  return { lines, logger };
}

const postJson = (app: Server, payload: string) =>
  app.inject({ method: 'POST', url: VALIDATE, payload, headers: { 'content-type': 'application/json' } });

const withOptions = (options: string) =>
  JSON.stringify(review('CREATE')).replace('"options":null', `"options":${options}`);

describe('field errors are capped', () => {
  it('100,000 wrong-typed command items (a 200 KiB body): 1,000 causes and a last one saying the list is cut', async () => {
    const server = await crdServer();
    const body = JSON.stringify(
      review('CREATE', { object: trainJob({ trainer: { image: 'x', numNodes: 1, command: Array(100_000).fill(1) } }) }),
    );
    const answer = await server.validate(body);
    assert.equal(answer.statusCode, 200);
    const status = answer.json!.response.status;
    assert.equal(status.code, 422);
    assert.equal(status.details.causes.length, 1001);
    assert.deepEqual(status.details.causes.at(-1), {
      message: 'too many errors, the list is truncated: the first 1000 are listed',
    });
    assert.match(status.message, /, too many errors, the list is truncated: the first 1000 are listed\]$/);
    assert.ok(answer.body.length < 1024 * 1024, `answer of ${answer.body.length} chars`);
  });
});

describe('text nested too deep is refused before it is parsed', () => {
  it('7 MiB of "[" in a review is an in-band 400 "exceeded max depth" naming the position, holding no parsed levels', async () => {
    const server = await crdServer();
    const levels = 3_500_000;
    const body = withOptions('['.repeat(levels) + ']'.repeat(levels));
    globalThis.gc?.();
    const before = process.memoryUsage().heapUsed;
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().heapUsed)), 1);
    const answer = await server.validate(body);
    clearInterval(sampler);
    peak = Math.max(peak, process.memoryUsage().heapUsed);
    // The review's envelope is read from the text: answered in-band, its uid echoed.
    assert.equal(answer.statusCode, 200);
    assert.equal(answer.json!.response.status.code, 400);
    // The position of the bracket that opens level 10,003: the parser never ran.
    assert.match(
      answer.json!.response.status.message,
      /^not a valid AdmissionReview: request body is not valid JSON: exceeded max depth: .* \(at position \d+\)$/,
    );
    // Parsed, the levels held ~190 MiB; scanned, the text alone (7 MiB, twice over in inject()).
    assert.ok(peak - before < 64 * 1024 * 1024, `heap grew ${((peak - before) / 1048576).toFixed(0)} MiB`);
  });
});

describe('the decision budget', () => {
  it('a body whose decision would hold more than a request may (7 MiB of {} values) is refused with 413', async () => {
    const app = await policyServer({ decisionBudget: new DecisionBudget() });
    const body = withOptions(`[${Array(2_000_000).fill('{}').join(',')}]`);
    const res = await postJson(app, body);
    assert.equal(res.statusCode, 413);
    assert.match(res.json().error, /^request body is too heavy to decide/);
  });

  it('a small heavy body that does not fit is shed with 429 and Retry-After: 1; a light review still fits in the reserve', async () => {
    const budget = new DecisionBudget(32 * 1024 * 1024, 16 * 1024 * 1024);
    const app = await policyServer({ decisionBudget: budget });
    // 100,000 values in ~200 KiB weigh ~12 MiB: under the 16 MiB heavy bodies may use, once.
    assert.equal(
      budget.take(10 * 1024 * 1024, false, () => {}),
      undefined,
    );
    const heavy = withOptions(`[${Array(100_000).fill(1).join(',')}]`);
    const res = await postJson(app, heavy);
    assert.equal(res.statusCode, 429);
    assert.equal(res.headers['retry-after'], '1');
    const light = await postJson(app, JSON.stringify(review('UPDATE')));
    assert.equal(light.statusCode, 200);
    assert.equal(light.json().response.allowed, true);
    budget.give(10 * 1024 * 1024);
    assert.equal(budget.used, 0);
  });
});

describe('a client that leaves while its body waits', () => {
  it('takes its body out of the queue: bodies sent and abandoned behind a held budget do not pile up, nor are they decided', async () => {
    const { lines, logger } = capturingLogger();
    const budget = new DecisionBudget(32 * 1024 * 1024, 16 * 1024 * 1024);
    const app = await policyServer({ decisionBudget: budget }, logger);
    const url = new URL(await app.listen({ host: '127.0.0.1', port: 0 }));
    try {
      // What a slow reader of a heavy answer holds: most of the room heavy bodies may use.
      const held = 10 * 1024 * 1024;
      assert.equal(
        budget.take(held, false, () => {}),
        undefined,
      );
      // Over 256 KiB (so it may wait), ~7.5 MiB of weight: it does not fit beside what is held.
      const body = withOptions(JSON.stringify({ pad: 'p'.repeat(200_000), values: Array(60_000).fill(1) }));
      const abandoned = Array.from({ length: 3 }, () => {
        const socket = connect({ host: url.hostname, port: Number(url.port), rejectUnauthorized: false });
        socket.on('error', () => {});
        socket.write(
          `POST ${VALIDATE} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`,
        );
        socket.write(body);
        return socket;
      });
      for (let i = 0; i < 500 && budget.waiting < abandoned.length; i++) await sleep(10);
      assert.equal(budget.waiting, abandoned.length, 'all three read and waiting');
      for (const socket of abandoned) socket.destroy();
      for (let i = 0; i < 200 && budget.waiting > 0; i++) await sleep(10);
      assert.equal(budget.waiting, 0, 'the abandoned bodies are still queued, their text held');
      budget.give(held);
      await sleep(100);
      assert.equal(budget.used, 0);
      const decided = lines.filter((l) => JSON.parse(l).msg === 'admission');
      assert.equal(decided.length, 0, 'decided for clients that had left');
    } finally {
      await app.close();
    }
  });
});

describe('heavy decisions take turns', () => {
  it('a light review sent after four heavy ones is answered first', async () => {
    // Room for all four: only the order of the decisions is under test.
    const app = await policyServer({ decisionBudget: new DecisionBudget(1024 * 1024 * 1024, 16 * 1024 * 1024) });
    // 200,000 {} in a typed list: ~0.6 MiB, ~49 MiB of weight, a few hundred ms to decide each.
    const heavy = JSON.stringify(
      review('CREATE', {
        object: trainJob({ trainer: { image: 'x', numNodes: 1, command: Array(200_000).fill({}) } }),
      }),
    );
    const order: string[] = [];
    const sent = [0, 1, 2, 3].map((i) => postJson(app, heavy).then((r) => order.push(`heavy ${i}: ${r.statusCode}`)));
    sent.push(postJson(app, JSON.stringify(review('UPDATE'))).then((r) => order.push(`light: ${r.statusCode}`)));
    await Promise.all(sent);
    assert.equal(order[0], 'light: 200', order.join(', '));
  });
});

describe('large answers', () => {
  it('an answer of 3 MiB goes out in slices and arrives whole (a surrogate pair at every slice edge)', async () => {
    const app = await policyServer();
    // What the server hands its socket: slices, not one write of the whole answer.
    const writes: number[] = [];
    app.addHook('onRequest', (_req, reply, done) => {
      const res = reply.raw;
      const write = res.write.bind(res) as (...args: unknown[]) => boolean;
      res.write = ((chunk: Buffer, ...rest: unknown[]) => {
        writes.push(chunk.length);
        return write(chunk, ...rest);
      }) as typeof res.write;
      const end = res.end.bind(res) as (...args: unknown[]) => typeof res;
      res.end = ((chunk?: unknown, ...rest: unknown[]) => {
        if (Buffer.isBuffer(chunk) || typeof chunk === 'string') writes.push(Buffer.byteLength(chunk));
        return end(chunk, ...rest);
      }) as typeof res.end;
      done();
    });
    const url = await app.listen({ host: '127.0.0.1', port: 0 });
    try {
      // The uid is echoed: 'a' then pairs, so that some slice boundary falls inside a pair.
      const uid = 'a' + '\u{1d54f}'.repeat(1_500_000);
      const body = JSON.stringify(review('CREATE', { uid }));
      const answer = await new Promise<{ status: number; text: string; chunks: number }>((resolve, reject) => {
        const req = request(
          url + VALIDATE,
          { method: 'POST', rejectUnauthorized: false, headers: { 'content-type': 'application/json' } },
          (res) => {
            const parts: Buffer[] = [];
            res.on('data', (c: Buffer) => {
              parts.push(c);
            });
            res.on('end', () =>
              resolve({ status: res.statusCode!, text: Buffer.concat(parts).toString('utf8'), chunks: parts.length }),
            );
          },
        );
        req.on('error', reject);
        req.end(body);
      });
      assert.equal(answer.status, 200);
      assert.equal(JSON.parse(answer.text).response.uid, uid);
      assert.ok(writes.length >= 40, `${writes.length} writes`);
      assert.ok(Math.max(...writes) <= 4 * 64 * 1024, `the largest write: ${Math.max(...writes)} bytes`);
    } finally {
      await app.close();
    }
  });
});

describe('log lines', () => {
  it('a 1 MiB uid is logged clipped to 256 characters, with its length', async () => {
    const { lines, logger } = capturingLogger();
    const app = await policyServer({}, logger);
    const uid = 'u'.repeat(1 << 20);
    const res = await postJson(app, JSON.stringify(review('CREATE', { uid })));
    assert.equal(res.json().response.uid, uid);
    const line = lines.map((l) => JSON.parse(l)).find((l) => l.msg === 'admission');
    assert.equal(line.reqId, `${'u'.repeat(256)}...(${1 << 20} chars)`);
    assert.ok(lines.join('').length < 4096);
  });
});
