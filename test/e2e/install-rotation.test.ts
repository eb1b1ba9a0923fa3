// Issue 9: the default install's in-process certificate rotation against the real API server.
// The rendered default-plus-mutating overlay is applied server-side; `serve` runs as a process
// with the rendered container's args and environment (ports and folder of this machine) and the
// installed ServiceAccount's own token (TokenRequest), so it has exactly the manifests' rights.
// The webhook configurations call it by URL on 127.0.0.1 (there are no Service endpoints on
// loopback); everything else is as rendered. Proven here: the Secret is filled (and created where
// it may be), both configurations get the caBundle, the API server calls the webhook with it, a
// second replica adopts the same CA, a caBundle someone removed comes back, and a serving
// certificate forced near its expiry is renewed while TrainJob writes keep going through with
// none failing.
import assert from 'node:assert/strict';
import { createPrivateKey, webcrypto, X509Certificate } from 'node:crypto';
import * as x509 from '@peculiar/x509';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import net from 'node:net';
import tls from 'node:tls';
import { after, before, describe, it } from 'node:test';
import { AdmissionregistrationV1Api, CoreV1Api, type V1Secret } from '@kubernetes/client-node';
import {
  controlPlaneAvailability,
  freePort,
  httpGet,
  projectRoot,
  startControlPlane,
  upstreamCrds,
  waitFor,
  type ControlPlane,
  type TrackedProcess,
} from '../harness/index.ts';
import { trainJobObject, trainJobs } from './support/trainjobs.ts';
import {
  byKind,
  manifestsDir,
  pointAtLoopback,
  renderOverlay,
  serviceAccountKubeconfig,
  toYaml,
  type Obj,
} from './support/install.ts';
import { issueServingCert } from '../../src/certs/authority.ts';
import { splitPemBundle } from '../../src/certs/assess.ts';

const availability = controlPlaneAvailability();
const NS = 'kubeflow-system';
const SECRET = 'trainjob-webhook-cert';
const SERVICE_DNS = `trainjob-webhook.${NS}.svc`;
const DAY = 86_400_000;
const bin = path.join(projectRoot, 'bin/trainjob-webhook.js');

interface Replica {
  name: string;
  port: number;
  opsPort: number;
  dir: string;
  proc: TrackedProcess;
  log(): Record<string, unknown>[];
  counter(re: RegExp): Promise<number>;
}

const decode = (s: V1Secret, key: string) => Buffer.from(s.data?.[key] ?? '', 'base64').toString('utf8');

/** The CA certificate `caPem` again, same name and key, valid for `validityMs` from now. */
async function reissueCa(caPem: string, caKeyPem: string, validityMs: number): Promise<string> {
  const crypto = webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0];
  const old = new x509.X509Certificate(caPem);
  const alg = { name: 'ECDSA', namedCurve: 'P-256' };
  const privateKey = await webcrypto.subtle.importKey(
    'pkcs8',
    createPrivateKey(caKeyPem).export({ format: 'der', type: 'pkcs8' }),
    alg,
    false,
    ['sign'],
  );
  const publicKey = await old.publicKey.export(alg, ['verify'], crypto);
  const cert = await x509.X509CertificateGenerator.createSelfSigned(
    {
      serialNumber: '0a1b2c3d',
      name: old.subject,
      notBefore: new Date(Date.now() - 3_600_000),
      notAfter: new Date(Date.now() + validityMs),
      keys: { privateKey, publicKey } as never,
      signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' },
      extensions: old.extensions,
    },
    crypto,
  );
  return cert.toString('pem') + '\n';
}

/** The certificate a replica presents, verified against `caPem` for 127.0.0.1 (as the API server does). */
function servedCert(port: number, caPem: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: '127.0.0.1', port, ca: caPem }, () => {
      const der = socket.getPeerCertificate().raw;
      socket.end();
      resolve(new X509Certificate(der).toString());
    });
    socket.on('error', reject);
  });
}

describe(
  'install: in-process certificate rotation (default overlay) against the real API server',
  { skip: availability.available ? false : availability.reason },
  () => {
    let cp: ControlPlane;
    let core: CoreV1Api;
    let admission: AdmissionregistrationV1Api;
    let saKubeconfig: string;
    let configs: Obj[];
    let webhookContainer: Obj;
    let renderedEnv: Record<string, string>;
    let one: Replica;

    /** The rendered webhook container's args, each `--flag value` in `replace` replaced (undefined drops the flag). */
    function renderedArgs(replace: Record<string, string | undefined>): string[] {
      const given: string[] = webhookContainer.args;
      const out: string[] = [];
      for (let i = 0; i < given.length; i++) {
        const flag = given[i];
        if (flag in replace) {
          assert.ok(i + 1 < given.length && !given[i + 1].startsWith('--'), `${flag} takes a value in the manifests`);
          const value = replace[flag];
          if (value !== undefined) out.push(flag, value);
          i++;
        } else out.push(flag);
      }
      return out;
    }
    let two: Replica;
    const tjNs = 'rotation';

    const secret = () => core.readNamespacedSecret({ name: SECRET, namespace: NS });
    const caBundles = async () =>
      [
        ...((await admission.readValidatingWebhookConfiguration({ name: 'trainjob-webhook-validating' })).webhooks ??
          []),
        ...((await admission.readMutatingWebhookConfiguration({ name: 'trainjob-webhook-mutating' })).webhooks ?? []),
      ].map((w) => Buffer.from(w.clientConfig.caBundle ?? '', 'base64').toString('utf8'));

    async function startReplica(
      name: string,
      extraArgs: string[] = [],
      kubeconfig = saKubeconfig,
      port?: number,
    ): Promise<Replica> {
      port ??= await freePort();
      const opsPort = await freePort();
      const dir = path.join(await cp.tempDir(name), 'certs');
      // The rendered container's args, with this machine's ports and folder, no hand-off (no
      // reconciler here), on loopback with the ServiceAccount's token, and 127.0.0.1 in the certificate.
      const args = [
        bin,
        ...renderedArgs({
          '--port': String(port),
          '--ops-port': String(opsPort),
          '--cert-dir': dir,
          '--handoff': undefined,
        }),
        '--host',
        '127.0.0.1',
        '--kubeconfig',
        kubeconfig,
        '--service-dns',
        '127.0.0.1',
        ...extraArgs,
      ];
      const proc = cp.startProcess(name, process.execPath, args, { env: cp.childEnv(renderedEnv), cwd: projectRoot });
      await waitFor(`${name} ready`, async () => (await httpGet(`http://127.0.0.1:${opsPort}/readyz`)).status === 200, {
        process: proc,
        timeoutMs: 60_000,
      });
      return {
        name,
        port,
        opsPort,
        dir,
        proc,
        log: () =>
          readFileSync(proc.logFile, 'utf8')
            .split('\n')
            .filter((l) => l.startsWith('{'))
            .map((l) => JSON.parse(l) as Record<string, unknown>),
        counter: async (re) =>
          (await httpGet(`http://127.0.0.1:${opsPort}/metrics`)).body
            .split('\n')
            .filter((l) => l.startsWith('trainjob_webhook_requests_total') && re.test(l))
            .reduce((sum, l) => sum + Number(l.split(' ').pop()), 0),
      };
    }

    before(async () => {
      cp = await startControlPlane({
        crds: [
          upstreamCrds.jobsets,
          upstreamCrds.trainjobs,
          upstreamCrds.trainingRuntimes,
          upstreamCrds.clusterTrainingRuntimes,
        ],
      });
      core = cp.kubeConfig.makeApiClient(CoreV1Api);
      admission = cp.kubeConfig.makeApiClient(AdmissionregistrationV1Api);
      await cp.kubectl(['create', 'namespace', NS]);
      await cp.kubectl(['create', 'namespace', tjNs]);
      const rendered = await renderOverlay(cp, path.join(manifestsDir, 'overlays/mutating'));
      const deployment = byKind(rendered, 'Deployment', 'trainjob-webhook')[0];
      webhookContainer = deployment.spec.template.spec.containers.find((c: Obj) => c.name === 'webhook');
      assert.ok(webhookContainer.args.includes('--cert-rotation'), webhookContainer.args.join(' '));
      // The downward API's value in a pod of this Deployment.
      renderedEnv = Object.fromEntries(
        (webhookContainer.env as Obj[]).map((e) => [
          e.name,
          e.valueFrom?.fieldRef?.fieldPath === 'metadata.namespace' ? deployment.metadata.namespace : e.value,
        ]),
      );
      assert.deepEqual(renderedEnv, { POD_NAMESPACE: NS });
      configs = rendered.filter((d) => /WebhookConfiguration$/.test(d.kind));
      assert.deepEqual(configs.map((c) => c.kind).sort(), [
        'MutatingWebhookConfiguration',
        'ValidatingWebhookConfiguration',
      ]);
      await cp.applyYaml(toYaml(rendered.filter((d) => !configs.includes(d))));
      saKubeconfig = await serviceAccountKubeconfig(cp, NS, 'trainjob-webhook');
    });
    after(async () => {
      await cp?.stop();
    });

    it('the first replica fills the Secret the manifests created empty, with a CA and a serving certificate for the Service', async () => {
      const empty = await secret();
      assert.equal(Object.keys(empty.data ?? {}).length, 0, 'the manifests ship the Secret empty');
      const port = await freePort();
      // The configurations as rendered but by URL at this replica, without a caBundle yet.
      await cp.applyYaml(toYaml(pointAtLoopback(configs, port)));
      one = await startReplica('replica-1', [], saKubeconfig, port);
      const s = await secret();
      assert.deepEqual(Object.keys(s.data ?? {}).sort(), ['ca.crt', 'ca.key', 'tls.crt', 'tls.key']);
      const ca = new X509Certificate(splitPemBundle(decode(s, 'ca.crt'))[0]);
      const leaf = new X509Certificate(decode(s, 'tls.crt'));
      assert.equal(ca.ca, true);
      assert.ok(leaf.checkIssued(ca) && leaf.verify(ca.publicKey));
      assert.equal(leaf.subjectAltName, `DNS:${SERVICE_DNS}, IP Address:127.0.0.1`);
      assert.ok(new Date(leaf.validTo).getTime() > Date.now() + 300 * DAY, 'a year of validity');
      assert.equal(
        readFileSync(path.join(one.dir, 'tls.crt'), 'utf8'),
        decode(s, 'tls.crt'),
        "the files served are the Secret's",
      );
    });

    it('both webhook configurations get the CA as caBundle, and the API server calls the webhook with it', async () => {
      const ca = decode(await secret(), 'ca.crt');
      await waitFor('caBundle injected into both configurations', async () =>
        (await caBundles()).every((b) => b === ca),
      );
      const tj = trainJobs(cp.kubeConfig);
      const created = await tj.create(trainJobObject('through-webhook', tjNs));
      assert.equal(created.allowed, true, created.allowed ? '' : created.refusal.message);
      assert.ok((await one.counter(/webhook="validate",operation="CREATE"/)) >= 1, 'the validating webhook was called');
      assert.ok((await one.counter(/webhook="mutate",operation="CREATE"/)) >= 1, 'the mutating webhook was called');
    });

    it('a second replica adopts the same CA and serving certificate without writing the Secret', async () => {
      const before = await secret();
      two = await startReplica('replica-2');
      const afterStart = await secret();
      assert.equal(
        afterStart.metadata?.resourceVersion,
        before.metadata?.resourceVersion,
        'the Secret was not written',
      );
      assert.equal(readFileSync(path.join(two.dir, 'ca.crt'), 'utf8'), decode(before, 'ca.crt'));
      assert.equal(
        await servedCert(two.port, decode(before, 'ca.crt')),
        await servedCert(one.port, decode(before, 'ca.crt')),
      );
      assert.ok(
        !two.log().some((l) => /written to the Secret|renewed in the Secret/.test(String(l.msg))),
        'replica 2 wrote nothing',
      );
      // The mutating webhook now calls replica 2: one write goes through both replicas.
      const mutating = configs.find((c) => c.kind === 'MutatingWebhookConfiguration')!;
      const url = `https://127.0.0.1:${two.port}${mutating.webhooks[0].clientConfig.service.path}`;
      await cp.kubectl([
        'patch',
        'mutatingwebhookconfiguration',
        'trainjob-webhook-mutating',
        '--type=json',
        '-p',
        JSON.stringify([{ op: 'replace', path: '/webhooks/0/clientConfig/url', value: url }]),
      ]);
      const tj = trainJobs(cp.kubeConfig);
      await waitFor(
        'replica 2 called by the API server',
        async () =>
          (await tj.create(trainJobObject('via-two', tjNs), 'All')).allowed &&
          (await two.counter(/webhook="mutate",operation="CREATE"/)) >= 1,
      );
    });

    it('a caBundle someone removed is put back', async () => {
      await cp.kubectl([
        'patch',
        'validatingwebhookconfiguration',
        'trainjob-webhook-validating',
        '--type=json',
        '-p',
        JSON.stringify([{ op: 'remove', path: '/webhooks/0/clientConfig/caBundle' }]),
      ]);
      const ca = decode(await secret(), 'ca.crt');
      await waitFor('caBundle re-injected', async () => (await caBundles()).every((b) => b === ca));
    });

    it('a serving certificate forced near its expiry is renewed (same CA) and reloaded while every TrainJob write goes through', async (t) => {
      const s = await secret();
      const caPem = decode(s, 'ca.crt');
      const near = await issueServingCert(
        { certPem: splitPemBundle(caPem)[0], keyPem: decode(s, 'ca.key') },
        [SERVICE_DNS, '127.0.0.1'],
        { now: new Date(), validityMs: 10 * DAY },
      );
      const tj = trainJobs(cp.kubeConfig);
      const outcomes: { ok: boolean; message: string }[] = [];
      let stop = false;
      const writer = (async () => {
        for (let i = 0; !stop; i++) {
          const out = await tj.create(trainJobObject(`during-${i}`, tjNs), 'All');
          outcomes.push({ ok: out.allowed, message: out.allowed ? '' : out.refusal.message });
        }
      })();
      try {
        await waitFor('writes flowing', () => outcomes.length >= 3);
        await core.replaceNamespacedSecret({
          name: SECRET,
          namespace: NS,
          body: {
            ...s,
            data: {
              ...s.data,
              'tls.crt': Buffer.from(near.certPem).toString('base64'),
              'tls.key': Buffer.from(near.keyPem).toString('base64'),
            },
          },
        });
        const renewed = await waitFor('a renewed serving certificate in the Secret', async () => {
          const now = await secret();
          const crt = decode(now, 'tls.crt');
          return crt !== near.certPem && new Date(new X509Certificate(crt).validTo).getTime() > Date.now() + 300 * DAY
            ? now
            : undefined;
        });
        const leaf = new X509Certificate(decode(renewed, 'tls.crt')).toString();
        assert.equal(decode(renewed, 'ca.crt'), caPem, 'the CA stayed');
        await waitFor(
          'both replicas serve the renewed certificate',
          async () => (await servedCert(one.port, caPem)) === leaf && (await servedCert(two.port, caPem)) === leaf,
        );
        const settled = outcomes.length;
        await waitFor('writes after the reload', () => outcomes.length >= settled + 3);
      } finally {
        stop = true;
        await writer;
      }
      const failed = outcomes.filter((o) => !o.ok);
      t.diagnostic(
        `${outcomes.length} TrainJob writes through both replicas during the renewal, ${failed.length} failed`,
      );
      assert.deepEqual(failed, [], `${failed.length} of ${outcomes.length} writes failed`);
      assert.deepEqual(await caBundles(), [caPem, caPem], 'the caBundle is unchanged');
      const renewals = [...one.log(), ...two.log()].filter(
        (l) => l.msg === 'serving certificate renewed in the Secret',
      );
      assert.equal(renewals.length, 1, 'one replica renewed; the other adopted');
    });

    it('a CA forced near its expiry is replaced: the new and the old CA are both trusted through the switch, and every TrainJob write goes through', async (t) => {
      const s = await secret();
      const oldPem = splitPemBundle(decode(s, 'ca.crt'))[0];
      // The same CA (name and key, so the certificates being served still chain to it) made to expire in 30 days.
      const shortened = await reissueCa(oldPem, decode(s, 'ca.key'), 30 * DAY);
      const tj = trainJobs(cp.kubeConfig);
      const outcomes: { ok: boolean; message: string }[] = [];
      let stop = false;
      const writer = (async () => {
        for (let i = 0; !stop; i++) {
          const out = await tj.create(trainJobObject(`ca-${i}`, tjNs), 'All');
          outcomes.push({ ok: out.allowed, message: out.allowed ? '' : out.refusal.message });
        }
      })();
      try {
        await waitFor('writes flowing', () => outcomes.length >= 3);
        await core.replaceNamespacedSecret({
          name: SECRET,
          namespace: NS,
          body: { ...s, data: { ...s.data, 'ca.crt': Buffer.from(shortened).toString('base64') } },
        });
        const rotated = await waitFor('a new CA in the Secret', async () => {
          const now = await secret();
          const first = splitPemBundle(decode(now, 'ca.crt'))[0];
          return new X509Certificate(first).publicKey.export({ format: 'pem', type: 'spki' }) !==
            new X509Certificate(oldPem).publicKey.export({ format: 'pem', type: 'spki' })
            ? now
            : undefined;
        });
        const bundle = decode(rotated, 'ca.crt');
        assert.equal(splitPemBundle(bundle).length, 2, 'the new CA, then the previous one');
        assert.equal(splitPemBundle(bundle)[1], shortened.trim());
        await waitFor('both caBundles carry both CAs', async () => (await caBundles()).every((b) => b === bundle));
        const leaf = new X509Certificate(decode(rotated, 'tls.crt'));
        assert.ok(
          leaf.checkIssued(new X509Certificate(splitPemBundle(bundle)[0])),
          "the serving certificate is the new CA's",
        );
        const newCaOnly = splitPemBundle(bundle)[0];
        await waitFor(
          'both replicas serve a certificate of the new CA',
          async () =>
            (await servedCert(one.port, newCaOnly)) === leaf.toString() &&
            (await servedCert(two.port, newCaOnly)) === leaf.toString(),
        );
        const settled = outcomes.length;
        await waitFor('writes after the switch', () => outcomes.length >= settled + 3);
      } finally {
        stop = true;
        await writer;
      }
      const failed = outcomes.filter((o) => !o.ok);
      t.diagnostic(
        `${outcomes.length} TrainJob writes through both replicas during the CA rotation, ${failed.length} failed`,
      );
      assert.deepEqual(failed, [], `${failed.length} of ${outcomes.length} writes failed`);
      // (The first fill of the empty Secret is a new CA too: only rotations of an expiring one count.)
      const rotations = [...one.log(), ...two.log()].filter(
        (l) => l.msg === 'CA and serving certificate written to the Secret' && /^the CA expires/.test(String(l.reason)),
      );
      assert.equal(rotations.length, 1, 'one replica rotated the CA; the other adopted');
    });

    it('a Secret it may not read (the rights name another): the ops port answers at once (/healthz 200, /readyz 503 waiting for the certificate), the admission port stays closed, and SIGTERM ends it', async () => {
      const [port, opsPort] = [await freePort(), await freePort()];
      const dir = path.join(await cp.tempDir('replica-denied'), 'certs');
      const args = [
        bin,
        ...renderedArgs({
          '--port': String(port),
          '--ops-port': String(opsPort),
          '--cert-dir': dir,
          '--handoff': undefined,
        }),
        '--host',
        '127.0.0.1',
        '--kubeconfig',
        saKubeconfig,
        '--cert-secret',
        'not-granted',
      ];
      const proc = cp.startProcess('replica-denied', process.execPath, args, {
        env: cp.childEnv(renderedEnv),
        cwd: projectRoot,
      });
      // The ops port opens before the certificate is in place: a liveness probe must not fail while it waits.
      await waitFor(
        'the health port answers',
        async () => (await httpGet(`http://127.0.0.1:${opsPort}/healthz`).catch(() => ({ status: 0 }))).status === 200,
        { process: proc, timeoutMs: 30_000 },
      );
      const ready = await httpGet(`http://127.0.0.1:${opsPort}/readyz`);
      assert.equal(ready.status, 503);
      assert.match(ready.body, /waiting for the serving certificate/);
      const connect = await new Promise<string>((resolve) => {
        const socket = net.connect(port, '127.0.0.1', () => (socket.destroy(), resolve('connected')));
        socket.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
      });
      assert.equal(connect, 'ECONNREFUSED', 'no admission port without a certificate');
      assert.equal(proc.exitStatus, undefined, 'still running, retrying');
      await proc.stop();
    });

    it('where it may create Secrets, a missing Secret is created', async () => {
      const creator = await startReplica(
        'replica-admin',
        [
          '--cert-secret',
          'fresh-cert',
          '--validating-webhook-config',
          'absent-v',
          '--mutating-webhook-config',
          'absent-m',
        ],
        cp.kubeconfigPath,
      );
      const s = await core.readNamespacedSecret({ name: 'fresh-cert', namespace: NS });
      assert.deepEqual(Object.keys(s.data ?? {}).sort(), ['ca.crt', 'ca.key', 'tls.crt', 'tls.key']);
      assert.ok(
        creator.log().some((l) => l.msg === 'webhook configuration not found; its caBundle is set once it exists'),
      );
    });
  },
);
