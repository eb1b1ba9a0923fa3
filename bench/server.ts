// A server under benchmark, in its own process so the load generator does not share its CPU:
// `bare` is a Fastify TLS endpoint that parses the JSON body and answers a fixed AdmissionReview
// (the baseline); `webhook` is the real admission server with the real validator.
import Fastify from 'fastify';
import { generateSelfSigned } from '../src/tls/selfsigned.ts';
import { buildAdmissionServer } from '../src/server.ts';
import { createValidator } from '../src/validator.ts';
import { createLogger } from '../src/observability/logger.ts';
import { createMetrics } from '../src/observability/metrics.ts';
import { loadPolicyFromFile } from '../src/crd-policy.ts';
import { buildPolicy } from '../src/rules/policy.ts';

const [kind, crdFile] = process.argv.slice(2);
const tls = await generateSelfSigned();

async function bare() {
  const app = Fastify({ https: { cert: tls.cert, key: tls.key }, bodyLimit: 7 * 1024 * 1024 });
  app.post('/validate-trainer-kubeflow-org-v1alpha1-trainjob', async (req) => {
    const uid = (req.body as { request?: { uid?: string } }).request?.uid ?? '';
    return { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid, allowed: true } };
  });
  return app;
}

async function webhook() {
  const policy = crdFile ? await loadPolicyFromFile(crdFile) : buildPolicy();
  const validator = createValidator({ policy });
  return buildAdmissionServer({ tls }, { validator, logger: createLogger('silent'), metrics: createMetrics() });
}

const app = kind === 'bare' ? await bare() : await webhook();
const address = await app.listen({ host: '127.0.0.1', port: 0 });
process.stdout.write(`${address}\n`);
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
