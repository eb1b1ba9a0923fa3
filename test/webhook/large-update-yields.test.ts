// An UPDATE with 60,000 env entries (~5 MB) takes the embedded CRD's checks most of a second. It
// is decided in stages, so other requests are answered while it is in progress, rather than
// after it (src/rules/decide.ts). A property of order, not a timing threshold: small reviews sent
// once the large one's decision has started must get answers before the large one does.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, request } from 'node:https';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildAdmissionServer } from '../../src/webhook/server.ts';
import { createValidator } from '../../src/rules/validator.ts';
import type { Validator } from '../../src/rules/contract.ts';
import { createLogger } from '../../src/observability/logger.ts';
import { createMetrics } from '../../src/observability/metrics.ts';
import { loadEmbeddedPolicy } from '../../src/rules/crd-policy.ts';
import { decideUpdate, decideUpdateYielding } from '../../src/rules/decide.ts';
import { generateSelfSigned } from '../../src/certs/selfsigned.ts';
import { VALIDATE_PATH } from '../../src/webhook/validate.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const small = readFileSync(path.join(root, 'examples/allowed-numnodes-suspended.json'), 'utf8');

function large(): string {
  const review = JSON.parse(small);
  const env = Array.from({ length: 60_000 }, (_, i) => ({ name: `VAR_${i}`, value: `value-${i}` }));
  review.request.uid = 'large';
  review.request.object.spec.trainer.env = env;
  review.request.oldObject.spec.trainer.env = env;
  return JSON.stringify(review);
}

function post(url: string, body: string, agent?: Agent): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const req = request(
      url + VALIDATE_PATH,
      {
        method: 'POST',
        rejectUnauthorized: false,
        agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (text += d));
        res.on('end', () => resolve((JSON.parse(text) as { response?: { allowed?: unknown } }).response?.allowed));
      },
    );
    req.once('error', reject);
    req.end(body);
  });
}

describe('a large UPDATE does not hold up other requests', () => {
  it('small reviews sent while a 60,000-entry UPDATE is being decided are answered before it', async () => {
    const policy = await loadEmbeddedPolicy();
    const inner = createValidator({ policy });
    let started!: () => void;
    const decisionStarted = new Promise<void>((resolve) => (started = resolve));
    // Says when the large review's decision begins (the body is read and parsed by then).
    const validator: Validator = {
      validate: (input) => {
        if (input.uid === 'large') started();
        return inner.validate(input);
      },
      describe: () => inner.describe(),
    };
    const app = await buildAdmissionServer(
      { tls: await generateSelfSigned() },
      { validator, logger: createLogger('silent'), metrics: createMetrics() },
    );
    const url = await app.listen({ host: '127.0.0.1', port: 0 });
    try {
      // The small reviews' connection is open before the large one starts: what is measured is
      // whether they are answered, not whether a TLS handshake completes in between.
      const smallAgent = new Agent({ keepAlive: true, maxSockets: 1, rejectUnauthorized: false });
      await post(url, small, smallAgent);
      const order: string[] = [];
      const big = post(url, large()).then((allowed) => order.push(`large ${allowed}`));
      await decisionStarted;
      let done = false;
      void big.then(() => (done = true));
      // One small review at a time until the large one is answered.
      while (!done) {
        const allowed = await post(url, small, smallAgent);
        order.push(`small ${allowed}`);
      }
      await big;
      smallAgent.destroy();
      const answeredBefore = order.indexOf('large true');
      assert.ok(answeredBefore > 0, `no small review was answered before the large one: ${order.join(', ')}`);
      assert.deepEqual(new Set(order), new Set(['small true', 'large true']));
    } finally {
      await app.close();
    }
  });

  it('the staged decision is the same decision', async () => {
    const policy = await loadEmbeddedPolicy();
    const review = JSON.parse(large()).request;
    for (const sliceMs of [0, 10])
      assert.deepEqual(
        await decideUpdateYielding(policy, review.object, review.oldObject, sliceMs),
        decideUpdate(policy, review.object, review.oldObject),
      );
  });
});
