// One server for profiling (bench/PROFILE.md), started by bench/profile-load.ts or by hand:
//   node [--cpu-prof|--heap-prof] bench/profile-server.ts bare|table|embedded|upstream [--log info]
// `bare` is a Fastify TLS endpoint that parses JSON and answers a fixed AdmissionReview; the
// others are the real admission server with the real validator and the named policy. It prints
// its URL, then its pid, and exits cleanly on SIGTERM/SIGINT (so --cpu-prof writes its profile).
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Fastify from 'fastify';
import { generateSelfSigned } from '../src/certs/selfsigned.ts';
import { buildAdmissionServer } from '../src/webhook/server.ts';
import { createValidator } from '../src/rules/validator.ts';
import { createLogger } from '../src/observability/logger.ts';
import { createMetrics } from '../src/observability/metrics.ts';
import { loadEmbeddedPolicy, loadPolicyFromFile } from '../src/rules/crd-policy.ts';
import { buildPolicy } from '../src/rules/policy.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const UPSTREAM_CRD = path.join(root, 'upstream/crds/trainer.kubeflow.org_trainjobs.yaml');
const kind = process.argv[2] ?? 'table';
const logAt = process.argv.indexOf('--log');
const level = (logAt > 0 ? process.argv[logAt + 1] : 'silent') as 'silent' | 'info';
const tls = await generateSelfSigned();

async function policyFor(k: string) {
  if (k === 'table') return buildPolicy();
  if (k === 'embedded') return loadEmbeddedPolicy();
  if (k === 'upstream') return loadPolicyFromFile(UPSTREAM_CRD);
  throw new Error(`unknown server kind ${k}: bare, table, embedded or upstream`);
}

async function build() {
  if (kind === 'bare') {
    const app = Fastify({ https: { cert: tls.cert, key: tls.key }, bodyLimit: 7 * 1024 * 1024 });
    app.post('/validate-trainer-kubeflow-org-v1alpha1-trainjob', async (req) => {
      const uid = (req.body as { request?: { uid?: string } }).request?.uid ?? '';
      return { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid, allowed: true } };
    });
    return app;
  }
  const validator = createValidator({ policy: await policyFor(kind) });
  return buildAdmissionServer(
    { tls },
    { validator, logger: createLogger(level), metrics: createMetrics({ defaultMetrics: true }) },
  );
}

const app = await build();
const address = await app.listen({ host: '127.0.0.1', port: 0 });
process.stdout.write(`${address}\n`);
const stop = () => void app.close().then(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
