// `serve --client-ca` beside the real kube-apiserver (issue 26 item 1, "only the API server drives
// admission"). The API server presents a client certificate to webhooks only when its
// AdmissionConfiguration's kubeConfigFile gives one for the webhook's host (here `127.0.0.1:PORT`,
// the host of the webhook configurations' url). Shown in order, on one control plane:
// configured on the webhook's side only, every TrainJob write is refused (failurePolicy: Fail)
// and the webhook's metric and log say why; once the API server is given the certificate, writes
// are answered as usual (admitted, denied); a direct client without the certificate, or with one
// another CA signed, cannot complete a handshake, and its review reaches nothing.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { stringify } from 'yaml';
import {
  controlPlaneAvailability,
  createCA,
  freePort,
  issueClientCert,
  startControlPlane,
  upstreamCrds,
  waitFor,
  type ControlPlane,
  type KeyPairPem,
} from '../harness/index.ts';
import { crdPatchOps } from '../../src/rules/generate/crd-patch.ts';
import { rulesFor } from '../../src/rules/table.ts';
import { detectTrainerLine } from '../../src/api/trainer-line-detect.ts';
import { registerWebhook, startWebhook, type WebhookProcess } from './support/webhook.ts';
import { patchedCrd, trainJobObject, trainJobs, upstreamTrainJobCrd, type Outcome } from './support/trainjobs.ts';
import { postOverTls } from '../webhook/fixtures.ts';

const availability = controlPlaneAvailability();
const CLIENT_NAME = 'kube-apiserver-admission';

/** The kubeconfig the API server reads for webhook calls: one user per webhook host. */
function admissionKubeconfig(host: string, cert: KeyPairPem): string {
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    users: [
      { name: host, user: { 'client-certificate-data': b64(cert.certPem), 'client-key-data': b64(cert.keyPem) } },
    ],
  });
}

function admissionConfiguration(kubeconfigFile: string): string {
  const webhookAdmission = {
    apiVersion: 'apiserver.config.k8s.io/v1',
    kind: 'WebhookAdmissionConfiguration',
    kubeConfigFile: kubeconfigFile,
  };
  return stringify({
    apiVersion: 'apiserver.config.k8s.io/v1',
    kind: 'AdmissionConfiguration',
    plugins: [
      { name: 'ValidatingAdmissionWebhook', configuration: webhookAdmission },
      { name: 'MutatingAdmissionWebhook', configuration: webhookAdmission },
    ],
  });
}

/** A forged review posted straight to the webhook: the answer, or the connection's error. */
async function directPost(port: number, servingCa: string, client?: KeyPairPem): Promise<string> {
  const review = {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: { uid: 'forged', operation: 'CREATE', object: {} },
  };
  const r = await postOverTls(`https://127.0.0.1:${port}`, servingCa, review, client);
  return 'error' in r ? `error ${r.error}` : `answered ${r.status}: ${r.text}`;
}

describe(
  'only the API server drives admission (serve --client-ca) against the real API server',
  { skip: availability.available ? false : availability.reason },
  () => {
    let cp: ControlPlane;
    let wh: WebhookProcess;
    let tj: ReturnType<typeof trainJobs>;
    let apiServerClient: KeyPairPem;
    let stranger: KeyPairPem;
    let admissionConfigFile: string;
    const ns = 'caller-auth';
    const failures = (reason: string) =>
      wh.counter('trainjob_webhook_tls_handshake_failures_total', new RegExp(`reason="${reason}"`));
    const validated = (decision: string) =>
      wh.counter('trainjob_webhook_requests_total', new RegExp(`webhook="validate",.*decision="${decision}"`));

    before(async () => {
      const upstream = upstreamTrainJobCrd();
      const line = detectTrainerLine(upstream).line;
      // The CRD patch without its rules (as the differential suite's "webhook alone"): every
      // spec.trainer refusal below is then this webhook's own, not the CRD's.
      const ops = crdPatchOps(upstream.spec.versions[0].schema.openAPIV3Schema, rulesFor(line)) as { op: string }[];
      const patched = patchedCrd(
        upstream,
        ops.filter((op) => op.op !== 'add'),
      );
      cp = await startControlPlane({
        crds: [upstreamCrds.jobsets, upstreamCrds.trainingRuntimes, upstreamCrds.clusterTrainingRuntimes],
        controllerManager: false,
        world: false,
      });
      const dir = await cp.tempDir('caller-auth');
      const crdFile = path.join(dir, 'trainjobs.yaml');
      await writeFile(crdFile, stringify(patched));
      await cp.installCRDs([crdFile]);
      await cp.kubectl(['create', 'namespace', ns]);

      // A CA of its own for the API server's client certificate, apart from the cluster's.
      const clientCa = await createCA('webhook-client-ca');
      apiServerClient = await issueClientCert(clientCa, CLIENT_NAME);
      stranger = await issueClientCert(await createCA('someone-else'), CLIENT_NAME);
      const clientCaFile = path.join(dir, 'client-ca.crt');
      await writeFile(clientCaFile, clientCa.certPem);

      const port = await freePort();
      const kubeconfigFile = path.join(dir, 'admission.kubeconfig');
      await writeFile(kubeconfigFile, admissionKubeconfig(`127.0.0.1:${port}`, apiServerClient), { mode: 0o600 });
      admissionConfigFile = path.join(dir, 'admission-config.yaml');
      await writeFile(admissionConfigFile, admissionConfiguration(kubeconfigFile));

      wh = await startWebhook(cp, {
        name: 'webhook',
        port,
        extraArgs: ['--client-ca', clientCaFile, '--client-name', CLIENT_NAME],
      });
      await registerWebhook(cp, wh);
      tj = trainJobs(cp.kubeConfig);
    });
    after(async () => {
      await cp?.stop();
    });

    it('configured on the webhook only: every TrainJob write is refused (failurePolicy: Fail), and the metric and log say why', async () => {
      let out: Outcome | undefined;
      // Refused once the API server has the webhook configurations (its informer: about a second).
      await waitFor('a TrainJob create refused for want of a client certificate', async () => {
        out = await tj.create(trainJobObject('one-sided', ns));
        if (out.allowed) await tj.delete(ns, 'one-sided');
        // Go's client may write the request before it reads TLS 1.3's alert, and then reports
        // "use of closed network connection" (refused all the same): look again for the alert.
        return !out.allowed && / certificate required/.test(out.refusal.message);
      });
      assert.ok(out && !out.allowed);
      // Go's TLS client reports the server's alert: TLS 1.3's certificate_required.
      assert.match(out.refusal.message, /failed calling webhook.*certificate required/, JSON.stringify(out.refusal));
      assert.ok((await failures('no_client_certificate')) >= 1, 'counted as no_client_certificate');
      const warned = wh.logLines().find((l) => l.level === 'warn' && l.reason === 'no_client_certificate');
      assert.ok(warned, 'a warning names the reason');
      assert.match(String(warned.msg), /sent no client certificate.*failurePolicy is Fail/);
      assert.equal(await validated('allowed'), 0, 'nothing was admitted');
      assert.equal(await validated('denied'), 0, 'nothing was decided at all');
    });

    it("with the API server's AdmissionConfiguration giving the certificate, writes are answered as usual", async () => {
      await cp.restartApiServer({ addArgs: [`--admission-control-config-file=${admissionConfigFile}`] });
      const before = await failures('no_client_certificate');
      await waitFor('a TrainJob create admitted through the webhook', async () => {
        const out = await tj.create(trainJobObject('suspended', ns));
        return out.allowed && (await validated('allowed')) > 0;
      });
      // Admitted: a numNodes change while suspended (no JobSet yet: nothing to rebuild).
      const allowedBefore = await validated('allowed');
      const change = await tj.update(ns, 'suspended', (o) => (o.spec.trainer.numNodes = 2));
      assert.equal(change.allowed, true, JSON.stringify(change));
      assert.equal(await validated('allowed'), allowedBefore + 1, 'the webhook admitted the change');
      // Denied: an image change, refused by the webhook (the CRD here has no spec.trainer rules).
      const image = await tj.update(ns, 'suspended', (o) => (o.spec.trainer.image = 'ghcr.io/acme/train:2'));
      assert.equal(image.allowed, false, JSON.stringify(image));
      if (image.allowed) return;
      assert.match(image.refusal.message, /admission webhook .* denied the request: .*spec\.trainer\.image/);
      assert.equal(await validated('denied'), 1, 'the webhook decided the denial');
      assert.equal(await failures('no_client_certificate'), before, 'no handshake failed since');
      assert.equal(await failures('client_name_not_allowed'), 0, 'the certificate carries the required name');
    });

    it('a direct client without the certificate, or with one another CA signed, cannot complete a handshake', async () => {
      const [noneBefore, untrustedBefore, decided] = [
        await failures('no_client_certificate'),
        await failures('untrusted_client_certificate'),
        (await validated('allowed')) + (await validated('denied')),
      ];
      const none = await directPost(wh.port, wh.caPem);
      assert.match(none, /^error /, none);
      const foreign = await directPost(wh.port, wh.caPem, stranger);
      assert.match(foreign, /^error /, foreign);
      await waitFor('both failures counted', async () => (await failures('no_client_certificate')) === noneBefore + 1);
      assert.equal(await failures('untrusted_client_certificate'), untrustedBefore + 1);
      assert.equal((await validated('allowed')) + (await validated('denied')), decided, 'no forged review decided');
      // The same forged review with the API server's certificate is answered: the port works.
      assert.match(await directPost(wh.port, wh.caPem, apiServerClient), /^answered 200: .*"uid":"forged"/);
    });
  },
);
