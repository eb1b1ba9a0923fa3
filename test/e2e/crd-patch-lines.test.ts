// Issue 17: the CRD patch generated for each Trainer line's TrainJob CRD (v2.2.1, v2.3.0, main at
// 8c0f5059), applied with `kubectl patch --type=json` as docs/versions.md says (the file it names for the
// line), to the real kube-apiserver. Then, with nothing but the API server (no webhook): the line
// is found from the live CRD, patched and not; numNodes changes around a suspension are admitted,
// one while running and every other spec.trainer change refused; a Failed job (not
// DeadlineExceeded) may be scaled where its Trainer reconciles it again (v2.2.1, v2.3.0) and not on
// main (#3891); a negative count is refused on every line; the restore puts the blanket rule back.
// One API server for all three lines: each line's CRD replaces the previous one (deleted first, so
// no rule of the last patch survives a server-side apply's merge).
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  controlPlaneAvailability,
  startControlPlane,
  upstreamCrdsOf,
  waitFor,
  type ControlPlane,
} from '../harness/index.ts';
import { detectTrainerLine } from '../../src/api/trainer-line-detect.ts';
import type { KnownTrainerLine } from '../../src/api/trainer-line.ts';
import { lineDirs, projectRoot } from '../../hack/generate.ts';
import { existsSync } from 'node:fs';
import { trainJobObject, trainJobs } from './support/trainjobs.ts';

const availability = controlPlaneAvailability();
const CRD = 'trainjobs.trainer.kubeflow.org';

/** The patch docs/versions.md names for a line: its own when the generator wrote one, else the shipped v2.3.0 one. */
function patchFileFor(line: KnownTrainerLine, kind: 'patch' | 'restore'): string {
  const own = path.join(projectRoot, lineDirs(line).crdPatch, `trainjob-crd-${kind}.yaml`);
  return existsSync(own) ? own : path.join(projectRoot, `manifests/crd-patch/trainjob-crd-${kind}.yaml`);
}

const LINES: { line: KnownTrainerLine; harness: 'v2.2.1' | 'v2.3.0' | 'main'; failedIsFinal: boolean }[] = [
  { line: 'v2.2.1', harness: 'v2.2.1', failedIsFinal: false },
  { line: 'v2.3.0', harness: 'v2.3.0', failedIsFinal: false },
  { line: 'main-8c0f5059', harness: 'main', failedIsFinal: true },
];

describe(
  "each Trainer line's CRD patch, applied to the real API server",
  { skip: availability.available ? false : availability.reason },
  () => {
    let cp: ControlPlane;
    let tj: ReturnType<typeof trainJobs>;
    let live: () => Promise<unknown>;
    const ns = 'lines';

    before(async () => {
      cp = await startControlPlane({ controllerManager: false, world: false });
      await cp.kubectl(['create', 'namespace', ns]);
      tj = trainJobs(cp.kubeConfig);
      // kubectl's JSON is the API server's (a typed client would rename x-kubernetes-validations).
      live = async () => JSON.parse((await cp.kubectl(['get', 'crd', CRD, '-o', 'json'])).stdout) as unknown;
    });
    after(async () => {
      await cp?.stop();
    });

    for (const { line, harness, failedIsFinal } of LINES) {
      describe(line, () => {
        before(async () => {
          await cp.kubectl(['delete', 'crd', CRD, '--ignore-not-found', '--wait=true']);
          await cp.installCRDs([upstreamCrdsOf(harness).trainjobs]);
        });

        it('the line is found from the live CRD as installed (blanket rule in place)', async () => {
          const d = detectTrainerLine(await live());
          assert.equal(d.line.id, line, d.summary);
        });

        it(`kubectl patch --type=json with ${path.relative(projectRoot, patchFileFor(line, 'patch'))}: applied, the line still found`, async () => {
          await cp.kubectl(['patch', 'crd', CRD, '--type=json', '--patch-file', patchFileFor(line, 'patch')]);
          const d = detectTrainerLine(await live());
          assert.equal(d.line.id, line, d.summary);
          // The API server serves the patched schema once it has rebuilt its handler for the CRD.
          await waitFor('the patched rules in force', async () => {
            const name = `probe-${Date.now()}`;
            await tj.create(trainJobObject(name, ns));
            return (await tj.update(ns, name, (o) => (o.spec.trainer.numNodes = 2))).allowed;
          });
        });

        it('numNodes around a suspension admitted; while running, and any other spec.trainer change, refused', async () => {
          assert.equal((await tj.create(trainJobObject('scale', ns))).allowed, true);
          assert.equal((await tj.update(ns, 'scale', (o) => (o.spec.trainer.numNodes = 3))).allowed, true);
          assert.equal(
            (await tj.update(ns, 'scale', (o) => ((o.spec.suspend = false), (o.spec.trainer.numNodes = 4)))).allowed,
            true,
            'resuming and scaling in one update',
          );
          const running = await tj.update(ns, 'scale', (o) => (o.spec.trainer.numNodes = 5));
          assert.equal(running.allowed, false);
          if (!running.allowed)
            assert.match(running.refusal.message, /numNodes may only change while the TrainJob is suspended/);
          const image = await tj.update(
            ns,
            'scale',
            (o) => ((o.spec.suspend = true), (o.spec.trainer.image = 'other:2')),
          );
          assert.equal(image.allowed, false);
          if (!image.allowed)
            assert.match(image.refusal.message, /spec\.trainer\.image: Invalid value: .*field is immutable/);
          const args = await tj.update(ns, 'scale', (o) => ((o.spec.suspend = true), (o.spec.trainer.args = ['x'])));
          assert.equal(args.allowed, false);
        });

        it('a negative count refused; 0 admitted', async () => {
          assert.equal((await tj.create(trainJobObject('bounds', ns))).allowed, true);
          assert.equal((await tj.update(ns, 'bounds', (o) => (o.spec.trainer.numNodes = -1))).allowed, false);
          assert.equal((await tj.update(ns, 'bounds', (o) => (o.spec.trainer.numNodes = 0))).allowed, true);
        });

        it(`a Failed job (BackoffLimitExceeded): numNodes ${failedIsFinal ? 'refused (Failed is final here)' : 'admitted (Trainer reconciles it again)'}; Complete refused`, async () => {
          for (const [name, type, reason] of [
            ['failed', 'Failed', 'BackoffLimitExceeded'],
            ['complete', 'Complete', 'AllJobsCompleted'],
          ]) {
            assert.equal((await tj.create(trainJobObject(name, ns))).allowed, true);
            const condition = {
              type,
              status: 'True',
              reason,
              message: 'm',
              lastTransitionTime: new Date().toISOString(),
            };
            await cp.kubectl([
              'patch',
              'trainjob',
              name,
              '-n',
              ns,
              '--subresource=status',
              '--type=merge',
              '-p',
              JSON.stringify({ status: { conditions: [condition] } }),
            ]);
          }
          const failed = await tj.update(ns, 'failed', (o) => (o.spec.trainer.numNodes = 2));
          assert.equal(failed.allowed, !failedIsFinal, failed.allowed ? 'admitted' : failed.refusal.message);
          if (!failed.allowed)
            assert.match(
              failed.refusal.message,
              /numNodes may not change once the TrainJob has finished \(condition Complete or Failed\)/,
            );
          assert.equal((await tj.update(ns, 'complete', (o) => (o.spec.trainer.numNodes = 2))).allowed, false);
        });

        it('the restore puts the blanket rule back: a numNodes change is refused again; the line is still found', async () => {
          await cp.kubectl(['patch', 'crd', CRD, '--type=json', '--patch-file', patchFileFor(line, 'restore')]);
          assert.equal(detectTrainerLine(await live()).line.id, line);
          await waitFor('the blanket rule in force', async () => {
            const out = await tj.update(ns, 'scale', (o) => (o.spec.trainer.numNodes = 7));
            return !out.allowed && /spec\.trainer: Invalid value: .*field is immutable/.test(out.refusal.message);
          });
        });
      });
    }
  },
);
