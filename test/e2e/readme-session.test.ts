// README.md's "## The workflow" shows a kubectl session: a count change of a running TrainJob
// refused, then suspended and scaled in one update (two warnings, patched), then resumed. This file
// runs each of its commands, as written, with the pinned kubectl against the real API server of
// the default install, in the cell TJW_CELL names (it runs in every cell of the version matrix:
// hack/test-matrix.ts COMPAT_FILES). The world is test/reconciler/support/world.ts's: the cell's
// Trainer CRD with the CRD patch, `serve` registered as the webhook, the Trainer and JobSet
// managers, KWOK nodes, and the reconciler sidecar leading. The state is the README's: TrainJob
// ml-team/llama-finetune on torch-distributed, 2 nodes, running, its 2 pods running. What kubectl
// prints (stderr, where its warnings and errors go, then stdout) must be the README's lines, each
// exactly (or, a README line ending in `…`, its start). A README edited to something kubectl does
// not print fails here; so does a README block whose commands are not kubectl commands.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  controlPlaneAvailability,
  currentCell,
  pods,
  projectRoot,
  upstreamControllersAvailability,
  waitFor,
  skipUnless,
} from '../harness/index.ts';
import type { Sidecar } from '../reconciler/support/sidecar.ts';
import { api, startWorld, startWorldReconciler, torchTrainJob, type World } from '../reconciler/support/world.ts';
import { consoleSession, shellWords, type SessionStep } from './support/console-session.ts';
import type { Obj } from './support/trainjobs.ts';

const README = path.join(projectRoot, 'README.md');
const HEADING = '## The workflow';
/** The session's TrainJob, as the README names it. */
const NS = 'ml-team';
const NAME = 'llama-finetune';
const NODES = 2;

const cell = currentCell();
const skip = skipUnless(controlPlaneAvailability(), upstreamControllersAvailability());

const session = (): SessionStep[] => consoleSession(readFileSync(README, 'utf8'), HEADING);

/** kubectl's words of a step: the command split as a shell would, `kubectl` first. */
function kubectlArgs(step: SessionStep): string[] {
  const words = shellWords(step.command);
  assert.equal(words[0], 'kubectl', `README.md line ${step.line}: only kubectl commands are run here`);
  return words.slice(1);
}

/** The first line where kubectl's lines and the README's differ (a README line ending in `…`: its start), or -1. */
function firstDifference(expected: string[], got: string[]): number {
  const n = Math.max(expected.length, got.length);
  for (let i = 0; i < n; i++) {
    const e = expected[i];
    const g = got[i];
    if (e === undefined || g === undefined) return i;
    if (e.endsWith('…') ? !g.startsWith(e.slice(0, -1)) : g !== e) return i;
  }
  return -1;
}

describe('README.md: the workflow session is a list of kubectl commands and their output', () => {
  it('splits a command line as a shell does, and refuses one that needs a shell', () => {
    assert.deepEqual(shellWords(`kubectl  -p '{"a": 1}' "x\\"y" a\\ b c'd'"e"`), [
      'kubectl',
      '-p',
      '{"a": 1}',
      'x"y',
      'a b',
      'cde',
    ]);
    for (const line of ['kubectl get pods | head', 'kubectl get $X', "kubectl -p '{", 'kubectl get pods > out'])
      assert.throws(() => shellWords(line), Error, line);
  });
  it('parses: kubectl commands, each with output', () => {
    const steps = session();
    assert.ok(steps.length > 0, `README.md "${HEADING}": its console block shows no command`);
    for (const s of steps) {
      kubectlArgs(s);
      assert.ok(s.output.length > 0, `README.md line ${s.line}: the command shows no output`);
    }
  });
});

describe(`[${cell.name}] README.md "${HEADING}": kubectl prints what the README shows`, { skip }, () => {
  let w: World;
  let sidecar: Sidecar | undefined;

  before(async () => {
    w = await startWorld({ trainer: true, webhook: true });
    const a = api(w.cp);
    // The reconciler leads, and the webhook knows it: a dry-run count change of a suspended
    // TrainJob with a JobSet is refused (503) until then.
    sidecar = await startWorldReconciler(w);
    const probeNs = 'lead-probe';
    await w.cp.kubectl(['create', 'namespace', probeNs]);
    const probe = await w.tj.create(torchTrainJob('probe', probeNs));
    assert.ok(probe.allowed, JSON.stringify(probe));
    await a.waitJobSet(probeNs, 'probe', 'built by Trainer', () => true, 90_000);
    await waitFor(
      'the webhook admits a count change (a reconciler leads)',
      async () => (await w.tj.update(probeNs, 'probe', (o: Obj) => (o.spec.trainer.numNodes = 2), 'All')).allowed,
      { timeoutMs: 60_000 },
    );

    // The README's TrainJob: 2 nodes, running, both pods running and counted by the Job's status
    // (the webhook's warning counts pods from the JobSet's Jobs' status.active).
    await w.cp.kubectl(['create', 'namespace', NS]);
    const t = torchTrainJob(NAME, NS, { suspend: false }) as Obj;
    t.spec.trainer.numNodes = NODES;
    const created = await w.tj.create(t);
    assert.ok(created.allowed, JSON.stringify(created));
    await pods(w.cp).waitJobSetRunning(NS, NAME, NODES, 'node', 90_000);
    await waitFor(
      `the Jobs of JobSet ${NS}/${NAME} count ${NODES} active pods`,
      async () => {
        const out = await w.cp.kubectl([
          'get',
          'jobs',
          '-n',
          NS,
          '-l',
          `jobset.sigs.k8s.io/jobset-name=${NAME}`,
          '-o',
          'jsonpath={.items[*].status.active}',
        ]);
        const active = out.stdout.split(' ').reduce((n, s) => n + (Number(s) || 0), 0);
        return active === NODES;
      },
      { timeoutMs: 60_000 },
    );
  });
  after(async () => {
    if (process.exitCode && w) process.stderr.write(`[${cell.name}]\n${w.cp.logTails(30)}`);
    await sidecar?.proc.stop();
    await w?.stop();
  });

  it(`[${cell.name}] each command, run in turn, prints the README's lines`, async () => {
    for (const step of session()) {
      const args = kubectlArgs(step);
      const out = await w.cp.kubectl(args, { check: false });
      // kubectl writes warnings and errors to stderr as they come, before the result on stdout.
      const got = (out.stderr + out.stdout).replace(/\n$/, '').split('\n');
      console.log(`README.md line ${step.line}: $ ${step.command}\n${got.join('\n')}`);
      const at = firstDifference(step.output, got);
      assert.equal(
        at,
        -1,
        `README.md line ${step.line}: $ ${step.command}\n` +
          `  output line ${at + 1} differs\n  the README: ${step.output[at] ?? '(no line)'}\n  kubectl:    ${got[at] ?? '(no line)'}\n` +
          `  kubectl printed (exit ${out.code}):\n${got.map((l) => `    ${l}`).join('\n')}`,
      );
    }
  });
});
