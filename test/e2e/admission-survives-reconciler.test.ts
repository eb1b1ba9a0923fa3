// Issue 18: admission survives the reconciler, with real processes. The real API server with the
// TrainJob CRD patch and the validating webhook configuration as the default install renders it
// (failurePolicy: Fail), `serve` with the default layout's arguments (no --handoff: the
// reconciler is not in its pod) reading the reconciler's Lease, the real Trainer, JobSet and
// Kueue managers; the reconciler (`reconcile`) SIGKILLed in a loop, and started with a V8 heap too
// small to run (`--max-old-space-size`, as an OOM kill ends a container under its memory limit:
// no cgroup is made here), while TrainJob writes go on: creates, suspends and resumes, Kueue's own
// suspend at creation and its resumes, and count changes. Every write is answered by the webhook:
// admitted, or (count changes only, while no reconciler leads) refused for now with 503, by design.
// Then, with no reconciler at all, exactly the count changes that need a rebuild are refused, and
// once one leads again the same change is admitted and carried out; a change admitted under a
// dead leader's still fresh Lease is carried out by the next leader. How the layout keeps the
// webhook's pods Ready when the reconciler's container fails is
// reconciler-crash-keeps-webhook-endpoints.test.ts's.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parseAllDocuments } from 'yaml';
import {
  controlPlaneAvailability,
  httpGet,
  kueueAvailability,
  KUEUE_USER,
  pointWebhooksAt,
  projectRoot,
  upstreamControllersAvailability,
  waitFor,
  type TrackedProcess,
} from '../harness/index.ts';
import { api, parallelism, RECONCILER_SA, startWorld, torchTrainJob, type World } from '../reconciler/support/world.ts';
import { isTrue, QUEUE_LABEL, queueObjects, KUEUE, type Obj } from './support/kueue.ts';
import { startWebhook, type WebhookProcess } from './support/webhook.ts';
import { startSidecar, type Sidecar } from '../reconciler/support/sidecar.ts';
import type { Outcome } from './support/trainjobs.ts';

const controlPlane = controlPlaneAvailability();
const controllers = upstreamControllersAvailability();
const kueue = kueueAvailability();
const skip = !controlPlane.available
  ? controlPlane.reason
  : !controllers.available
    ? controllers.reason
    : !kueue.available
      ? kueue.reason
      : false;

const NS = 'survives';
const LEASE = `${RECONCILER_SA.namespace}/trainjob-webhook-reconciler`;
/** How long the reconciler is attacked while the writes go on. */
const CHAOS_MS = 20_000;
/** A V8 old space no `reconcile` can start in: it dies of heap exhaustion, as under an OOM kill. */
const STARVED = '--max-old-space-size=8';

/** What an answer was: admitted, refused for now by the webhook's scale judgment, or anything else. */
function classify(out: Outcome): 'admitted' | 'not-now' | string {
  if (out.allowed) return 'admitted';
  const { code, message } = out.refusal;
  // Only the judgment's "no reconciler leads": a failed read (also 503) is not by design here.
  if (code === 503 && /spec\.trainer\.numNodes: Forbidden: no reconciler leads/.test(message)) return 'not-now';
  return `${code}: ${message}`;
}

describe(
  'admission survives the reconciler: killed in a loop and starved of memory, TrainJob writes keep being answered',
  { skip },
  () => {
    let w: World;
    let webhook: WebhookProcess;
    let a: ReturnType<typeof api>;
    const reconcilers: TrackedProcess[] = [];
    let round = 0;

    /** `reconcile` in companion mode (the default layout's reconciler Deployment), not waited for. */
    const startReconciler = async (starved: boolean): Promise<Sidecar> => {
      const s = await startSidecar(w.cp, {
        name: `reconciler-${round++}${starved ? '-starved' : ''}`,
        mode: 'companion',
        kubeconfig: w.reconcilerKubeconfig.path,
        leaseNamespace: RECONCILER_SA.namespace,
        waitReady: false,
        env: starved ? { NODE_OPTIONS: STARVED } : {},
      });
      reconcilers.push(s.proc);
      return s;
    };
    const leads = async (s: Sidecar) => (await s.metric('leader_election_master_status')) === 1;

    before(async () => {
      w = await startWorld({ trainer: true, webhook: false, kueue: true });
      a = api(w.cp);
      // serve as the default layout runs it: no --handoff; the Lease tells it whether a reconciler leads.
      webhook = await startWebhook(w.cp, { name: 'webhook', extraArgs: ['--reconciler-lease', LEASE] });
      const rendered = parseAllDocuments(
        (await w.cp.kubectl(['kustomize', path.join(projectRoot, 'manifests')])).stdout,
      )
        .map((d) => d.toJSON() as Obj)
        .filter((d) => d?.kind === 'ValidatingWebhookConfiguration');
      assert.deepEqual(
        rendered.flatMap((c) => c.webhooks.map((x: Obj) => x.failurePolicy)),
        ['Fail'],
        'the default install fails closed',
      );
      await w.cp.applyYaml(pointWebhooksAt(rendered, webhook.port, webhook.caPem));
      await w.cp.kubectl(['create', 'namespace', NS]);
      await w.cp.applyYaml(queueObjects(NS));
      await waitFor('the ClusterQueue Active', async () =>
        isTrue(
          (await a.objects.getClusterCustomObject({ ...KUEUE, plural: 'clusterqueues', name: 'cluster-queue' })) as Obj,
          'Active',
        ),
      );
      // The webhook is in force: a (dry-run) create goes through it, which its counter shows.
      await waitFor(
        'the webhook registered',
        async () =>
          (await w.tj.create(torchTrainJob('probe', NS), 'All')).allowed &&
          (await webhook.counter('trainjob_webhook_requests_total', /webhook="validate",operation="CREATE"/)) > 0,
      );
    });
    after(async () => {
      if (process.exitCode && w) process.stderr.write(w.cp.logTails(30));
      for (const p of reconcilers) if (!p.exitStatus) await p.stop();
      await w?.stop();
    });

    it('SIGKILLed every 1-2 s and started with a heap it cannot run in, for 20 s: every create, suspend, resume and Kueue write is admitted; count changes are admitted or refused for now (503), never unanswered', async (t) => {
      // A job with a JobSet (Trainer builds it at once, suspended): its count changes need a rebuild.
      assert.ok((await w.tj.create(torchTrainJob('scaled', NS))).allowed);
      await a.waitJobSet(NS, 'scaled', 'built by Trainer', (js) => parallelism(js) === 1);

      let chaosOver = false;
      const deaths = { killed: 0, starved: 0, starvedOom: 0 };
      const chaos = (async () => {
        const end = Date.now() + CHAOS_MS;
        for (let i = 0; Date.now() < end; i++) {
          if (i % 2 === 0) {
            const { proc } = await startReconciler(false);
            await new Promise((r) => setTimeout(r, 1_000 + (i % 4) * 250));
            proc.kill('SIGKILL');
            await proc.exited;
            deaths.killed++;
          } else {
            const { proc } = await startReconciler(true);
            const status = await Promise.race([proc.exited, new Promise((r) => setTimeout(r, 10_000, undefined))]);
            if (!status) proc.kill('SIGKILL');
            await proc.exited;
            deaths.starved++;
            if (/heap out of memory|Reached heap limit/.test(proc.logTail(30))) deaths.starvedOom++;
          }
        }
        chaosOver = true;
      })();

      // The webhook's own readiness, sampled throughout.
      const readyz: number[] = [];
      const sampler = (async () => {
        while (!chaosOver) {
          readyz.push((await httpGet(`http://127.0.0.1:${webhook.opsPort}/readyz`)).status);
          await new Promise((r) => setTimeout(r, 200));
        }
      })();

      const answers = new Map<string, number>();
      const failures: string[] = [];
      const record = (what: string, out: Outcome, mayBeNotNow = false) => {
        const c = classify(out);
        const key = `${what}: ${c === 'admitted' || c === 'not-now' ? c : 'other'}`;
        answers.set(key, (answers.get(key) ?? 0) + 1);
        if (c !== 'admitted' && !(mayBeNotNow && c === 'not-now')) failures.push(`${what}: ${c}`);
      };
      const seen = webhook.logLines().length;
      // Kueue's job: created unsuspended with a queue label, so Kueue suspends it (its mutating
      // webhook), admits its Workload and resumes it (an UPDATE through ours).
      const queued = torchTrainJob('queued', NS, { suspend: false });
      queued.metadata.labels = { [QUEUE_LABEL]: 'queue' };
      let n = 0;
      let numNodes = 1;
      while (!chaosOver) {
        if (n === 0) record('create (Kueue suspends it)', await w.tj.create(queued));
        const name = `job-${n}`;
        record('create', await w.tj.create(torchTrainJob(name, NS)));
        record('resume', await w.tj.update(NS, name, (o) => (o.spec.suspend = false)));
        record('suspend', await w.tj.update(NS, name, (o) => (o.spec.suspend = true)));
        // Suspended with its stale JobSet: the count change needs a reconciler to lead.
        numNodes = numNodes === 1 ? 2 : 1;
        const next = numNodes;
        record('count change', await w.tj.update(NS, 'scaled', (o) => (o.spec.trainer.numNodes = next)), true);
        // Kueue resumes a job whose Workload is admitted: each suspend of ours is undone by Kueue.
        if (n % 3 === 1) {
          const tj = await w.tj.get(NS, 'queued');
          if (tj.spec.suspend === false)
            record('suspend a Kueue job', await w.tj.update(NS, 'queued', (o) => (o.spec.suspend = true)));
        }
        n++;
        await new Promise((r) => setTimeout(r, 100));
      }
      await chaos;
      await sampler;
      const kueueWrites = webhook
        .logLines()
        .slice(seen)
        .filter((l) => l.msg === 'admission' && l.webhook === 'validate' && l.user === KUEUE_USER);
      t.diagnostic(
        `${CHAOS_MS / 1000} s: reconciler SIGKILLed ${deaths.killed} times, started starved (${STARVED}) ${deaths.starved} times ` +
          `(${deaths.starvedOom} died of heap exhaustion); answers ${JSON.stringify(Object.fromEntries(answers))}; ` +
          `Kueue's writes through the webhook ${kueueWrites.length} (${kueueWrites.filter((l) => l.decision === 'allowed').length} allowed); ` +
          `webhook /readyz ${readyz.filter((s) => s === 200).length}/${readyz.length} 200`,
      );
      assert.deepEqual(failures, [], 'every write answered, none refused but a count change for now');
      assert.ok(deaths.killed >= 5 && deaths.starved >= 4, `the reconciler was attacked (${JSON.stringify(deaths)})`);
      assert.equal(deaths.starvedOom, deaths.starved, 'each starved start died of heap exhaustion');
      assert.equal(webhook.proc.exitStatus, undefined, 'the webhook process never stopped');
      assert.ok(readyz.length > 10 && readyz.every((s) => s === 200), 'the webhook stayed ready throughout');
      assert.ok(
        kueueWrites.some((l) => l.decision === 'allowed'),
        "Kueue's writes (its resumes) went through the webhook and were admitted",
      );
      const tj = await waitFor('Kueue resumed its job', async () => {
        const q = await w.tj.get(NS, 'queued');
        return q.spec.suspend === false ? q : undefined;
      });
      assert.equal(tj.metadata.labels[QUEUE_LABEL], 'queue');
    });

    it('by design: with no reconciler running (its Lease released), only a count change that needs a rebuild is refused (503, for now); once one leads, the same change is admitted and the JobSet rebuilt', async () => {
      for (const p of reconcilers) if (!p.exitStatus) await p.stop();
      // One reconciler that leads, then stops gracefully: it releases the Lease.
      const first = await startReconciler(false);
      await waitFor('a reconciler leads', () => leads(first), { timeoutMs: 30_000 });
      const current = (await w.tj.get(NS, 'scaled')).spec.trainer.numNodes as number;
      await a.waitJobSet(NS, 'scaled', `rebuilt with ${current}`, (js) => parallelism(js) === current, 60_000);
      await first.proc.stop();
      const target = current === 1 ? 3 : 1;
      const refused = await w.tj.update(NS, 'scaled', (o) => (o.spec.trainer.numNodes = target));
      assert.equal(classify(refused), 'not-now', JSON.stringify(refused));
      assert.match(refused.allowed ? '' : refused.refusal.message, /no reconciler leads/);
      await waitFor('refused for the released Lease, not a failed read (the webhook logs why)', () =>
        webhook
          .logLines()
          .some(
            (l) =>
              l.component === 'count-change' &&
              l.name === 'scaled' &&
              /no reconciler leads.*no holder/.test(String(l.detail)),
          ),
      );
      // Everything else goes on.
      assert.ok((await w.tj.create(torchTrainJob('while-none', NS))).allowed);
      assert.ok((await w.tj.update(NS, 'while-none', (o) => (o.spec.suspend = false))).allowed);
      assert.ok((await w.tj.update(NS, 'while-none', (o) => (o.spec.suspend = true))).allowed);
      const back = await startReconciler(false);
      await waitFor('a reconciler leads again', () => leads(back), { timeoutMs: 30_000 });
      const admitted = await waitFor('the same change admitted', async () => {
        const out = await w.tj.update(NS, 'scaled', (o) => (o.spec.trainer.numNodes = target));
        return out.allowed ? out : undefined;
      });
      assert.ok(admitted.allowed);
      await a.waitJobSet(NS, 'scaled', `rebuilt with ${target}`, (js) => parallelism(js) === target, 60_000);
    });

    it('a stuck Lease: its leader SIGKILLed, a count change is admitted while the Lease is fresh and carried out once the next reconciler has taken it', async () => {
      for (const p of reconcilers) if (!p.exitStatus) await p.stop();
      const dying = await startReconciler(false);
      await waitFor('a reconciler leads', () => leads(dying), { timeoutMs: 30_000 });
      // A job of its own with a JobSet (Trainer builds it at once, suspended).
      assert.ok((await w.tj.create(torchTrainJob('stuck', NS))).allowed);
      await a.waitJobSet(NS, 'stuck', 'built by Trainer', (js) => parallelism(js) === 1);
      dying.proc.kill('SIGKILL');
      await dying.proc.exited;
      // Its Lease still names it and was renewed within its 15 s: the webhook counts it as led.
      const target = 2;
      const admitted = await w.tj.update(NS, 'stuck', (o) => (o.spec.trainer.numNodes = target));
      assert.equal(classify(admitted), 'admitted', JSON.stringify(admitted));
      const next = await startReconciler(false);
      await waitFor("the next reconciler leads (once the dead holder's Lease expired)", () => leads(next), {
        timeoutMs: 40_000,
      });
      await a.waitJobSet(
        NS,
        'stuck',
        `rebuilt with ${target} by the next leader`,
        (js) => parallelism(js) === target,
        60_000,
      );
    });
  },
);
