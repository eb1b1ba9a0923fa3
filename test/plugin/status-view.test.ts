// The status view and its rendering, from observed jobs.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { JobSet, TrainJob } from '../../src/api/objects.ts';
import { renderBlock, renderTable, statusView } from '../../src/plugin/status-view.ts';

const js = (parallelism: number, initializer = false): JobSet => ({
  metadata: { name: 'llama', uid: 'js' },
  spec: {
    replicatedJobs: [
      ...(initializer
        ? [
            {
              name: 'dataset-initializer',
              template: {
                metadata: { labels: { 'trainer.kubeflow.org/trainjob-ancestor-step': 'dataset-initializer' } },
              },
            },
          ]
        : []),
      {
        name: 'node',
        template: {
          metadata: { labels: { 'trainer.kubeflow.org/trainjob-ancestor-step': 'trainer' } },
          spec: { parallelism },
        },
      },
    ],
  },
});
const tj = (
  numNodes: number,
  suspend: boolean,
  annotations: Record<string, string> = {},
  labels: Record<string, string> = {},
): TrainJob => ({
  metadata: { name: 'llama', namespace: 'ml-team', annotations, labels },
  spec: { suspend, trainer: { numNodes } },
});

describe('status view', () => {
  it('a running job at its count: nothing pending, how to scale', () => {
    const v = statusView({
      trainJob: tj(2, false),
      jobSet: js(2),
      pods: [{ name: 'a', phase: 'Running', deleting: false }],
    });
    assert.equal(
      renderBlock(v),
      [
        'Name:         ml-team/llama',
        'Nodes:        2 asked; the JobSet is built for 2',
        'State:        Running; 1 of 1 pods running',
        'Rebuild:      none',
        'Next:         to change its node count: kubectl trainjob scale llama -n ml-team --nodes N',
      ].join('\n'),
    );
  });
  it('a rebuild pending with initializers, Kueue holding it back', () => {
    const v = statusView({
      trainJob: tj(
        4,
        true,
        {
          'trainjob-webhook.kubeflow.org/jobset-rebuild': '{"state":"Waiting","numNodes":4,"reason":"pods still run"}',
        },
        { 'kueue.x-k8s.io/queue-name': 'q' },
      ),
      jobSet: js(2, true),
      pods: [],
      kueue: {
        queue: 'q',
        workloads: [{ name: 'w', active: true, admitted: false, reason: 'Pending', message: 'insufficient quota' }],
      },
    });
    assert.equal(v.rebuild.state, 'pending');
    assert.deepEqual(v.initializers, ['dataset-initializer']);
    const block = renderBlock(v);
    assert.match(block, /^Rebuild: +pending \(Waiting\): pods still run$/m);
    assert.match(block, /^Kueue: +queue q; not admitted: Pending: insufficient quota$/m);
    assert.match(block, /^Initializers: +dataset-initializer: a rebuild runs them again$/m);
    assert.match(renderTable([v]), /^llama +4 +2 +Suspended +pending +Pending$/m);
  });
  it('a pause the plugin holds, and an interrupted scale, say how to go on', () => {
    const held = statusView({
      trainJob: tj(2, true, {
        'trainjob-webhook.kubeflow.org/scale-progress': '{"nodes":2,"step":"held","pausedBefore":false}',
      }),
      jobSet: js(2),
      pods: [],
    });
    assert.match(
      held.next,
      /paused by "kubectl trainjob scale --no-resume" at 2 nodes: "kubectl trainjob scale llama -n ml-team --nodes 2" resumes it/,
    );
    const cut = statusView({
      trainJob: tj(2, true, {
        'trainjob-webhook.kubeflow.org/scale-progress': '{"nodes":4,"step":"paused","pausedBefore":false}',
      }),
      jobSet: js(2),
      pods: [],
    });
    assert.match(
      cut.next,
      /a scale to 4 nodes did not finish: "kubectl trainjob scale llama -n ml-team --nodes 4" continues it/,
    );
  });
  it('the table pads its columns as kubectl does', () => {
    const a = statusView({ trainJob: tj(1, false), jobSet: js(1), pods: [] });
    assert.equal(renderTable([a]).split('\n')[0], 'NAME    NODES   JOBSET   STATE     REBUILD   KUEUE');
  });
  it('prints what anyone may write on the cluster without its terminal controls, each string cut at 300', () => {
    const reason = 'x\u001b]0;pwned\u0007\u001b[2J\u001b[31mFAKE';
    const v = statusView({
      trainJob: tj(
        4,
        true,
        { 'trainjob-webhook.kubeflow.org/jobset-rebuild': JSON.stringify({ state: 'Blocked', numNodes: 4, reason }) },
        { 'kueue.x-k8s.io/queue-name': 'q' },
      ),
      jobSet: js(2),
      pods: [],
      kueue: {
        queue: 'q',
        workloads: [
          { name: 'w', active: true, admitted: false, reason: 'Pending', message: `\u009b2J${'m'.repeat(1000)}` },
        ],
      },
    });
    const block = renderBlock(v);
    // eslint-disable-next-line no-control-regex -- no control but the newlines between the lines
    assert.doesNotMatch(block, /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
    assert.match(block, /^Rebuild: +blocked \(Blocked\): x\^\[\]0;pwned\^G\^\[\[2J\^\[\[31mFAKE$/m);
    assert.match(block, /^Next: +the rebuild is blocked: x\^\[\]0;pwned\^G\^\[\[2J\^\[\[31mFAKE$/m);
    const kueue = /^Kueue: +queue q; not admitted: Pending: (.*)$/m.exec(block)?.[1];
    assert.equal(kueue, `\\u009b2J${'m'.repeat(300 - 1 - 8)}…`);
    const table = renderTable([{ ...v, kueue: { queue: 'q', admitted: false, reason: '\u001b[2JQuota\u009b' } }]).split(
      '\n',
    )[1];
    assert.equal(table, 'llama   4       2        Suspended   blocked   ^[[2JQuota\\u009b');
    // JSON and YAML show the values as they are (their encoders escape them).
    assert.equal(v.rebuild.reason, reason);
    assert.equal(v.kueue?.message?.length, 1003);
  });
});
