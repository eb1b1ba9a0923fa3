// An admission server on a real TLS port for the shutdown tests, and a validator that holds each
// review until released (a request in flight while the server closes).
import { after } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildAdmissionServer } from '../../src/webhook/server.ts';
import type { DrainTiming } from '../../src/webhook/connection-drain.ts';
import type { Validator } from '../../src/rules/contract.ts';
import { createMetrics } from '../../src/observability/metrics.ts';
import { captureLogs, fakeValidator, testCert } from './fixtures.ts';

export async function listening(
  drain: DrainTiming = { idleGraceMs: 200, lingerMs: 200 },
  validator: Validator = fakeValidator(),
): Promise<{ app: FastifyInstance; port: number }> {
  const app = await buildAdmissionServer(
    { tls: await testCert(), drain },
    { validator, logger: captureLogs().logger, metrics: createMetrics() },
  );
  await app.listen({ host: '127.0.0.1', port: 0 });
  after(() => app.close());
  return { app, port: (app.server.address() as { port: number }).port };
}

/** A validator that allows, once `release()` is called; `inHandler` settles when a review reached it. */
export function gatedValidator(): { validator: Validator; inHandler: Promise<void>; release: () => void } {
  let release!: () => void;
  let entered!: () => void;
  const inHandler = new Promise<void>((r) => (entered = r));
  const gate = new Promise<void>((r) => (release = r));
  const validator = fakeValidator(async () => {
    entered();
    await gate;
    return { causes: [], warnings: [] };
  });
  return { validator, inHandler, release };
}
