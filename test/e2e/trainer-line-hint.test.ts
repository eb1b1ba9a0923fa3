// Issue 17: Trainer's controller image tag, read by the reconciler from Trainer's controller-manager
// Deployment beside the real API server, under the project's own rights (manifests/rbac: list and
// watch of that one name, which the API server authorizes through the fieldSelector
// metadata.name= the reconciler sends). The tag is a hint: reported, never the rules.
// - With the right: a tag of the CRD's own release agrees; the image changed to another release's
//   (a Trainer upgrade half done) is reported within a watch event as a disagreement, in the log
//   (with what to do) and trainjob_reconciler_trainer_line_hint_disagreement, while the line stays
//   the CRD's; a digest gives no tag; the Deployment deleted, no hint.
// - Without it (the RoleBinding absent): one warning however often the read is retried, and the
//   line still found from the CRD.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  controlPlaneAvailability,
  currentCell,
  upstreamControllersAvailability,
  waitFor,
  type TrainerLine,
} from '../harness/index.ts';
import { startSidecar, type LogLine, type Sidecar } from '../reconciler/support/sidecar.ts';
import { RECONCILER_SA, startWorld, type World } from '../reconciler/support/world.ts';

const controlPlane = controlPlaneAvailability();
const controllers = upstreamControllersAvailability();
const skip = !controlPlane.available ? controlPlane.reason : !controllers.available ? controllers.reason : false;
const cell = currentCell();

const NS = RECONCILER_SA.namespace;
const DEPLOYMENT = 'kubeflow-trainer-controller-manager';
const ROLE = 'trainjob-webhook-reconciler-trainer-deployment';
const REPO = 'ghcr.io/kubeflow/trainer/trainer-controller-manager';
/** The line id the cell's CRD is found as, a tag of its release, and one of another release. */
const TAGS: Record<TrainerLine, { line: string; own: string; other: string }> = {
  'v2.2.1': { line: 'v2.2.1', own: 'v2.2.1', other: 'v2.3.0' },
  'v2.3.0': { line: 'v2.3.0', own: 'v2.3.0', other: 'v2.4.0' },
  main: { line: 'main-8c0f5059', own: 'v2.4.0', other: 'v2.3.0' },
};
const { line, own, other } = TAGS[cell.trainer];

/** Trainer's Deployment as its manifests have it (no pods: replicas 0), a sidecar container first. */
const managerDeployment = (image: string) => `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: ${DEPLOYMENT}
  namespace: ${NS}
spec:
  replicas: 0
  selector: { matchLabels: { app.kubernetes.io/name: trainer } }
  template:
    metadata: { labels: { app.kubernetes.io/name: trainer } }
    spec:
      containers:
        - { name: kube-rbac-proxy, image: quay.io/brancz/kube-rbac-proxy:v0.18.0 }
        - { name: manager, image: ${image} }
`;

describe(`${cell.name}: Trainer's controller image tag, a hint beside the line found from the CRD`, { skip }, () => {
  let w: World;
  let sidecar: Sidecar | undefined;
  /** A sidecar of its own name (its own log file). */
  const start = async (name: string) =>
    (sidecar = await startSidecar(w.cp, {
      name,
      mode: 'companion',
      kubeconfig: w.reconcilerKubeconfig.path,
      leaseNamespace: NS,
    }));
  const hintLines = (s: Sidecar) =>
    s.logLines().filter((l) => typeof l.lineHint === 'string' && l.lineHint !== 'pending');
  const waitHint = (s: Sidecar, state: string) =>
    waitFor(
      `the hint ${state}`,
      async () => (await s.metric('trainjob_reconciler_trainer_line_hint', new RegExp(`state="${state}"`))) === 1,
      {
        process: s.proc,
        timeoutMs: 30_000,
      },
    );
  const lineInForce = (s: Sidecar) => s.metric('trainjob_reconciler_trainer_line', new RegExp(`line="${line}"`));

  before(async () => {
    w = await startWorld({ trainer: false, webhook: false });
  });
  after(async () => {
    if (process.exitCode && w) process.stderr.write(w.cp.logTails(30));
    await sidecar?.proc.stop();
    await w?.stop();
  });

  it(`with the right: ${own} agrees; ${other} is a disagreement, reported at once, the line still the CRD's; a digest: no tag; deleted: none`, async () => {
    await w.cp.applyYaml(managerDeployment(`${REPO}:${own}`));
    const s = await start('reconciler');
    await waitHint(s, 'agrees');
    assert.equal(await lineInForce(s), 1, 'the line found from the CRD');
    assert.equal(await s.metric('trainjob_reconciler_trainer_line_hint_disagreement'), 0);
    const agreed = hintLines(s).find((l) => l.lineHint === 'agrees') as LogLine;
    assert.deepEqual([agreed.container, agreed.imageTag, agreed.level], ['manager', own, 'info']);

    // A rollout of another release's controller (the CRD not upgraded with it, or not yet).
    await w.cp.kubectl(['set', 'image', `deployment/${DEPLOYMENT}`, '-n', NS, `manager=${REPO}:${other}`]);
    await waitFor(
      'the disagreement on the gauge',
      async () =>
        (await s.metric(
          'trainjob_reconciler_trainer_line_hint_disagreement',
          new RegExp(`line="${line}",image_tag="${other}"`),
        )) === 1,
      { process: s.proc, timeoutMs: 30_000 },
    );
    const said = hintLines(s).filter((l) => l.lineHint === 'disagrees');
    assert.equal(said.length, 1, 'said once');
    assert.equal(said[0].level, 'warn');
    assert.match(
      String(said[0].msg),
      new RegExp(
        `tag ${other.replace(/\./g, '\\.')} names Trainer ${other.replace(/\./g, '\\.')}, (newer|older) than the TrainJob CRD .*rules stay in force \\(the CRD decides`,
      ),
    );
    assert.match(
      String(said[0].msg),
      /apply the TrainJob CRD of the controller's release|roll out the controller of the CRD's release/,
    );
    assert.equal(await lineInForce(s), 1, 'the rules are still those of the line the CRD is');

    await w.cp.kubectl([
      'set',
      'image',
      `deployment/${DEPLOYMENT}`,
      '-n',
      NS,
      `manager=${REPO}@sha256:${'0'.repeat(64)}`,
    ]);
    await waitHint(s, 'unreadable');
    assert.match(String(hintLines(s).at(-1)?.msg), /pinned by digest/);
    assert.equal(await s.metric('trainjob_reconciler_trainer_line_hint_disagreement'), 0);

    await w.cp.kubectl(['delete', 'deployment', DEPLOYMENT, '-n', NS, '--wait=true']);
    await waitHint(s, 'absent');
    assert.match(String(hintLines(s).at(-1)?.msg), /is not there .*--trainer-deployment NS\/NAME/);
    await s.proc.stop();
    sidecar = undefined;
  });

  it('without the right (its RoleBinding absent): one warning across the retries, and the line still found from the CRD', async () => {
    await w.cp.kubectl(['delete', 'rolebinding', ROLE, '-n', NS, '--wait=true']);
    await w.cp.applyYaml(managerDeployment(`${REPO}:${other}`));
    const s = await start('reconciler-no-right');
    // The first list and two retries (5 s, then 10 s later): each refused.
    await waitFor(
      'three refused reads',
      async () => (await s.metric('trainjob_reconciler_api_requests_total', /verb="list",resource="deployments"/)) >= 3,
      { process: s.proc, timeoutMs: 60_000, intervalMs: 500 },
    );
    const said = hintLines(s);
    assert.deepEqual(
      said.map((l) => [l.lineHint, l.level]),
      [['forbidden', 'warn']],
      'one warning, and no tag read',
    );
    assert.match(String(said[0].msg), new RegExp(`HTTP 403.*no right to it \\(the Role ${ROLE} in ${NS}`));
    assert.equal(await s.metric('trainjob_reconciler_trainer_line_hint', /state="forbidden"/), 1);
    assert.equal(await s.metric('trainjob_reconciler_trainer_line_hint_disagreement'), 0);
    assert.equal(await lineInForce(s), 1, 'the line found from the CRD all the same');
    assert.ok(
      s.logLines().some((l) => typeof l.msg === 'string' && l.msg.startsWith('Trainer line: ')),
      'the line logged',
    );
  });
});
