// The reconciler's report of Trainer's controller image beside the line: what each observation of
// the Deployment says and at which level (a table), each new report logged once (a 403 retried
// every few seconds is one warning), and the two gauges.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TRAINER_LINES, UNKNOWN_TRAINER_LINE } from '../../src/api/trainer-line.ts';
import { createReconcilerMetrics } from '../../src/reconciler/metrics.ts';
import {
  createLineHint,
  reportHint,
  type HintState,
  type ManagerObservation,
} from '../../src/reconciler/trainer-line-hint.ts';
import type { Logger } from '../../src/observability/logger.ts';

const target = { namespace: 'kubeflow-system', name: 'kubeflow-trainer-controller-manager' };
const REPO = 'ghcr.io/kubeflow/trainer/trainer-controller-manager';
const withImage = (image: unknown): ManagerObservation => ({
  state: 'read',
  deployment: { spec: { template: { spec: { containers: [{ name: 'manager', image }] } } } },
});
const v230 = TRAINER_LINES['v2.3.0'];

describe('reportHint: what is said, at which level', () => {
  const table: [string, ManagerObservation, HintState, 'debug' | 'info' | 'warn', RegExp][] = [
    ['not read yet', { state: 'pending' }, 'pending', 'debug', /not read yet/],
    [
      'the same release',
      withImage(`${REPO}:v2.3.0`),
      'agrees',
      'info',
      /tag v2\.3\.0 \(Trainer v2\.3\.0\) agrees with the TrainJob CRD \(Trainer v2\.3\.0\)/,
    ],
    ['a newer release', withImage(`${REPO}:v2.4.0`), 'disagrees', 'warn', /newer than the TrainJob CRD/],
    ['latest', withImage(`${REPO}:latest`), 'uninformative', 'info', /a moving tag/],
    ['a digest', withImage(`${REPO}@sha256:${'e'.repeat(64)}`), 'unreadable', 'info', /pinned by digest/],
    ['an image that is a number', withImage(42), 'unreadable', 'info', /image is a number/],
    [
      'no Deployment',
      { state: 'absent' },
      'absent',
      'info',
      /kubeflow-system\/kubeflow-trainer-controller-manager is not there .*another Helm release name.*--trainer-deployment NS\/NAME/,
    ],
    [
      'no right',
      { state: 'forbidden', error: 'HTTP 403: deployments.apps is forbidden' },
      'forbidden',
      'warn',
      /\(HTTP 403: deployments\.apps is forbidden\): no right to it \(the Role trainjob-webhook-reconciler-trainer-deployment in kubeflow-system.*the TrainJob CRD alone finds the line.*--no-trainer-deployment/,
    ],
    [
      'another failure',
      { state: 'failing', error: 'HTTP 500: boom' },
      'failing',
      'warn',
      /failed \(HTTP 500: boom\); retrying/,
    ],
  ];
  for (const [name, seen, state, level, message] of table)
    it(`${name}: ${state} (${level})`, () => {
      const r = reportHint(target, v230, seen);
      assert.deepEqual([r.state, r.level], [state, level]);
      assert.match(r.message, message);
    });
  it('--no-trainer-deployment: off, whatever was seen', () => {
    assert.equal(reportHint(undefined, v230, withImage(`${REPO}:v2.4.0`)).state, 'off');
  });
  it('before the CRD is read (or when it cannot be): judged against no known line', () => {
    assert.equal(reportHint(target, UNKNOWN_TRAINER_LINE, withImage(`${REPO}:v2.4.0`)).state, 'unknown-line');
  });
});

function recordingLogger() {
  const lines: { level: string; fields: Record<string, unknown>; msg: string }[] = [];
  const at = (level: string) => (fields: Record<string, unknown>, msg: string) => lines.push({ level, fields, msg });
  return { logger: { debug: at('debug'), info: at('info'), warn: at('warn') } as unknown as Logger, lines };
}

describe('createLineHint: each new report logged once; the gauges follow', () => {
  it('a 403 retried is one warning; the right granted and a disagreeing tag: one more, and the gauges say so', async () => {
    const { logger, lines } = recordingLogger();
    const metrics = createReconcilerMetrics();
    const hint = createLineHint({ target, logger, metrics });
    hint.line(v230);
    for (let i = 0; i < 5; i++) hint.observe({ state: 'forbidden', error: `HTTP 403: forbidden (try ${i})` });
    assert.equal(lines.filter((l) => l.level === 'warn').length, 1, 'the 403 is said once');
    const text = async () => (await metrics.registry.metrics()).split('\n');
    assert.ok((await text()).includes('trainjob_reconciler_trainer_line_hint{state="forbidden"} 1'));

    hint.observe(withImage(`${REPO}:v2.4.0`));
    hint.observe(withImage(`${REPO}:v2.4.0`)); // a status update of the same Deployment
    const warnings = lines.filter((l) => l.level === 'warn');
    assert.equal(warnings.length, 2);
    assert.deepEqual(
      { lineHint: warnings[1].fields.lineHint, line: warnings[1].fields.line, imageTag: warnings[1].fields.imageTag },
      { lineHint: 'disagrees', line: 'v2.3.0', imageTag: 'v2.4.0' },
    );
    const scraped = await text();
    assert.ok(scraped.includes('trainjob_reconciler_trainer_line_hint{state="disagrees"} 1'));
    assert.ok(
      !scraped.some((l) => l.startsWith('trainjob_reconciler_trainer_line_hint{state="forbidden"}')),
      'one state',
    );
    assert.ok(
      scraped.includes('trainjob_reconciler_trainer_line_hint_disagreement{line="v2.3.0",image_tag="v2.4.0"} 1'),
    );

    // The CRD upgraded to main (stands in for v2.4): the same tag now agrees, the disagreement is 0.
    hint.line(TRAINER_LINES['main-8c0f5059']);
    assert.equal(lines.at(-1)?.level, 'info');
    assert.match(lines.at(-1)!.msg, /agrees/);
    const after = await text();
    assert.ok(
      after.includes('trainjob_reconciler_trainer_line_hint_disagreement{line="main-8c0f5059",image_tag="v2.4.0"} 0'),
    );
    assert.equal(after.filter((l) => l.startsWith('trainjob_reconciler_trainer_line_hint_disagreement{')).length, 1);
  });
});
