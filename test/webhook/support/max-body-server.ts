// The admission server in a process of its own, for measuring its memory (body-budget.test.ts):
// the table alone, a throwaway certificate; prints its URL.
import { buildAdmissionServer } from '../../../src/webhook/server.ts';
import { createValidator } from '../../../src/rules/validator.ts';
import { createLogger } from '../../../src/observability/logger.ts';
import { createMetrics } from '../../../src/observability/metrics.ts';
import { buildPolicy } from '../../../src/rules/policy.ts';
import { generateSelfSigned } from '../../../src/certs/selfsigned.ts';

const tls = await generateSelfSigned();
const app = await buildAdmissionServer(
  { tls },
  { validator: createValidator({ policy: buildPolicy() }), logger: createLogger('silent'), metrics: createMetrics() },
);
process.stdout.write(`${await app.listen({ host: '127.0.0.1', port: 0 })}\n`);
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
