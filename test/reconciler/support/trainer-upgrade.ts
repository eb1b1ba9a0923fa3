// An upgrade (or downgrade) of Trainer in a running world, as a platform team that installs Trainer
// with Helm does it: Trainer's and JobSet's managers stopped (their webhooks go with them), JobSet's
// CRD replaced whole by hand (`kubectl replace` of the new line's file: JobSet's chart, a dependency
// of Trainer's, keeps its CRD in crds/, which Helm never upgrades, so a team moving to a new JobSet
// applies its CRD itself), Trainer's CRDs changed by the `helm upgrade` the caller gives (Trainer's
// chart through a post-renderer that keeps only its CRDs: its Deployment and webhooks are host
// processes here; upstream's blanket spec.trainer rule is back and this project's patch is gone),
// nothing of this project's touched: the CRD patch restorer (`reconcile --restore-crd-patch`,
// running in the world's sidecar) must put the patch of the new line back by itself, and the
// switch waits for that; then the new line's managers: JobSet's first, so that no apply of
// Trainer's is admitted without JobSet's webhooks, then Trainer's, which reconciles every TrainJob
// at start. Not tried: the window of a rolling Deployment, where the old manager runs against the
// new CRD for a while.
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parse, stringify } from 'yaml';
import {
  ensureControllerBinaries,
  startJobSetController,
  startTrainerController,
  upstreamCrdsOf,
  waitFor,
  type TrainerLine,
} from '../../harness/index.ts';
import { detectTrainerLine } from '../../../src/api/trainer-line-detect.ts';
import { TRAINJOB_CRD } from '../../../src/api/names.ts';
import { crdPatchOps } from '../../../src/rules/generate/crd-patch.ts';
import { decideCrdPatchRestore } from '../../../src/rules/crd-patch-restore.ts';
import { rulesFor } from '../../../src/rules/table.ts';
import { upstreamTrainJobCrd } from '../../e2e/support/trainjobs.ts';
import type { World } from './world.ts';

/** JobSet's CRD of a line put whole in place of the stored one (with its resourceVersion: a CRD PUT is conditional). */
async function replaceJobSetCrd(w: World, line: TrainerLine): Promise<void> {
  const doc = parse(await readFile(upstreamCrdsOf(line).jobsets, 'utf8'));
  const stored = await w.cp.kubectl(['get', 'crd', doc.metadata.name, '-o', 'jsonpath={.metadata.resourceVersion}']);
  doc.metadata.resourceVersion = stored.stdout.trim();
  const file = path.join(await w.cp.tempDir(`jobset-crd-${line}`), 'jobsets.yaml');
  await writeFile(file, stringify(doc));
  await w.cp.kubectl(['replace', '-f', file]);
  await w.cp.kubectl(['wait', '--for=condition=Established', '--timeout=60s', '-f', file]);
}

/**
 * Waits until the live TrainJob CRD is the `to` line's (Helm's write is in) with this project's
 * patch for that line in force (the restorer's write is in): what the restorer's own decision
 * calls "keep". Returns how long after the call that was, in ms.
 */
export async function patchBackFor(w: World, to: TrainerLine): Promise<number> {
  const t0 = performance.now();
  // The line the new CRD is: what its vendored file is found to be.
  const want = detectTrainerLine(upstreamTrainJobCrd(to)).line.id;
  await waitFor(
    `the TrainJob CRD: ${to}'s, with this project's patch back (the restorer)`,
    async () => {
      const crd = JSON.parse((await w.cp.kubectl(['get', 'crd', TRAINJOB_CRD, '-o', 'json'])).stdout);
      const line = detectTrainerLine(crd).line;
      const decision = decideCrdPatchRestore(crd, (schema, found) => crdPatchOps(schema, rulesFor(found)));
      if (line.id === want && decision.action === 'keep') return true;
      throw new Error(`line ${line.id}; ${decision.reason}`); // waitFor's timeout names the last one
    },
    { timeoutMs: 60_000, intervalMs: 200 },
  );
  return performance.now() - t0;
}

export interface Switch {
  /** Changes Trainer's CRDs as its chart does (a `helm upgrade` or `rollback`), while no manager runs. */
  trainerCrds: () => Promise<void>;
  /** Runs while no Trainer manager runs (after the CRDs and the patch are back, before the new managers). */
  whileDown?: () => Promise<void>;
}

/**
 * Trainer (with its JobSet) from the world's line to `to`: w.upstream is the new managers
 * afterwards. Returns how long the patch took to come back after Helm's write, in ms.
 */
export async function switchTrainer(w: World, to: TrainerLine, opts: Switch): Promise<number> {
  const bins = await ensureControllerBinaries(process.env, to);
  await w.upstream.stop();
  await replaceJobSetCrd(w, to);
  await opts.trainerCrds();
  const restoredMs = await patchBackFor(w, to);
  await opts.whileDown?.();
  const jobset = await startJobSetController(w.cp, bins);
  const trainer = await startTrainerController(w.cp, bins);
  w.upstream = {
    jobset,
    trainer,
    async stop() {
      await trainer.stop();
      await jobset.stop();
    },
  };
  return restoredMs;
}
