import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, it } from 'node:test';
import { createHandoffSender } from '../../src/webhook/handoff-sender.ts';
import { counterTotal, createMetrics } from '../../src/observability/metrics.ts';
import { VALIDATE, captureLogs, fakeValidator, post, review } from './fixtures.ts';
import { buildAdmissionServer } from '../../src/webhook/server.ts';
import { testCert } from './fixtures.ts';

/** A stand-in for the reconciler's hint receiver on 127.0.0.1. */
async function receiver(
  handler: (req: IncomingMessage, res: ServerResponse, body: string) => void = (_q, res) => res.end(),
) {
  const bodies: unknown[] = [];
  const raws: string[] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c));
    req.on('end', () => {
      raws.push(body);
      bodies.push(JSON.parse(body));
      handler(req, res, body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/hints`);
  after(() => {
    server.closeAllConnections();
    server.close();
  });
  return { url, bodies, raws };
}

// A hint's timeout far longer than a loaded machine's pauses, where the test expects an answer.
async function setup(url: URL, timeoutMs = 30_000) {
  const { logger, lines } = captureLogs();
  const metrics = createMetrics();
  const handoff = createHandoffSender({ url, timeoutMs, logger, metrics });
  const app = await buildAdmissionServer(
    { tls: await testCert() },
    { validator: fakeValidator(), logger, metrics, handoff },
  );
  return { app, metrics, handoff, lines };
}

describe('hand-off sender', () => {
  it('an admitted UPDATE posts {namespace, name, uid, generation}; a dry run posts nothing', async () => {
    const r = await receiver();
    const { app, metrics, handoff, lines } = await setup(r.url);

    const dry = await post(app, VALIDATE, review('UPDATE', { dryRun: true }));
    assert.equal(dry.json.response.allowed, true);
    await handoff.idle();
    assert.equal(await counterTotal(metrics.handoffHints), 0, 'a dry run sends no hint');
    assert.equal(r.bodies.length, 0);

    const real = await post(app, VALIDATE, review('UPDATE'));
    assert.deepEqual(real.json, dry.json, 'the dry run got the same answer');
    await handoff.idle();
    assert.deepEqual(r.bodies, [
      { namespace: 'team-a', name: 'my-job', uid: '6f1c2a4e-0d7b-4a51-9a57-1f3c0b9e2d10', generation: 3 },
    ]);
    assert.deepEqual(
      (await metrics.handoffHints.get()).values.map((v) => [v.labels.result, v.value]),
      [['delivered', 1]],
    );
    assert.ok(lines.some((l) => l.msg === 'hand-off hint sent' && l.name === 'my-job'));
  });

  it('a receiver that is down: the answer is unaffected, the failure is logged and counted', async () => {
    const r = await receiver();
    const down = new URL(r.url);
    down.port = '1'; // nothing listens on port 1
    const { app, metrics, handoff, lines } = await setup(down);
    const res = await post(app, VALIDATE, review('CREATE'));
    assert.equal(res.json.response.allowed, true);
    await handoff.idle();
    assert.deepEqual(
      (await metrics.handoffHints.get()).values.map((v) => [v.labels.result, v.value]),
      [['failed', 1]],
    );
    assert.ok(lines.some((l) => l.msg === 'hand-off hint failed'));
  });

  it('a receiver that holds the hint: the answer does not wait for it', async () => {
    // The receiver answers only when the test lets it, and the hint's timeout is far away: an answer
    // that waited on the hint could never arrive, so getting one proves it did not wait.
    let release: (() => void) | undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const r = await receiver((_q, res) => void held.then(() => res.end()));
    const { app, metrics, handoff } = await setup(r.url, 60_000);
    const res = await post(app, VALIDATE, review('CREATE'));
    assert.equal(res.json.response.allowed, true);
    assert.equal(await counterTotal(metrics.handoffHints), 0, 'the hint was still in flight when the answer came');
    release!();
    await handoff.idle();
    assert.deepEqual(
      (await metrics.handoffHints.get()).values.map((v) => [v.labels.result, v.value]),
      [['delivered', 1]],
    );
  });

  it('a receiver that hangs: the hint times out, is logged and counted', async () => {
    const r = await receiver(() => {}); // never answers
    const { app, metrics, handoff, lines } = await setup(r.url, 200);
    const res = await post(app, VALIDATE, review('CREATE'));
    assert.equal(res.json.response.allowed, true);
    await handoff.idle();
    assert.equal(await counterTotal(metrics.handoffHints), 1);
    assert.equal(lines.find((l) => l.msg === 'hand-off hint failed')?.error, 'timed out');
  });

  it('a receiver answering 500 counts as failed', async () => {
    const r = await receiver((_q, res) => {
      res.statusCode = 500;
      res.end('no');
    });
    const { app, metrics, handoff } = await setup(r.url);
    await post(app, VALIDATE, review('CREATE'));
    await handoff.idle();
    assert.deepEqual(
      (await metrics.handoffHints.get()).values.map((v) => v.labels.result),
      ['failed'],
    );
  });

  it('writes generations beyond 2^53 exactly', async () => {
    const r = await receiver((_q, res) => res.end());
    const { logger } = captureLogs();
    const sender = createHandoffSender({ url: r.url, timeoutMs: 30_000, logger, metrics: createMetrics() });
    sender.send({ namespace: 'n', name: 'j', uid: 'u', generation: 2n ** 60n });
    await sender.idle();
    assert.equal(r.raws[0], '{"namespace":"n","name":"j","uid":"u","generation":1152921504606846976}');
  });
});
