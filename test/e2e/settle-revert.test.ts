// `settle --revert` on a running TrainJob, beside the real API server, Trainer v2.3.0, JobSet
// v0.12.0, the webhook and the reconciler sidecar: a job resumed before its rebuild (its count
// change cannot be carried out: workspace claims, so the report says Blocked and the JobSet stays
// built for the old count, suspended). The CRD's rule refuses numNodes alone on a running job
// (422, before any webhook); settle suspends and reverts in one update, then resumes, and the job
// runs again at its built count on the same JobSet.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import {
  controlPlaneAvailability,
  projectRoot,
  upstreamControllersAvailability,
  waitFor,
  skipUnless,
} from '../harness/index.ts';
import type { TrainJob } from '../../src/api/objects.ts';
import { startSidecar } from '../reconciler/support/sidecar.ts';
import {
  api,
  inNamespace,
  parallelism,
  RECONCILER_SA,
  startWorld,
  untilAdmitted,
  withoutWebhook,
  type World,
} from '../reconciler/support/world.ts';

const execFileAsync = promisify(execFile);

const skip = skipUnless(controlPlaneAvailability(), upstreamControllersAvailability());

describe('settle --revert on a running TrainJob', { skip }, () => {
  let w: World;
  let a: ReturnType<typeof api>;
  const ns = 'settle';
  const { getTj, create, patch } = inNamespace(ns, () => w);
  const runningPods = async (name: string) =>
    (await a.pods(ns, name)).filter((p) => p.status?.phase === 'Running' && !p.metadata?.deletionTimestamp);
  const settle = (...args: string[]) =>
    execFileAsync(process.execPath, [
      path.join(projectRoot, 'bin/trainjob-webhook.js'),
      'settle',
      '--kubeconfig',
      w.cp.kubeconfigPath,
      ...args,
    ]).then(
      (r) => ({ code: 0, out: r.stdout }),
      (err: { code?: number; stdout?: string }) => ({ code: err.code ?? -1, out: err.stdout ?? '' }),
    );

  before(async () => {
    w = await startWorld({ trainer: true, webhook: true });
    a = api(w.cp);
    await w.cp.kubectl(['create', 'namespace', ns]);
    await startSidecar(w.cp, {
      name: `reconciler-${Date.now()}`,
      mode: 'companion',
      kubeconfig: w.reconcilerKubeconfig.path,
      leaseNamespace: RECONCILER_SA.namespace,
      handoffPort: w.handoffPort,
    });
  });
  after(async () => {
    if (process.exitCode && w) process.stderr.write(w.cp.logTails(20));
    await w?.stop();
  });

  it('a job resumed before its rebuild (Blocked) runs again at its built count, on the same JobSet, and nothing is left pending', async () => {
    const job: TrainJob = {
      apiVersion: 'trainer.kubeflow.org/v1alpha1',
      kind: 'TrainJob',
      metadata: { name: 'resumed', namespace: ns },
      spec: { runtimeRef: { name: 'torchtune-llama3.2-1b' }, suspend: false, trainer: { numNodes: 1 } },
    };
    await create(job);
    const old = await a.waitJobSet(ns, 'resumed', 'running', (js) => js.spec?.suspend === false);
    await waitFor('a pod running', async () => (await runningPods('resumed')).length > 0);
    // Suspended and scaled in one update, stored without the webhook (which refuses it beside the
    // workspace claim): the sidecar reports Blocked and suspends the JobSet. Then resumed, before
    // any rebuild: numNodes 2 runs on nothing, its JobSet built for 1 stays suspended.
    await withoutWebhook(w, () =>
      untilAdmitted('suspend and numNodes 2 stored', () =>
        patch('resumed', { spec: { suspend: true, trainer: { numNodes: 2 } } }),
      ),
    );
    await waitFor('Blocked', async () => a.report(await getTj('resumed'))?.state === 'Blocked');
    await a.waitJobSet(ns, 'resumed', 'suspended by the sidecar', (js) => js.spec?.suspend === true);
    await patch('resumed', { spec: { suspend: false } });
    assert.equal((await getTj('resumed')).spec?.suspend, false);

    const reverted = await settle('--revert');
    assert.match(
      reverted.out,
      /settle\/resumed: reverted to numNodes 1; suspended in the same update, then resumed: it runs again with 1 node, and its pods restart from their last checkpoint/,
    );
    const tj = await getTj('resumed');
    assert.deepEqual([tj.spec?.trainer?.numNodes, tj.spec?.suspend], [1, false], 'left running, at its built count');
    const js = await a.waitJobSet(ns, 'resumed', 'resumed', (j) => j.spec?.suspend === false);
    assert.equal(js.metadata.uid, old.metadata.uid, 'nothing rebuilt');
    assert.equal(parallelism(js), 1, 'the JobSet matches numNodes 1');
    await waitFor('a pod running again', async () => (await runningPods('resumed')).length > 0);
    const settled = await settle('--wait', '30');
    assert.equal(settled.code, 0, settled.out);
    assert.match(settled.out, /settled: no TrainJob has a count change that is not carried out/);
  });
});
