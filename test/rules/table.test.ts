// The rule table, row by row: allow and deny, add, change and remove, around suspension, negative
// counts and finished jobs. Run once with the table alone and once behind Trainer v2.3.0's CRD
// (the release users run: no numNodes minimum), where the CRD's schema types status and spec.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { buildPolicy, type Policy } from '../../src/rules/policy.ts';
import { decideUpdate } from '../../src/rules/decide.ts';
import { errorString } from '../../src/field/errors.ts';
import { RULES } from '../../src/rules/table.ts';
import { policyFromCrd } from '../../src/rules/crd-policy.ts';
import { readYaml, trainJobCrdObject, trainJobCrdV230Object, upstreamCrdPath } from '../crd/fixtures.ts';
import { condition, finished, trainJob, variant, type TrainJob } from './fixtures.ts';

const policy = buildPolicy();
const running = variant(trainJob(), (o) => (o.spec.suspend = false));
const suspended = trainJob();
const FINISHED_ROW = 'spec.trainer.numNodes FieldValueForbidden trainer-numNodes-not-after-finish';
const SUSPEND_ROW = 'spec.trainer.numNodes FieldValueForbidden trainer-numNodes-while-suspended';
const NEGATIVE_ROW = 'spec.trainer.numNodes FieldValueInvalid trainer-numNodes-not-negative';

interface Case {
  name: string;
  old: TrainJob;
  change: (o: TrainJob) => void;
  /** Expected causes as `field type origin`; empty means allowed. */
  want: string[];
  /**
   * Behind a CRD the API server first prunes unknown fields and defaults absent ones: the case then
   * means something else.
   */
  tableAlone?: true;
  /**
   * Behind a CRD whose schema has numNodes `minimum: 0` (main, #3809): its schema refuses a
   * negative count too, as the API server does, and says so first.
   */
  negativeRefusedBySchema?: true;
  /** Where every Failed is terminal (main, an unknown line, no CRD at all): these causes instead. */
  wantWhereFailedIsTerminal?: string[];
}

const cases: Case[] = [
  // spec.trainer: immutable fields, add/change/remove all count, suspended or not.
  {
    name: 'image changed',
    old: suspended,
    change: (o) => (o.spec.trainer.image = 'x:2'),
    want: ['spec.trainer.image FieldValueInvalid trainer-image-immutable'],
  },
  {
    name: 'image removed',
    old: suspended,
    change: (o) => delete o.spec.trainer.image,
    want: ['spec.trainer.image FieldValueInvalid trainer-image-immutable'],
  },
  {
    name: 'image added',
    old: variant(suspended, (o) => delete o.spec.trainer.image),
    change: (o) => (o.spec.trainer.image = 'x:1'),
    want: ['spec.trainer.image FieldValueInvalid trainer-image-immutable'],
  },
  {
    name: 'command reordered (atomic list)',
    old: suspended,
    change: (o) => o.spec.trainer.command.reverse(),
    want: ['spec.trainer.command FieldValueInvalid trainer-command-immutable'],
  },
  {
    name: 'args appended',
    old: suspended,
    change: (o) => o.spec.trainer.args.push('--x'),
    want: ['spec.trainer.args FieldValueInvalid trainer-args-immutable'],
  },
  {
    name: 'env reordered (list-type map: no change)',
    old: running,
    change: (o) => o.spec.trainer.env.reverse(),
    want: [],
  },
  {
    name: 'env value changed',
    old: suspended,
    change: (o) => (o.spec.trainer.env[0].value = '0.01'),
    want: ['spec.trainer.env FieldValueInvalid trainer-env-immutable'],
  },
  {
    name: 'env added',
    old: variant(suspended, (o) => delete o.spec.trainer.env),
    change: (o) => (o.spec.trainer.env = [{ name: 'A', value: '1' }]),
    want: ['spec.trainer.env FieldValueInvalid trainer-env-immutable'],
  },
  {
    name: 'resourcesPerNode changed',
    old: suspended,
    change: (o) => (o.spec.trainer.resourcesPerNode.limits['nvidia.com/gpu'] = 4),
    want: ['spec.trainer.resourcesPerNode FieldValueInvalid trainer-resourcesPerNode-immutable'],
  },
  {
    name: 'numProcPerNode removed',
    old: suspended,
    change: (o) => delete o.spec.trainer.numProcPerNode,
    want: ['spec.trainer.numProcPerNode FieldValueInvalid trainer-numProcPerNode-immutable'],
  },
  {
    name: 'a field the table does not name is immutable',
    old: suspended,
    change: (o) => (o.spec.trainer.futureField = 'x'),
    want: ['spec.trainer.futureField FieldValueInvalid trainer-unnamed-field-immutable'],
    tableAlone: true,
  },
  {
    name: 'trainer removed entirely (every field it had is a change; numNodes may go since the job is suspended)',
    old: suspended,
    change: (o) => delete o.spec.trainer,
    want: ['args', 'command', 'env', 'image', 'numProcPerNode', 'resourcesPerNode'].map(
      (f) => `spec.trainer.${f} FieldValueInvalid trainer-${f}-immutable`,
    ),
  },
  // spec.trainer.numNodes: only around a suspension (suspended before or after; nil is running).
  {
    name: 'numNodes changed while suspended before and after',
    old: suspended,
    change: (o) => (o.spec.trainer.numNodes = 2),
    want: [],
  },
  {
    name: 'numNodes changed together with suspending (Kueue resizes exactly so)',
    old: running,
    change: (o) => ((o.spec.suspend = true), (o.spec.trainer.numNodes = 2)),
    want: [],
  },
  {
    name: 'numNodes changed together with resuming',
    old: suspended,
    change: (o) => ((o.spec.suspend = false), (o.spec.trainer.numNodes = 3)),
    want: [],
  },
  {
    name: 'numNodes changed while running',
    old: running,
    change: (o) => (o.spec.trainer.numNodes = 2),
    want: [SUSPEND_ROW],
  },
  {
    name: 'numNodes changed, suspend absent on both sides (nil is running)',
    old: variant(running, (o) => delete o.spec.suspend),
    change: (o) => (o.spec.trainer.numNodes = 2),
    want: [SUSPEND_ROW],
  },
  {
    name: 'numNodes changed together with suspending from nil',
    old: variant(running, (o) => delete o.spec.suspend),
    change: (o) => ((o.spec.suspend = true), (o.spec.trainer.numNodes = 2)),
    want: [],
  },
  {
    name: 'numNodes added while running',
    old: variant(running, (o) => delete o.spec.trainer.numNodes),
    change: (o) => (o.spec.trainer.numNodes = 2),
    want: [SUSPEND_ROW],
  },
  {
    name: 'numNodes removed while suspended (back to the runtime default)',
    old: suspended,
    change: (o) => delete o.spec.trainer.numNodes,
    want: [],
  },
  {
    name: 'numNodes unchanged while running: nothing to refuse',
    old: running,
    change: (o) => (o.metadata.labels = { a: 'b' }),
    want: [],
  },
  // spec.trainer.numNodes: never to a negative count; 0 is allowed (with a warning); a stored negative count may stay.
  {
    name: 'numNodes changed to -1 while suspended',
    negativeRefusedBySchema: true,
    old: suspended,
    change: (o) => (o.spec.trainer.numNodes = -1),
    want: [NEGATIVE_ROW],
  },
  {
    name: 'numNodes added as -1 while suspended',
    negativeRefusedBySchema: true,
    old: variant(suspended, (o) => delete o.spec.trainer.numNodes),
    change: (o) => (o.spec.trainer.numNodes = -1),
    want: [NEGATIVE_ROW],
  },
  {
    name: 'numNodes changed to -1 while running: both reasons',
    negativeRefusedBySchema: true,
    old: running,
    change: (o) => (o.spec.trainer.numNodes = -1),
    want: [SUSPEND_ROW, NEGATIVE_ROW],
  },
  {
    name: 'numNodes changed to 0 while suspended',
    old: suspended,
    change: (o) => (o.spec.trainer.numNodes = 0),
    want: [],
  },
  {
    name: 'numNodes -1 stored, left unchanged while resuming (ratcheting)',
    old: variant(suspended, (o) => (o.spec.trainer.numNodes = -1)),
    change: (o) => (o.spec.suspend = false),
    want: [],
  },
  {
    name: 'numNodes -1 stored, changed to -2',
    negativeRefusedBySchema: true,
    old: variant(suspended, (o) => (o.spec.trainer.numNodes = -1)),
    change: (o) => (o.spec.trainer.numNodes = -2),
    want: [NEGATIVE_ROW],
  },
  {
    name: 'numNodes -1 stored, changed to 2',
    old: variant(suspended, (o) => (o.spec.trainer.numNodes = -1)),
    change: (o) => (o.spec.trainer.numNodes = 2),
    want: [],
  },
  {
    name: 'numNodes -1 stored, removed',
    old: variant(suspended, (o) => (o.spec.trainer.numNodes = -1)),
    change: (o) => delete o.spec.trainer.numNodes,
    want: [],
  },
  // spec.trainer.numNodes: never once Trainer will not reconcile the job again (read from the stored status).
  {
    name: 'numNodes changed on a Complete job',
    old: finished(suspended, 'Complete'),
    change: (o) => (o.spec.trainer.numNodes = 2),
    want: [FINISHED_ROW],
  },
  {
    name: 'numNodes changed on a job Failed with DeadlineExceeded',
    old: finished(suspended, 'Failed', 'DeadlineExceeded'),
    change: (o) => (o.spec.trainer.numNodes = 2),
    want: [FINISHED_ROW],
  },
  {
    name: 'numNodes changed while suspending a Complete job',
    old: finished(running, 'Complete'),
    change: (o) => ((o.spec.suspend = true), (o.spec.trainer.numNodes = 2)),
    want: [FINISHED_ROW],
  },
  {
    name: 'numNodes changed on a running Complete job: both reasons',
    old: finished(running, 'Complete'),
    change: (o) => (o.spec.trainer.numNodes = 2),
    want: [FINISHED_ROW, SUSPEND_ROW],
  },
  {
    name: 'numNodes removed on a Complete job',
    old: finished(suspended, 'Complete'),
    change: (o) => delete o.spec.trainer.numNodes,
    want: [FINISHED_ROW],
  },
  {
    name: 'numNodes changed on a job Failed otherwise (v2.2.1 and v2.3.0 reconcile it again; main never does)',
    old: finished(suspended, 'Failed', 'BackoffLimitExceeded'),
    change: (o) => (o.spec.trainer.numNodes = 2),
    want: [],
    wantWhereFailedIsTerminal: [FINISHED_ROW],
  },
  {
    name: 'numNodes changed with Complete not True',
    old: variant(suspended, (o) => ((o as any).status = { conditions: [condition('Complete', 'False', 'Running')] })),
    change: (o) => (o.spec.trainer.numNodes = 2),
    want: [],
  },
  {
    name: 'numNodes changed on a suspended job with only a Suspended condition',
    old: variant(suspended, (o) => ((o as any).status = { conditions: [condition('Suspended', 'True', 'Suspended')] })),
    change: (o) => (o.spec.trainer.numNodes = 2),
    want: [],
  },
  {
    name: 'a Complete job stays updatable where numNodes is unchanged',
    old: finished(suspended, 'Complete'),
    change: (o) => ((o.spec.suspend = false), (o.metadata.labels = { a: 'b' })),
    want: [],
  },
  {
    name: 'the stored status decides, not the status sent with the update',
    old: finished(suspended, 'Complete'),
    change: (o) => ((o.spec.trainer.numNodes = 2), delete (o as any).status),
    want: [FINISHED_ROW],
  },
  // Outside spec.trainer: upstream's transition rules (an absent old value may be set).
  {
    name: 'runtimeRef changed',
    old: suspended,
    change: (o) => (o.spec.runtimeRef.name = 'other'),
    want: ['spec.runtimeRef FieldValueInvalid runtimeRef-immutable'],
  },
  {
    name: 'managedBy changed',
    old: suspended,
    change: (o) => (o.spec.managedBy = 'kueue.x-k8s.io/multikueue'),
    want: ['spec.managedBy FieldValueInvalid managedBy-immutable'],
  },
  {
    name: 'managedBy added where absent (upstream allows)',
    old: variant(suspended, (o) => delete o.spec.managedBy),
    change: (o) => (o.spec.managedBy = 'kueue.x-k8s.io/multikueue'),
    want: [],
    tableAlone: true,
  },
  {
    name: 'activeDeadlineSeconds changed',
    old: variant(suspended, (o) => (o.spec.activeDeadlineSeconds = 60)),
    change: (o) => (o.spec.activeDeadlineSeconds = 61),
    want: ['spec.activeDeadlineSeconds FieldValueInvalid activeDeadlineSeconds-immutable'],
  },
  {
    name: 'initializer changed',
    old: variant(suspended, (o) => (o.spec.initializer = { model: { storageUri: 'hf://a' } })),
    change: (o) => (o.spec.initializer.model.storageUri = 'hf://b'),
    want: ['spec.initializer FieldValueInvalid initializer-immutable'],
  },
  {
    name: 'runtimePatches added while running',
    old: running,
    change: (o) => (o.spec.runtimePatches = [{ manager: 'kueue' }]),
    want: ['spec.runtimePatches FieldValueForbidden runtimePatches-while-suspended'],
  },
  {
    name: 'runtimePatches added while suspended',
    old: suspended,
    change: (o) => (o.spec.runtimePatches = [{ manager: 'kueue' }]),
    want: [],
  },
  {
    name: 'several violations are all reported',
    old: running,
    change: (o) => ((o.spec.trainer.image = 'x:2'), (o.spec.trainer.numNodes = 4)),
    want: [
      'spec.trainer.image FieldValueInvalid trainer-image-immutable',
      'spec.trainer.numNodes FieldValueForbidden trainer-numNodes-while-suspended',
    ],
  },
];

const behindV230Crd = policyFromCrd(trainJobCrdV230Object());
const behindV221Crd = policyFromCrd(readYaml(upstreamCrdPath('trainer-v2.2.1/trainer.kubeflow.org_trainjobs.yaml')));
const behindMainCrd = policyFromCrd(trainJobCrdObject());
for (const [title, p] of [
  ['rule table (no CRD: the table alone, no line known: the careful rules)', policy],
  ["rule table behind Trainer v2.3.0's CRD", behindV230Crd],
  ["rule table behind Trainer v2.2.1's CRD", behindV221Crd],
  ["rule table behind main@8c0f5059's CRD (numNodes minimum: 0, Failed terminal)", behindMainCrd],
] as [string, Policy][]) {
  describe(title, () => {
    for (const c of cases.filter((x) => p === policy || !x.tableAlone)) {
      it(c.name, () => {
        const verdict = decideUpdate(p, variant(c.old, c.change), c.old);
        const got = verdict.causes.map((e) => `${e.field} ${e.type} ${e.origin}`).sort();
        const want = [
          ...(p.line.line.failedIsTerminal ? (c.wantWhereFailedIsTerminal ?? c.want) : c.want),
          ...(c.negativeRefusedBySchema && p.line.features?.numNodesMinimum === 0
            ? ['spec.trainer.numNodes FieldValueInvalid schema']
            : []),
        ];
        assert.deepEqual(got, [...want].sort(), verdict.causes.map(errorString).join('\n'));
      });
    }
  });
}

// In the cluster (scope 'table') the webhook gets both objects as the API server decoded and
// prepared them, and checks the table alone: the same causes, less the schema's own (the API
// server reports those before it calls the webhook), and nothing of the schema or the CRD's rules.
for (const [title, p] of [
  ["in the cluster: the table alone behind Trainer v2.3.0's CRD", behindV230Crd],
  ["in the cluster: the table alone behind Trainer v2.2.1's CRD", behindV221Crd],
  ["in the cluster: the table alone behind main@8c0f5059's CRD", behindMainCrd],
] as [string, Policy][]) {
  describe(title, () => {
    const { checks } = p.crd!;
    // The stored object decoded (status kept); the new one decoded and prepared against it.
    const stored = (obj: unknown) => checks.decode(obj).object;
    const asSent = (obj: unknown, old: unknown) => checks.prepare(checks.decode(obj).object, old);
    for (const c of cases.filter((x) => !x.tableAlone)) {
      it(c.name, () => {
        const old = stored(c.old);
        const verdict = decideUpdate(p, asSent(variant(c.old, c.change), old), old, 'table');
        const got = verdict.causes.map((e) => `${e.field} ${e.type} ${e.origin}`).sort();
        const want = p.line.line.failedIsTerminal ? (c.wantWhereFailedIsTerminal ?? c.want) : c.want;
        assert.deepEqual(got, [...want].sort(), verdict.causes.map(errorString).join('\n'));
        assert.equal(verdict.checkedWholeObject, undefined);
      });
    }
  });
}

describe('the line each policy follows is found from its CRD', () => {
  it('no CRD: unknown; v2.3.0, v2.2.1 and main: theirs', () => {
    assert.deepEqual(
      [policy, behindV230Crd, behindV221Crd, behindMainCrd].map((p) => p.line.line.id),
      ['unknown', 'v2.3.0', 'v2.2.1', 'main-8c0f5059'],
    );
  });
});

describe('messages', () => {
  it('an immutable field names the field, the new value and the reason', () => {
    const [cause] = decideUpdate(
      policy,
      variant(suspended, (o) => (o.spec.trainer.image = 'x:2')),
      suspended,
    ).causes;
    assert.equal(errorString(cause), 'spec.trainer.image: Invalid value: "x:2": field is immutable');
  });
  it('a numNodes change on a running job says to suspend first', () => {
    const [cause] = decideUpdate(
      policy,
      variant(running, (o) => (o.spec.trainer.numNodes = 2)),
      running,
    ).causes;
    assert.match(errorString(cause), /^spec\.trainer\.numNodes: Forbidden: .*suspend/);
  });
  it('a change to a negative count names the value and says what is allowed', () => {
    const [cause] = decideUpdate(
      policy,
      variant(suspended, (o) => (o.spec.trainer.numNodes = -1)),
      suspended,
    ).causes;
    assert.match(
      errorString(cause),
      /^spec\.trainer\.numNodes: Invalid value: -1: numNodes may only change to 0 or more/,
    );
  });
  it('a change on a finished job says it has finished and will not run again', () => {
    const old = finished(suspended, 'Complete');
    const [cause] = decideUpdate(
      policy,
      variant(old, (o) => (o.spec.trainer.numNodes = 2)),
      old,
    ).causes;
    assert.match(
      errorString(cause),
      /^spec\.trainer\.numNodes: Forbidden: numNodes may not change once the TrainJob has finished .*never reconciles it again/,
    );
  });
});

describe('warnings on allowed numNodes changes', () => {
  it('says the JobSet is rebuilt with the new count as soon as it is suspended and its pods are gone, not on resume', () => {
    const v = decideUpdate(
      policy,
      variant(suspended, (o) => (o.spec.trainer.numNodes = 3)),
      suspended,
    );
    assert.deepEqual(v.warnings, [], 'said only once the change is admitted (numNodesChange.warnings)');
    assert.deepEqual(v.numNodesChange?.warnings, [
      'spec.trainer.numNodes changes from 1 to 3: the JobSet is rebuilt with 3 nodes as soon as it is suspended and none of its pods runs or is terminating (the reconciler deletes it and it is re-created, suspended); the training runs on 3 nodes once the TrainJob is resumed',
    ]);
  });
  it('resume and scale in one update: the rebuilt JobSet starts at once', () => {
    const v = decideUpdate(
      policy,
      variant(suspended, (o) => ((o.spec.suspend = false), (o.spec.trainer.numNodes = 2))),
      suspended,
    );
    assert.deepEqual(v.numNodesChange?.warnings, [
      'spec.trainer.numNodes changes from 1 to 2: the JobSet is rebuilt with 2 nodes as soon as none of its pods runs or is terminating (the reconciler deletes the suspended JobSet and it is re-created and starts at once)',
    ]);
  });
  it('back to the runtime default', () => {
    const v = decideUpdate(
      policy,
      variant(suspended, (o) => delete o.spec.trainer.numNodes),
      suspended,
    );
    assert.match(
      (v.numNodesChange?.warnings ?? []).join('\n'),
      /changes from 1 to the runtime's default: the JobSet is rebuilt with the runtime's default number of nodes/,
    );
  });
  it('a refused change carries no rebuild warning, whichever field refused it', () => {
    for (const [old, change] of [
      [running, (o: TrainJob) => (o.spec.trainer.numNodes = 2)],
      [suspended, (o: TrainJob) => ((o.spec.trainer.numNodes = 2), (o.spec.trainer.image = 'x:2'))],
      [suspended, (o: TrainJob) => (o.spec.trainer.numNodes = -1)],
      [finished(suspended, 'Complete'), (o: TrainJob) => (o.spec.trainer.numNodes = 2)],
    ] as const) {
      const v = decideUpdate(policy, variant(old, change), old);
      assert.ok(v.causes.length > 0);
      assert.deepEqual(v.warnings, []);
      assert.equal(v.numNodesChange, undefined);
    }
  });
  it('numNodes 0 is allowed with a warning that the job completes at once', () => {
    const v = decideUpdate(
      policy,
      variant(suspended, (o) => (o.spec.trainer.numNodes = 0)),
      suspended,
    );
    assert.equal(v.causes.length, 0);
    assert.ok(
      (v.numNodesChange?.warnings ?? []).some((w) => /complete at once/.test(w)),
      v.warnings.join('\n'),
    );
  });
  it('a refused change asks for no JobSet check', () => {
    const v = decideUpdate(
      policy,
      variant(running, (o) => (o.spec.trainer.numNodes = 3)),
      running,
    );
    assert.equal(v.numNodesChange, undefined);
  });
});

describe('the table reads like the policy', () => {
  it('every row has an id, a field, a scope, CEL, a message and a reason', () => {
    for (const row of RULES)
      for (const key of ['id', 'field', 'rule', 'message', 'reason'] as const) assert.ok(row[key], `${row.id}.${key}`);
    for (const row of RULES) assert.equal(typeof row.scope, 'string', `${row.id}.scope ('' is the object)`);
    assert.equal(new Set(RULES.map((r) => r.id)).size, RULES.length, 'ids are unique');
  });
  it('numNodes: finished first (a VAP shows only the first failure), then suspension, then the sign', () => {
    assert.deepEqual(
      RULES.filter((r) => r.field === 'spec.trainer.numNodes').map((r) => `${r.id}: ${r.allowed}`),
      [
        'trainer-numNodes-not-after-finish: until the TrainJob has finished for good (Complete, or Failed with DeadlineExceeded)',
        'trainer-numNodes-while-suspended: while suspended before or after the update',
        'trainer-numNodes-not-negative: to 0 or more (a negative count already stored may stay)',
      ],
    );
  });
});
