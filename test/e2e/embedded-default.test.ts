// The defaults a newcomer meets, against the real API server:
// - `manifests/crd-patch` renders with `kubectl kustomize` from a clone (the vendored Trainer
//   v2.3.0 CRD with the patch), and is exactly the embedded default `serve` and `review` check;
//   the live-CRD command (`kubectl patch --type=json --patch-file`) gives the same CRD, and the
//   restore patch gives upstream's back;
// - `serve` with no flags refuses the invalid example of docs/admission.md as that API server does;
// - `serve` with cluster access reads the live CRD at start (raw JSON: the typed client renames
//   `x-kubernetes-validations`) and skips, with a warning and a metric, a rule it cannot compile.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import https from 'node:https';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parse, stringify } from 'yaml';
import {
  controlPlaneAvailability,
  freePort,
  httpGet,
  projectRoot,
  startControlPlane,
  waitFor,
  type ControlPlane,
} from '../harness/index.ts';
import { EMBEDDED_CRD_FILE } from '../../src/rules/crd-policy.ts';
import { startWebhook } from './support/webhook.ts';
import { trainJobs, type Obj } from './support/trainjobs.ts';

const availability = controlPlaneAvailability();
const CRD = 'trainjobs.trainer.kubeflow.org';

/** POSTs an AdmissionReview to a local HTTPS webhook (its self-signed certificate not checked). */
function review(port: number, body: string): Promise<Record<string, any>> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/validate-trainer-kubeflow-org-v1alpha1-trainjob',
        rejectUnauthorized: false,
        headers: { 'content-type': 'application/json' },
      },
      (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve(JSON.parse(text)));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** The parts of a CRD both ways of installing it must agree on (the server defaults `conversion`). */
const specOf = (crd: Obj): unknown => {
  const { conversion, ...spec } = crd.spec;
  assert.ok(conversion === undefined || conversion.strategy === 'None');
  return spec;
};
/** Causes of a `... is invalid: [a, b]` message as a set (the API server walks Go maps). */
const causes = (m: string): string[] =>
  m
    .replace(/^[^:]*: \[?/, '')
    .replace(/\]$/, '')
    .split(/, (?=spec\.|metadata\.|<nil>)/)
    .sort();

describe(
  'the embedded default and the CRD patch from a clone',
  { skip: availability.available ? false : availability.reason },
  () => {
    let cp: ControlPlane;
    let rendered: Obj;

    before(async () => {
      cp = await startControlPlane({ crds: [] });
    });
    after(async () => {
      await cp?.stop();
    });

    it('kubectl kustomize manifests/crd-patch renders the embedded default CRD', async () => {
      const out = await cp.kubectl(['kustomize', path.join(projectRoot, 'manifests/crd-patch')]);
      const docs = out.stdout.split(/^---$/m).filter((d) => d.trim() !== '');
      assert.equal(docs.length, 1, 'only the TrainJob CRD');
      rendered = parse(docs[0]) as Obj;
      assert.equal(rendered.metadata.name, CRD);
      assert.deepEqual(rendered, JSON.parse(await readFile(EMBEDDED_CRD_FILE, 'utf8')));
    });

    it('the live-CRD patch command gives the same CRD as the kustomization', async () => {
      await cp.installCRDs([
        path.join(projectRoot, 'upstream/crds/trainer-v2.3.0/trainer.kubeflow.org_trainjobs.yaml'),
      ]);
      await cp.kubectl([
        'patch',
        'crd',
        CRD,
        '--type=json',
        '--patch-file',
        path.join(projectRoot, 'manifests/crd-patch/trainjob-crd-patch.yaml'),
      ]);
      const live = JSON.parse((await cp.kubectl(['get', 'crd', CRD, '-o', 'json'])).stdout) as Obj;
      assert.deepEqual(specOf(live), specOf(JSON.parse(JSON.stringify(rendered))));
      // Applied a second time, the patch's test op refuses: the blanket rule is gone.
      await assert.rejects(
        cp.kubectl([
          'patch',
          'crd',
          CRD,
          '--type=json',
          '--patch-file',
          path.join(projectRoot, 'manifests/crd-patch/trainjob-crd-patch.yaml'),
        ]),
      );
    });

    it('the restore patch (uninstall) gives the API server back upstream v2.3.0 CRD exactly', async () => {
      await cp.kubectl([
        'patch',
        'crd',
        CRD,
        '--type=json',
        '--patch-file',
        path.join(projectRoot, 'manifests/crd-patch/trainjob-crd-restore.yaml'),
      ]);
      const live = JSON.parse((await cp.kubectl(['get', 'crd', CRD, '-o', 'json'])).stdout) as Obj;
      const pristine = parse(
        await readFile(
          path.join(projectRoot, 'upstream/crds/trainer-v2.3.0/trainer.kubeflow.org_trainjobs.yaml'),
          'utf8',
        ),
      ) as Obj;
      assert.deepEqual(specOf(live), specOf(pristine));
    });

    it('serve with no flags refuses the invalid example of docs/admission.md as that API server does', async () => {
      const file = path.join(await cp.tempDir('rendered'), 'crd.yaml');
      await writeFile(file, stringify(rendered));
      await cp.installCRDs([file]);
      const body = await readFile(path.join(projectRoot, 'examples/denied-create-invalid.json'), 'utf8');
      const object = JSON.parse(body).request.object as Obj;
      await cp.kubectl(['create', 'namespace', object.metadata.namespace]);
      const server = await trainJobs(cp.kubeConfig).create(object);
      assert.equal(server.allowed, false);
      if (server.allowed) return;

      // The README's command: `npm start` is `serve` with no flags (certificate generated into ./certs).
      const [port, opsPort] = [await freePort(), await freePort()];
      const cwd = await cp.tempDir('newcomer');
      const proc = cp.startProcess(
        'serve-defaults',
        process.execPath,
        [
          path.join(projectRoot, 'bin/trainjob-webhook.js'),
          'serve',
          '--host',
          '127.0.0.1',
          '--port',
          String(port),
          '--ops-port',
          String(opsPort),
        ],
        { cwd, env: cp.childEnv() },
      );
      await waitFor('serve ready', async () => (await httpGet(`http://127.0.0.1:${opsPort}/readyz`)).status === 200, {
        process: proc,
        timeoutMs: 30_000,
      });
      const ours = (await review(port, body)).response;
      assert.equal(ours.allowed, false);
      assert.equal(ours.status.code, server.refusal.code);
      assert.equal(ours.status.reason, server.refusal.reason);
      assert.equal(ours.status.message.split(':')[0], server.refusal.message.split(':')[0]);
      assert.deepEqual(causes(ours.status.message), causes(server.refusal.message));
      assert.deepEqual(
        ours.status.details.causes.map((c: { field: string }) => c.field).sort(),
        server.refusal.causes.map((c) => c.field).sort(),
      );
      assert.match(await readFile(proc.logFile, 'utf8'), /embedded Trainer v2\.3\.0 TrainJob CRD/);
    });

    it("a name Kubernetes does not allow is quoted as the API server quotes it (Go's %q), in the message and in its cause", async () => {
      // The API server refuses such a name before any webhook runs; a hand-made review (curl, the
      // CLI) reaches ours with it, and both answers must then read the same.
      const object = JSON.parse(await readFile(path.join(projectRoot, 'examples/denied-create-invalid.json'), 'utf8'))
        .request.object as Obj;
      object.metadata.name = 'Bad\u00e9\u0007name\t';
      const server = await trainJobs(cp.kubeConfig).create(object);
      assert.equal(server.allowed, false);
      if (server.allowed) return;
      assert.match(
        server.refusal.message,
        /^TrainJob\.trainer\.kubeflow\.org "Badé\\aname\\t" is invalid: /,
        'Go quotes \\a and \\t',
      );
      // `review` prints the webhook's answer (the same code builds it; the embedded default CRD).
      const file = path.join(await cp.tempDir('odd-name'), 'trainjob.json');
      await writeFile(file, JSON.stringify(object));
      const run = spawnSync(
        process.execPath,
        [path.join(projectRoot, 'bin/trainjob-webhook.js'), 'review', '--new', file],
        { encoding: 'utf8' },
      );
      assert.equal(run.status, 1, run.stderr);
      const ours = JSON.parse(run.stdout).response;
      assert.equal(ours.allowed, false);
      assert.equal(ours.status.message.split(' is invalid: ')[0], server.refusal.message.split(' is invalid: ')[0]);
      const nameCause = (causes: { field?: string; message?: string }[]) =>
        causes.find((c) => c.field === 'metadata.name')?.message;
      assert.equal(nameCause(ours.status.details.causes), nameCause(server.refusal.causes));
    });

    it('serve with cluster access reads the live CRD at start and skips a rule it cannot compile, saying so', async () => {
      // A rule the API server accepts and this engine cannot compile (Kubernetes' URL library).
      const crd = structuredClone(rendered);
      const spec = crd.spec.versions[0].schema.openAPIV3Schema.properties.spec;
      spec['x-kubernetes-validations'].push({
        rule: "isURL('https://www.kubeflow.org')",
        message: 'a rule only the API server runs',
      });
      const file = path.join(await cp.tempDir('with-url-rule'), 'crd.yaml');
      await writeFile(file, stringify(crd));
      await cp.installCRDs([file]);

      const wh = await startWebhook(cp, { name: 'serve-cluster' });
      const logs = wh.logLines();
      const read = logs.find((l) => l.msg === 'TrainJob CRD read from the API server');
      assert.ok(read, `no start-up read of the CRD in:\n${logs.map((l) => l.msg).join('\n')}`);
      assert.ok((read.crdRules as number) > 0);
      assert.equal(logs.filter((l) => /not usable|could not read/.test(String(l.msg))).length, 0);
      const skipped = logs.filter((l) => /does not compile here/.test(String(l.msg)));
      assert.deepEqual(
        skipped.map((l) => l.rule),
        ["isURL('https://www.kubeflow.org')"],
      );
      const started = logs.find((l) => typeof l.validator === 'string');
      assert.match(String(started?.validator), /CRD: the API server .*1 CRD rules do not compile here/);
      assert.equal(await wh.counter('trainjob_webhook_crd_in_force'), 1);
      assert.equal(await wh.counter('trainjob_webhook_crd_rules_uncompilable'), 1);
    });
  },
);
