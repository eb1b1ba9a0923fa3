// An upgrade (or downgrade) of Trainer in a running world, as a platform team does it: Trainer's
// and JobSet's managers stopped (their webhooks go with them), the new line's CRDs put in place of
// the old ones whole (JobSet's, TrainJob's and the runtimes', a PUT of each file as Trainer's
// manifests and chart carry them: upstream's blanket spec.trainer rule is back and this project's
// patch is gone), this project's patch applied again (in production the CRD-patch restorer does
// it), then the new line's managers: JobSet's first, so that no apply of Trainer's is admitted
// without JobSet's webhooks, then Trainer's, which reconciles every TrainJob at start.
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parse, stringify } from 'yaml';
import {
  ensureControllerBinaries,
  startJobSetController,
  startTrainerController,
  upstreamCrdsOf,
  type TrainerLine,
} from '../../harness/index.ts';
import { crdPatchFor, type World } from './world.ts';

/** A line's CRD files put whole in place of the stored one (with its resourceVersion: a CRD PUT is conditional). */
async function replaceCrds(w: World, line: TrainerLine): Promise<void> {
  const dir = await w.cp.tempDir(`crds-${line}`);
  const files = await Promise.all(
    Object.entries(upstreamCrdsOf(line)).map(async ([key, file]) => {
      const doc = parse(await readFile(file, 'utf8'));
      const stored = await w.cp.kubectl([
        'get',
        'crd',
        doc.metadata.name,
        '-o',
        'jsonpath={.metadata.resourceVersion}',
      ]);
      doc.metadata.resourceVersion = stored.stdout.trim();
      const out = path.join(dir, `${key}.yaml`);
      await writeFile(out, stringify(doc));
      return out;
    }),
  );
  await w.cp.kubectl(['replace', ...files.flatMap((f) => ['-f', f])]);
  await w.cp.kubectl(['wait', '--for=condition=Established', '--timeout=60s', ...files.flatMap((f) => ['-f', f])]);
}

/** This project's CRD patch, generated for the TrainJob CRD now installed, applied again. */
export async function reapplyCrdPatch(w: World, line: TrainerLine): Promise<void> {
  const crd = parse(await readFile(upstreamCrdsOf(line).trainjobs, 'utf8'));
  await w.cp.kubectl([
    'patch',
    'crd',
    'trainjobs.trainer.kubeflow.org',
    '--type=json',
    '-p',
    JSON.stringify(crdPatchFor(crd)),
  ]);
}

export interface Switch {
  /** Runs while no Trainer manager runs (after the CRDs and the patch, before the new managers). */
  whileDown?: () => Promise<void>;
}

/** Trainer (with its JobSet) from the world's line to `to`: w.upstream is the new managers afterwards. */
export async function switchTrainer(w: World, to: TrainerLine, opts: Switch = {}): Promise<void> {
  const bins = await ensureControllerBinaries(process.env, to);
  await w.upstream.stop();
  await replaceCrds(w, to);
  await reapplyCrdPatch(w, to);
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
}
