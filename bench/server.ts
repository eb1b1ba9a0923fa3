// A server under benchmark, in its own process so the load generator does not share its CPU.
//
//   node bench/server.ts bare|table|in-cluster|embedded|crd CERT KEY [CRD_FILE]
//
// `bare` is a Fastify TLS endpoint that parses the JSON body and answers a fixed AdmissionReview
// (the baseline); the others are the real admission server (src/webhook/server.ts) with the real
// validator, deciding by the rule table alone (`table`), by the rule table alone behind the
// embedded default CRD's schema (`in-cluster`: what `serve` following the cluster's CRD decides,
// the whole object being the API server's to check), with the embedded default CRD checked whole
// (what `serve` uses offline) or with a CRD file. Prints its URL once listening.
import { readFileSync } from 'node:fs';
import Fastify from 'fastify';
import { buildAdmissionServer, ADMISSION_BODY_LIMIT } from '../src/webhook/server.ts';
import { createValidator } from '../src/rules/validator.ts';
import { createLogger } from '../src/observability/logger.ts';
import { createMetrics } from '../src/observability/metrics.ts';
import { loadEmbeddedPolicy, loadPolicyFromFile } from '../src/rules/crd-policy.ts';
import { buildPolicy } from '../src/rules/policy.ts';

const [kind, certFile, keyFile, crdFile] = process.argv.slice(2);
if (
  !['bare', 'table', 'in-cluster', 'embedded', 'crd'].includes(kind ?? '') ||
  !certFile ||
  !keyFile ||
  (kind === 'crd' && !crdFile)
) {
  process.stderr.write('usage: node bench/server.ts bare|table|in-cluster|embedded|crd CERT KEY [CRD_FILE]\n');
  process.exit(2);
}
const tls = { cert: readFileSync(certFile), key: readFileSync(keyFile) };

function bare() {
  const app = Fastify({ https: tls, bodyLimit: ADMISSION_BODY_LIMIT });
  app.post('/validate-trainer-kubeflow-org-v1alpha1-trainjob', async (req) => {
    const uid = (req.body as { request?: { uid?: string } }).request?.uid ?? '';
    return { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid, allowed: true } };
  });
  return app;
}

async function webhook() {
  const policy =
    kind === 'table'
      ? buildPolicy()
      : kind === 'embedded' || kind === 'in-cluster'
        ? await loadEmbeddedPolicy()
        : await loadPolicyFromFile(crdFile);
  const validator = createValidator({ policy, scope: kind === 'in-cluster' ? 'table' : 'whole-object' });
  return buildAdmissionServer({ tls }, { validator, logger: createLogger('silent'), metrics: createMetrics() });
}

const app = kind === 'bare' ? bare() : await webhook();
const address = await app.listen({ host: '127.0.0.1', port: 0 });
process.stdout.write(`${address}\n`);
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
