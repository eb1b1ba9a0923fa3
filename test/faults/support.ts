// What the fault suites share: the admission server as `serve` builds it, with the upstream
// TrainJob CRD (schema, CRD rules and the table), answering through Fastify's inject().
import assert from 'node:assert/strict';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadPolicyFromFile } from '../../src/rules/crd-policy.ts';
import { createLogger } from '../../src/observability/logger.ts';
import { createMetrics } from '../../src/observability/metrics.ts';
import { buildAdmissionServer } from '../../src/webhook/server.ts';
import { createValidator } from '../../src/rules/validator.ts';
import { MUTATE, VALIDATE, testCert } from '../webhook/fixtures.ts';

export { MUTATE, VALIDATE } from '../webhook/fixtures.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const UPSTREAM_TRAINJOB_CRD = path.join(root, 'upstream/crds/trainer.kubeflow.org_trainjobs.yaml');

/**
 * How many generated cases a property runs: FAULT_CASES (the long form, `npm run test:faults`),
 * else `short` (the form `npm test` runs in CI).
 */
export function faultCases(short: number): number {
  if (!longForm()) return short;
  return Number(process.env.FAULT_CASES);
}

/** Whether this is the long form (`npm run test:faults`); checks FAULT_CASES. */
export function longForm(): boolean {
  const raw = process.env.FAULT_CASES;
  if (raw === undefined || raw === '') return false;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n <= 0)
    throw new Error(`FAULT_CASES must be a positive integer, got ${JSON.stringify(raw)}`);
  return true;
}

export interface Answer {
  statusCode: number;
  body: string;
  json: Record<string, any> | undefined;
}

/** Every log line is written (so formatting runs) and dropped: a suite of 100,000 requests keeps none. */
export function discardingLogger() {
  let lines = 0;
  const logger = createLogger('debug', { write: () => void lines++ });
  return { logger, lineCount: () => lines };
}

export async function crdServer() {
  const policy = await loadPolicyFromFile(UPSTREAM_TRAINJOB_CRD);
  const { logger, lineCount } = discardingLogger();
  const metrics = createMetrics();
  const app = await buildAdmissionServer(
    { tls: await testCert() },
    { validator: createValidator({ policy }), logger, metrics, now: () => new Date('2026-01-02T03:04:05Z') },
  );
  const send = async (url: string, payload: string): Promise<Answer> => {
    const res = await app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json' }, payload });
    let json: Record<string, any> | undefined;
    try {
      json = res.json();
    } catch {
      json = undefined;
    }
    return { statusCode: res.statusCode, body: res.body, json };
  };
  return {
    app,
    metrics,
    lineCount,
    send,
    validate: (p: string) => send(VALIDATE, p),
    mutate: (p: string) => send(MUTATE, p),
  };
}

/**
 * What every answer to hostile input must be: a 4xx with an error message, or a 200
 * AdmissionReview whose response carries the uid and a decision; never a 5xx, never a stack
 * overflow reported in-band.
 */
export function assertWellFormedAnswer(answer: Answer, context: string): void {
  const where = `${context}: ${answer.statusCode} ${answer.body.slice(0, 300)}`;
  assert.ok(answer.statusCode < 500, where);
  assert.ok(answer.json !== undefined, `not JSON: ${where}`);
  if (answer.statusCode !== 200) {
    assert.ok(answer.statusCode >= 400, where);
    assert.equal(typeof answer.json.error, 'string', where);
    return;
  }
  const response = answer.json.response;
  assert.equal(answer.json.kind, 'AdmissionReview', where);
  assert.equal(typeof response?.uid, 'string', where);
  assert.equal(typeof response.allowed, 'boolean', where);
  assert.doesNotMatch(answer.body, /Maximum call stack size exceeded|RangeError/, where);
}
