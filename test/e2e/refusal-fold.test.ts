// A refusal a rebuild cures, hidden behind one it does not. Trainer's events/v1 recorder folds its
// later refusals of one TrainJob version into the first one's Event (series), keeping that note
// (src/rebuild/refused-apply.ts). Beside the real Trainer and JobSet managers (the cell's line): a
// TrainJob whose JobSet Trainer can no longer apply (its runtimePatches changed while suspended: the
// node pods' terminationGracePeriodSeconds dropped, which the CRD's transition rule allows and
// JobSet's immutable pod template does not) is resumed while a failing mutating webhook on JobSets
// (an outage: mutating webhooks run before JobSet's validating one, so the first refusal is always
// the outage's) refuses Trainer's apply. The outage ends; Trainer's next refusals name the
// immutable part but are folded behind the outage's note. The sidecar, started then, records the
// fold on the TrainJob (one write), Trainer's next refusal comes as a new Event with its own note,
// read at the sidecar's next look (30 s), and the JobSet is rebuilt. Without that write the sidecar
// finds only the outage's note for 20 minutes or more: the wait for the rebuild below times out
// (seen by turning the write off).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import type { CoreV1Event } from '@kubernetes/client-node';
import {
  controlPlaneAvailability,
  freePorts,
  upstreamControllersAvailability,
  waitFor,
  skipUnless,
} from '../harness/index.ts';
import type { JobSet } from '../../src/api/objects.ts';
import { startSidecar, type Sidecar } from '../reconciler/support/sidecar.ts';
import { api, inNamespace, RECONCILER_SA, startWorld, torchTrainJob, type World } from '../reconciler/support/world.ts';

const skip = skipUnless(controlPlaneAvailability(), upstreamControllersAvailability());

const ns = 'fold';
const name = 'folded';
const SEEN = 'trainjob-webhook.kubeflow.org/trainer-refusal-seen';
const OUTAGE_WEBHOOK = 'e2e-jobset-outage';
const OUTAGE = /failed calling webhook "outage\.e2e\.trainjob-webhook\.kubeflow\.org"/;
const IMMUTABLE = /spec\.replicatedJobs: Invalid value/;

/** A user's runtime patch of the node pods' grace period (none: the patch sets nothing). */
const grace = (seconds?: number) => ({
  manager: 'example.com/user',
  trainingRuntimeSpec: {
    template: {
      spec: {
        replicatedJobs: [
          {
            name: 'node',
            template: {
              spec: {
                template: { spec: { ...(seconds === undefined ? {} : { terminationGracePeriodSeconds: seconds }) } },
              },
            },
          },
        ],
      },
    },
  },
});
const gracePeriod = (js: JobSet | undefined) =>
  js?.spec?.replicatedJobs?.find((r) => r.name === 'node')?.template?.spec?.template?.spec
    ?.terminationGracePeriodSeconds;

/** Every update of a JobSet in the namespace fails: nothing listens at the webhook's address. */
const outage = (port: number) => `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: ${OUTAGE_WEBHOOK}
webhooks:
  - name: outage.e2e.trainjob-webhook.kubeflow.org
    clientConfig:
      url: https://127.0.0.1:${port}/mutate
    rules:
      - apiGroups: [jobset.x-k8s.io]
        apiVersions: ['*']
        operations: [UPDATE]
        resources: [jobsets]
    namespaceSelector:
      matchLabels:
        kubernetes.io/metadata.name: ${ns}
    failurePolicy: Fail
    sideEffects: None
    admissionReviewVersions: [v1]
    timeoutSeconds: 2
`;

const eventMs = (e: CoreV1Event) =>
  new Date((e.eventTime ?? e.firstTimestamp ?? e.metadata?.creationTimestamp ?? 0) as Date).getTime();

describe(
  "a refusal a rebuild cures, folded behind one it does not (Trainer's Events), beside the real Trainer and JobSet",
  { skip },
  () => {
    let w: World;
    let a: ReturnType<typeof api>;
    let sidecar: Sidecar | undefined;
    const { getTj, create, patch } = inNamespace(ns, () => w);

    before(async () => {
      w = await startWorld({ trainer: true, webhook: false });
      a = api(w.cp);
      await w.cp.kubectl(['create', 'namespace', ns]);
    });
    after(async () => {
      if (process.exitCode && w) process.stderr.write(w.cp.logTails(20));
      await w?.stop();
    });

    /** Trainer's refusal Events on the TrainJob recorded at or after `sinceMs`, oldest first. */
    const refusals = async (sinceMs = 0) =>
      (await a.events(ns, name))
        .filter(
          (e) =>
            e.reason === 'TrainJobResourcesCreationFailed' &&
            e.involvedObject?.kind === 'TrainJob' &&
            eventMs(e) >= sinceMs,
        )
        .sort((x, y) => eventMs(x) - eventMs(y));
    /** Trainer's log lines of refused applies of this TrainJob naming the immutable part. */
    const immutableInTrainerLog = () =>
      readFileSync(w.upstream.trainer!.process.logFile, 'utf8')
        .split('\n')
        .filter((l) => l.includes(`"name":"${name}"`) && /denied the request.*field is immutable/.test(l)).length;
    /** Would the API server admit an update of the JobSet now (a server-side dry run)? */
    const jobSetWritable = async () =>
      (
        await w.cp.kubectl(
          ['annotate', 'jobset', name, '-n', ns, 'e2e.trainjob-webhook/probe=1', '--overwrite', '--dry-run=server'],
          { check: false },
        )
      ).code === 0;

    it("the outage's note folds the immutable part's refusals away; the sidecar records the fold once, Trainer's next refusal says why, and the JobSet is rebuilt", async () => {
      await create(torchTrainJob(name, ns, { runtimePatches: [grace(30)] }));
      const built = await a.waitJobSet(ns, name, 'built, suspended', (js) => js.spec?.suspend === true);
      assert.equal(gracePeriod(built), 30);
      // Changed while suspended (the table allows it; the CRD's `self == oldSelf` on the field is a
      // transition rule, skipped when the new value is absent): Trainer's apply is refused from now on.
      await patch(name, { spec: { runtimePatches: [grace()] } });
      await waitFor("Trainer's apply refused while suspended (immutable)", async () =>
        (await refusals()).some((e) => IMMUTABLE.test(e.message ?? '')),
      );

      const [closed] = await freePorts(1);
      await w.cp.applyYaml(outage(closed));
      await waitFor('the outage in force', async () => !(await jobSetWritable()));
      // Resumed in a later second than the JobSet's creation, so that the refusals of the resume are
      // judged (one stored in that second may be of a JobSet it replaced: refusalOfResume).
      const later = Date.parse(String(built.metadata.creationTimestamp)) + 1_050 - Date.now();
      if (later > 0) await new Promise((r) => setTimeout(r, later));
      await patch(name, { spec: { suspend: false } });
      const resumedMs = await waitFor('Trainer says Resumed', async () => {
        const c = (await getTj(name)).status?.conditions?.find((x) => x.type === 'Suspended');
        return c?.status === 'False' && typeof c.lastTransitionTime === 'string' && Date.parse(c.lastTransitionTime);
      });
      const hiding = await waitFor("Trainer's refusals of the resume folded behind the outage's note", async () => {
        const latest = (await refusals(resumedMs)).at(-1);
        return latest && OUTAGE.test(latest.message ?? '') && (latest.series?.count ?? 0) >= 2 ? latest : undefined;
      });

      await w.cp.kubectl(['delete', 'mutatingwebhookconfiguration', OUTAGE_WEBHOOK]);
      await waitFor('the outage over', jobSetWritable);
      const logged = immutableInTrainerLog();
      await waitFor(
        "Trainer's apply refused for the immutable part again (its log)",
        () => immutableInTrainerLog() > logged,
        {
          timeoutMs: 120_000,
        },
      );
      // Hidden: the latest refusal Event is still the outage's, of the TrainJob as it is now.
      const [tj, latest] = await Promise.all([getTj(name), refusals(resumedMs).then((r) => r.at(-1))]);
      assert.equal(latest?.metadata?.name, hiding.metadata?.name);
      assert.match(latest?.message ?? '', OUTAGE);
      assert.equal(latest?.involvedObject?.resourceVersion, tj.metadata.resourceVersion);
      assert.equal((await a.getJobSet(ns, name))?.metadata.uid, built.metadata.uid);

      sidecar = await startSidecar(w.cp, {
        name: 'reconciler',
        mode: 'companion',
        kubeconfig: w.reconcilerKubeconfig.path,
        leaseNamespace: RECONCILER_SA.namespace,
      });
      const rebuilt = await a
        .waitJobSet(
          ns,
          name,
          're-created by Trainer, resumed, without the grace period',
          (js) => js.metadata.uid !== built.metadata.uid && js.spec?.suspend === false,
          150_000,
        )
        .catch(async (err: Error) => {
          // What the sidecar did and which refusals it had to go on.
          const lines = sidecar!.logLines().filter((l) => l.trainJob === `${ns}/${name}`);
          const seen = (await refusals(resumedMs)).map((e) => [
            e.metadata?.name,
            e.involvedObject?.resourceVersion,
            e.series,
            e.message?.slice(0, 120),
          ]);
          throw new Error(`${err.message}\nsidecar: ${JSON.stringify(lines)}\nrefusals: ${JSON.stringify(seen)}`);
        });
      assert.equal(gracePeriod(rebuilt), undefined);
      const after = await refusals(resumedMs);
      assert.ok(
        after.some((e) => e.metadata?.name !== hiding.metadata?.name && IMMUTABLE.test(e.message ?? '')),
        "Trainer's refusal after the fold's write is a new Event with its own note",
      );
      const report = await waitFor('the report Rebuilt, for this resume', async () => {
        const r = a.report(await getTj(name));
        return r?.state === 'Rebuilt' ? r : undefined;
      });
      assert.equal(typeof report.resumedAt, 'string');
      // The fold written once, and taken off once the JobSet runs.
      await waitFor('the fold removed', async () => (await getTj(name)).metadata.annotations?.[SEEN] === undefined);
      const recorded = sidecar.logLines().filter((l) => typeof l.fold === 'string');
      assert.equal(recorded.length, 1, JSON.stringify(recorded));
      assert.match(String(recorded[0]?.fold), new RegExp(`^${hiding.metadata?.name}/2@`));
      assert.equal(await sidecar.metric('trainjob_reconciler_steps_total', /step="record-refusal-fold"/), 2);
    });
  },
);
