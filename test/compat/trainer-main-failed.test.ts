// Issue 17, beside the real Trainer main-line controller (8c0f5059, the cell trainer-main/*):
// there a Failed TrainJob is final (kubeflow/trainer#3891: no removeFailedCondition), so a JobSet
// the sidecar deleted would never come back. A job is scaled while the sidecar is down (suspend
// and 1 -> 2 nodes in one update: Trainer's apply of it is refused, the JobSet runs on), then its
// pod fails for real (KWOK's pod-training-ends stage; backoffLimit 0): JobSet Failed, TrainJob
// Failed. The sidecar then starts, finds the line from the live CRD under the project's own
// rights, and keeps the stale JobSet: reported Blocked, never deleted. In the other cells the
// same TrainJob would be rebuilt (Trainer v2.2.1 and v2.3.0 reconcile a Failed job again):
// test/rebuild/decide.test.ts pins both.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parse, stringify } from 'yaml';
import {
  controlPlaneAvailability,
  currentCell,
  pods,
  upstreamControllersAvailability,
  upstreamDir,
  waitFor,
} from '../harness/index.ts';
import type { TrainJob } from '../../src/api/objects.ts';
import { startSidecar, type Sidecar } from '../reconciler/support/sidecar.ts';
import {
  api,
  inNamespace,
  parallelism,
  RECONCILER_SA,
  startWorld,
  torchTrainJob,
  type World,
} from '../reconciler/support/world.ts';

const controlPlane = controlPlaneAvailability();
const controllers = upstreamControllersAvailability();
const cell = currentCell();
const skip =
  cell.trainer !== 'main'
    ? `runs in the trainer-main cells only (TJW_CELL=trainer-main/k8s-v1.35.8); this is ${cell.name}`
    : !controlPlane.available
      ? controlPlane.reason
      : !controllers.available
        ? controllers.reason
        : false;

const RUNTIME = 'torch-distributed-fail-fast';

/** torch-distributed whose node Job fails at its first failed pod (backoffLimit 0). */
function failFastRuntime(): string {
  const rt = parse(readFileSync(path.join(upstreamDir, 'runtimes/torch_distributed.yaml'), 'utf8'));
  rt.metadata.name = RUNTIME;
  for (const j of rt.spec.template.spec.replicatedJobs) if (j.name === 'node') j.template.spec.backoffLimit = 0;
  return stringify(rt);
}

const conditionOf = (t: TrainJob, type: string) => t.status?.conditions?.find((c) => c?.type === type);

describe(`${cell.name}: the sidecar does not rebuild a Failed TrainJob beside Trainer's main line`, { skip }, () => {
  let w: World;
  let a: ReturnType<typeof api>;
  let sidecar: Sidecar | undefined;
  const ns = 'main-failed';
  const { getTj, create, patch } = inNamespace(ns, () => w);

  before(async () => {
    w = await startWorld({ trainer: true, webhook: false });
    a = api(w.cp);
    await w.cp.kubectl(['create', 'namespace', ns]);
    await w.cp.applyYaml(failFastRuntime());
  });
  after(async () => {
    if (process.exitCode && w) process.stderr.write(w.cp.logTails(30));
    await sidecar?.proc.stop();
    await w?.stop();
  });

  it('scaled while the sidecar is down, then Failed for real: the sidecar finds main from the CRD and keeps the JobSet, reported Blocked', async () => {
    await create(torchTrainJob('crash', ns, { suspend: false, runtimeRef: { name: RUNTIME } }));
    const built = await a.waitJobSet(ns, 'crash', 'built with 1 node', (js) => parallelism(js) === 1);
    const p = pods(w.cp);
    await p.waitJobSetRunning(ns, 'crash', 1, 'node');

    // Suspend and scale in one update; with no sidecar the stale JobSet runs on (Trainer's apply is refused).
    await patch('crash', { spec: { suspend: true, trainer: { numNodes: 2 } } });
    assert.equal((await p.endJobSetTraining(ns, 'crash', 'Failed', 'node')).length, 1, 'its one pod fails');
    const failed = await waitFor('TrainJob Failed (from its JobSet, by Trainer main)', async () => {
      const t = await getTj('crash');
      return conditionOf(t, 'Failed')?.status === 'True' ? t : undefined;
    });
    assert.notEqual(conditionOf(failed, 'Failed')?.reason, 'DeadlineExceeded');

    sidecar = await startSidecar(w.cp, {
      name: 'reconciler',
      mode: 'companion',
      kubeconfig: w.reconcilerKubeconfig.path,
      leaseNamespace: RECONCILER_SA.namespace,
    });
    assert.equal(
      await sidecar.metric('trainjob_reconciler_trainer_line', /line="main-8c0f5059"/),
      1,
      "the line found from the live CRD, read with the project's own rights",
    );
    const blocked = await waitFor('reported Blocked', async () => {
      const r = a.report(await getTj('crash'));
      return r?.state === 'Blocked' ? r : undefined;
    });
    assert.match(
      blocked.reason,
      /^the TrainJob is Failed \(\w+\), which is final under Trainer's main line at 8c0f5059 .*a deleted JobSet would never come back/,
    );
    assert.deepEqual(blocked.parallelism, { from: 1, to: 2 });

    // Trainer reconciles the TrainJob at the report's write: it stays Failed, its JobSet the same.
    await sidecar.reconciled(`${ns}/crash`, (l) => l.outcome === 'blocked');
    const after = await getTj('crash');
    assert.equal(conditionOf(after, 'Failed')?.status, 'True', 'Failed is terminal on main');
    const js = await a.getJobSet(ns, 'crash');
    assert.equal(js?.metadata.uid, built.metadata.uid, 'the JobSet was never deleted');
    assert.equal(js?.metadata.deletionTimestamp, undefined);
    assert.ok(
      !sidecar.logLines().some((l) => l.trainJob === `${ns}/crash` && l.steps?.includes('delete-jobset')),
      'no delete step was ever taken',
    );
  });
});
