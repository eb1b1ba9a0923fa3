// N suspended torch TrainJobs created in a reconciler world (test/reconciler/support/world.ts),
// a few at a time, and the wait until Trainer has built their JobSets.
import { waitFor } from '../../test/harness/index.ts';
import { api, JOBSET, torchTrainJob, type World } from '../../test/reconciler/support/world.ts';

/** Creates `count` TrainJobs tj-0000... in `namespace`; resolves to the JobSets Trainer built once all are there. */
export async function createSuspendedTrainJobs(
  w: World,
  namespace: string,
  count: number,
  { concurrency = 8, waitSeconds = 900 }: { concurrency?: number; waitSeconds?: number } = {},
): Promise<number> {
  const t0 = Date.now();
  let next = 0;
  const createSome = async () => {
    while (next < count) {
      const i = next++;
      const out = await w.tj.create(
        torchTrainJob(`tj-${String(i).padStart(4, '0')}`, namespace) as Record<string, any>,
      );
      if (!out.allowed) throw new Error(`TrainJob ${i} refused: ${JSON.stringify(out.refusal)}`);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, createSome));
  const { objects } = api(w.cp);
  return waitFor(
    `${count} JobSets built by Trainer`,
    async () => {
      const n = ((await objects.listNamespacedCustomObject({ ...JOBSET, namespace })) as { items: unknown[] }).items
        .length;
      process.stderr.write(`  ${n}/${count} JobSets after ${((Date.now() - t0) / 1000).toFixed(0)} s\n`);
      return n >= count ? n : undefined;
    },
    { timeoutMs: waitSeconds * 1000, intervalMs: 5_000 },
  );
}
