// Upgrading this project: a rolling update runs the previous version's pods beside this one's
// for a while, so each version's webhook must hand its hints to the other's sidecar, read the
// other's Lease, and each sidecar must carry out what the other version's webhook admitted. The
// previous version is the commit hack/versions.env names (PROJECT_PREVIOUS_COMMIT, the last landed
// one), taken from this clone's history with `git archive` and run with this checkout's
// node_modules (its package-lock.json must be the same; the test says so when it is not). Beside
// the real Trainer and JobSet managers, in the world where pods run: the previous webhook with
// this sidecar, then this webhook with the previous sidecar (a rollback, or the other half of the
// rollout), each carrying out a scale of a running TrainJob (suspend, scale, resume).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  controlPlaneAvailability,
  projectRoot,
  readVersionsFile,
  upstreamControllersAvailability,
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
import { registerWebhook, startWebhook, type WebhookProcess } from './support/webhook.ts';

const previous = readVersionsFile().PROJECT_PREVIOUS_COMMIT;

/** Why the previous version cannot be had from this clone (a shallow clone lacks its commit), or false. */
function previousMissing(): string | false {
  try {
    execFileSync('git', ['-C', projectRoot, 'cat-file', '-e', `${previous}^{commit}`], { stdio: 'ignore' });
    return false;
  } catch {
    return `this clone lacks the previous version's commit ${previous} (hack/versions.env PROJECT_PREVIOUS_COMMIT): clone with its history to run the upgrade test`;
  }
}

const controlPlane = controlPlaneAvailability();
const controllers = upstreamControllersAvailability();
const skip = !controlPlane.available
  ? controlPlane.reason
  : !controllers.available
    ? controllers.reason
    : previousMissing();

type Lock = { packages?: Record<string, { version?: string; integrity?: string }> };

/** The packages `older` locks that `newer` lacks or locks at another version or integrity (the root aside). */
function lockedDifferently(older: Lock, newer: Lock): string[] {
  return Object.entries(older.packages ?? {})
    .filter(([name]) => name !== '')
    .filter(
      ([name, p]) => newer.packages?.[name]?.version !== p.version || newer.packages?.[name]?.integrity !== p.integrity,
    )
    .map(([name, p]) => `${name}@${p.version}`);
}

describe(`upgrading this project: the previous version (${previous?.slice(0, 8)}) beside this one`, { skip }, () => {
  let w: World;
  let a: ReturnType<typeof api>;
  let oldTree: string;
  const ns = 'rollout';
  const { create, patch } = inNamespace(ns, () => w);
  const webhooks: WebhookProcess[] = [];
  const sidecars: Sidecar[] = [];
  const leaseArgs = ['--reconciler-lease', `${RECONCILER_SA.namespace}/trainjob-webhook-reconciler`];

  const webhook = async (name: string, root: string) => {
    const wh = await startWebhook(w.cp, {
      name,
      root,
      handoff: `http://127.0.0.1:${w.handoffPort}/hints`,
      extraArgs: leaseArgs,
    });
    webhooks.push(wh);
    // The configuration now points at this one; the API server takes it up within a second or so.
    await registerWebhook(w.cp, wh);
    const calls = () => wh.counter('trainjob_webhook_requests_total', /webhook="validate"/);
    const before = await calls();
    await waitFor(`the API server calls ${name}`, async () => {
      await w.tj.create(torchTrainJob('probe', ns) as Record<string, any>, 'All');
      return (await calls()) > before;
    });
    return wh;
  };
  /** A sidecar; `handoff`: on the port the webhooks hand hints to (else a port of its own, as in another pod). */
  const sidecar = async (name: string, root: string, handoff: boolean) => {
    const s = await startSidecar(w.cp, {
      name,
      root,
      mode: 'companion',
      kubeconfig: w.reconcilerKubeconfig.path,
      leaseNamespace: RECONCILER_SA.namespace,
      handoffPort: handoff ? w.handoffPort : undefined,
    });
    sidecars.push(s);
    return s;
  };
  /** Suspend, scale, resume a running TrainJob: the JobSet is rebuilt with the new count and its pods run. */
  const scaleRunning = async (name: string, from: number, to: number, who: string) => {
    const old = await a.waitJobSet(
      ns,
      name,
      `running with ${from}`,
      (js) => parallelism(js) === from && !js.spec?.suspend,
    );
    await patch(name, { spec: { suspend: true } });
    await patch(name, { spec: { trainer: { numNodes: to } } });
    await patch(name, { spec: { suspend: false } });
    await a.waitJobSet(
      ns,
      name,
      `${who}: re-created with ${to} nodes, running`,
      (js) => js.metadata.uid !== old.metadata.uid && parallelism(js) === to && js.spec?.suspend === false,
      90_000,
    );
    await waitFor(`${who}: ${to} pods running`, async () => {
      const pods = (await a.pods(ns, name)).filter(
        (p) => p.status?.phase === 'Running' && !p.metadata?.deletionTimestamp,
      );
      return pods.length === to;
    });
  };

  before(async () => {
    oldTree = await mkdtemp(path.join(tmpdir(), 'tjw-previous-'));
    execFileSync('bash', ['-c', `git -C '${projectRoot}' archive '${previous}' | tar -x -C '${oldTree}'`]);
    const [oldLock, lock] = await Promise.all([
      readFile(path.join(oldTree, 'package-lock.json'), 'utf8'),
      readFile(path.join(projectRoot, 'package-lock.json'), 'utf8'),
    ]);
    // It runs on this checkout's node_modules: every package it locks must be there, the same
    // (packages this checkout added, such as a new devDependency, do not matter to it).
    assert.deepEqual(
      lockedDifferently(JSON.parse(oldLock), JSON.parse(lock)),
      [],
      `the previous version (${previous}) locks other packages than this checkout: run \`npm ci\` in its tree, or move PROJECT_PREVIOUS_COMMIT`,
    );
    await symlink(path.join(projectRoot, 'node_modules'), path.join(oldTree, 'node_modules'));
    w = await startWorld({ trainer: true, webhook: false });
    a = api(w.cp);
    await w.cp.kubectl(['create', 'namespace', ns]);
  });
  after(async () => {
    if (process.exitCode && w) process.stderr.write(w.cp.logTails(30));
    for (const s of sidecars) await s.proc.stop();
    for (const wh of webhooks) await wh.proc.stop();
    await w?.stop();
    if (oldTree) await rm(oldTree, { recursive: true, force: true });
  });

  it("the previous webhook and this sidecar: the previous version's hint and admission judgment, this version's rebuild", async () => {
    await webhook('webhook-previous', oldTree);
    await sidecar('reconciler-current', projectRoot, true);
    const tj: TrainJob = torchTrainJob('rolled', ns, { suspend: false });
    await create(tj);
    await scaleRunning('rolled', 1, 2, 'previous webhook, current sidecar');
    // The previous webhook's hints reached this sidecar and were understood (none refused as "not a hint").
    const hints = (result: string) =>
      sidecars[0].metric('trainjob_reconciler_handoff_hints_total', new RegExp(`result="${result}"`));
    assert.ok((await hints('received')) >= 3, 'the suspend, the scale and the resume were each handed on');
    assert.equal(await hints('invalid'), 0);
  });

  // In a rollout each pod's webhook hands hints to its own pod's sidecar; the leader may be the
  // other version's, in another pod, which acts on what its watch sees (a hint is only a nudge).
  it("this webhook and the previous sidecar in another pod (the Lease handed over when this sidecar stops): this version's judgment reads the previous sidecar's Lease; it carries out the scale", async () => {
    await sidecar('reconciler-previous', oldTree, false);
    await webhook('webhook-current', projectRoot);
    // This sidecar leads; stopped, it releases the Lease and the previous one takes it.
    await sidecars[0].proc.stop();
    await waitFor('the previous sidecar leads', async () =>
      sidecars[1].logLines().some((l) => String(l.msg).startsWith('leader election: acquired the Lease')),
    );
    await scaleRunning('rolled', 2, 3, 'current webhook, previous sidecar');
  });
});
