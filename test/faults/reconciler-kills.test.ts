// The fault suite's long form for the reconciler (`npm run test:faults`): the kill rounds of
// kill-rounds.ts in a world of their own, 20 SIGKILLs and 4 kube-apiserver restarts (at two points,
// each with SIGTERM and SIGKILL), in companion mode beside the real Trainer and then in standalone
// mode (Trainer's controller absent, the sidecar builds the JobSets). FAULT_KILLS and
// FAULT_APISERVER_RESTARTS override the counts; FAULT_SEED replays a run's random offsets. The
// short form (3 kills, companion) runs in test/e2e/reconciler-resilience.test.ts, in that suite's
// world, which keeps it cheap in `npm test`.
import { after, before, describe, it } from 'node:test';
import { controlPlaneAvailability, upstreamControllersAvailability } from '../harness/index.ts';
import { startWorld, type World } from '../reconciler/support/world.ts';
import { killRounds } from './kill-rounds.ts';
import { longForm } from './support.ts';

const controlPlane = controlPlaneAvailability();
const controllers = upstreamControllersAvailability();
const LONG = longForm();
const skip = !LONG
  ? 'the long form (npm run test:faults); npm test runs the short form in test/e2e/reconciler-resilience.test.ts'
  : !controlPlane.available
    ? controlPlane.reason
    : !controllers.available
      ? controllers.reason
      : false;

function positive(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n <= 0)
    throw new Error(`${name} must be a positive integer, got ${JSON.stringify(raw)}`);
  return n;
}

const KILLS = positive('FAULT_KILLS', 20);
const RESTARTS = positive('FAULT_APISERVER_RESTARTS', 4);
const SEED = positive('FAULT_SEED', Math.floor(Math.random() * 2 ** 31));

for (const mode of ['companion', 'standalone'] as const) {
  describe(`reconciler faults, long form (${mode})`, { skip, timeout: 1_800_000 }, () => {
    let w: World;
    before(async () => {
      w = await startWorld({ trainer: mode === 'companion', webhook: false });
    });
    after(async () => {
      if (process.exitCode && w) process.stderr.write(w.cp.logTails(30));
      await w?.stop();
    });
    it(`${KILLS} SIGKILLs at named points of rebuilds and ${RESTARTS} kube-apiserver restarts: one correct JobSet each round, no JobSet deleted while its pods ran, the claim kept`, (t) =>
      killRounds(t, w, { ns: 'faults', mode, kills: KILLS, restarts: RESTARTS, seed: SEED }));
  });
}
