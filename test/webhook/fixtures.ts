// Shared test fixtures: realistic TrainJobs and AdmissionReviews, a fake Validator, a test
// certificate, and an admission server with captured logs and its own metrics.
import type { AdmissionInput, Decision, Validator } from '../../src/rules/contract.ts';
import type { HandoffSender } from '../../src/webhook/handoff-sender.ts';
import { createLogger } from '../../src/observability/logger.ts';
import type { Logger } from '../../src/observability/logger.ts';
import { createMetrics } from '../../src/observability/metrics.ts';
import type { WebhookMetrics } from '../../src/observability/metrics.ts';
import { buildAdmissionServer } from '../../src/webhook/server.ts';
import type { KeyPair } from '../../src/certs/keypair.ts';
import { generateSelfSigned } from '../../src/certs/selfsigned.ts';
import { request } from 'node:https';
import type { KeyPairPem } from '../harness/pki.ts';

export const VALIDATE = '/validate-trainer-kubeflow-org-v1alpha1-trainjob';
export const MUTATE = '/mutate-trainer-kubeflow-org-v1alpha1-trainjob';

export function trainJob(
  spec: Record<string, unknown> = {},
  meta: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    apiVersion: 'trainer.kubeflow.org/v1alpha1',
    kind: 'TrainJob',
    metadata: {
      name: 'my-job',
      namespace: 'team-a',
      uid: '6f1c2a4e-0d7b-4a51-9a57-1f3c0b9e2d10',
      resourceVersion: '48213',
      generation: 3,
      ...meta,
    },
    spec: {
      runtimeRef: { apiGroup: 'trainer.kubeflow.org', kind: 'ClusterTrainingRuntime', name: 'torch-distributed' },
      trainer: { image: 'ghcr.io/acme/train:1.0', numNodes: 1 },
      suspend: true,
      managedBy: 'trainer.kubeflow.org/trainjob-controller',
      ...spec,
    },
  };
}

export interface ReviewOptions {
  uid?: string;
  apiVersion?: string;
  object?: unknown;
  oldObject?: unknown;
  dryRun?: boolean;
  kind?: unknown;
}

export function review(operation: string, options: ReviewOptions = {}): Record<string, unknown> {
  const object = 'object' in options ? options.object : trainJob();
  const oldObject = 'oldObject' in options ? options.oldObject : operation === 'UPDATE' ? trainJob() : null;
  return {
    apiVersion: options.apiVersion ?? 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: options.uid ?? '705ab4f5-6393-11e8-b7cc-42010a800002',
      kind: 'kind' in options ? options.kind : { group: 'trainer.kubeflow.org', version: 'v1alpha1', kind: 'TrainJob' },
      resource: { group: 'trainer.kubeflow.org', version: 'v1alpha1', resource: 'trainjobs' },
      requestKind: { group: 'trainer.kubeflow.org', version: 'v1alpha1', kind: 'TrainJob' },
      requestResource: { group: 'trainer.kubeflow.org', version: 'v1alpha1', resource: 'trainjobs' },
      name: 'my-job',
      namespace: 'team-a',
      operation,
      userInfo: { username: 'alice@example.com', groups: ['system:authenticated'] },
      object,
      oldObject,
      dryRun: options.dryRun ?? false,
      options: null,
    },
  };
}

export interface FakeValidator extends Validator {
  calls: AdmissionInput[];
}

export function fakeValidator(
  decide: (input: AdmissionInput) => Decision | Promise<Decision> = () => ({ causes: [], warnings: [] }),
): FakeValidator {
  const calls: AdmissionInput[] = [];
  return {
    calls,
    async validate(input) {
      calls.push(input);
      return decide(input);
    },
    describe: () => 'fake validator',
  };
}

let cert: Promise<KeyPair> | undefined;
/** One certificate per test process: generation is cheap, but not free. */
export function testCert(): Promise<KeyPair> {
  cert ??= generateSelfSigned();
  return cert;
}

export interface CapturedLogger {
  logger: Logger;
  lines: Record<string, unknown>[];
}

export function captureLogs(): CapturedLogger {
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger('debug', {
    write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>),
  });
  return { logger, lines };
}

export interface TestServerOptions {
  validator?: Validator;
  handoff?: HandoffSender;
  now?: () => Date;
  bodyLimit?: number;
}

export async function testServer(options: TestServerOptions = {}) {
  const { logger, lines } = captureLogs();
  const metrics: WebhookMetrics = createMetrics();
  const validator = options.validator ?? fakeValidator();
  const app = await buildAdmissionServer(
    { tls: await testCert(), bodyLimit: options.bodyLimit },
    { validator, logger, metrics, handoff: options.handoff, now: options.now },
  );
  return { app, metrics, lines, logger, validator };
}

export async function post(
  app: Awaited<ReturnType<typeof testServer>>['app'],
  url: string,
  body: unknown,
  contentType = 'application/json',
) {
  const res = await app.inject({
    method: 'POST',
    url,
    headers: { 'content-type': contentType },
    payload: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { statusCode: res.statusCode, json: res.json() as Record<string, any> };
}

/**
 * POSTs `body` to the validating path of a listening webhook over HTTPS, as a pod would: with no
 * client certificate unless `client` is given. The status and text, or the connection's error.
 */
export function postOverTls(
  url: string,
  servingCa: string,
  body: unknown,
  client?: KeyPairPem,
): Promise<{ status: number; text: string } | { error: string }> {
  return new Promise((resolve) => {
    const req = request(
      url + VALIDATE,
      {
        method: 'POST',
        ca: servingCa,
        ...(client ? { cert: client.certPem, key: client.keyPem } : {}),
        headers: { 'content-type': 'application/json' },
        agent: false,
      },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
        res.on('error', (err) => resolve({ error: err.message }));
      },
    );
    req.on('error', (err: NodeJS.ErrnoException) => resolve({ error: err.code ?? err.message }));
    req.end(JSON.stringify(body));
  });
}
