// Which watch events change what a decision reads (decision-inputs.ts), and the creation burst of
// one suspended TrainJob beside Trainer and JobSet through the gate and the work queue: at most two
// reconciles, where every event queued alone made eleven.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Job, JobSet, TrainJob } from '../../src/api/objects.ts';
import {
  DecisionInputGate,
  eventChangesDecision,
  WATCH_BATCH_MS,
  type WatchSource,
} from '../../src/reconciler/decision-inputs.ts';
import { WorkQueue, type Timers } from '../../src/reconciler/queue.ts';
import type { ClusterCache } from '../../src/reconciler/watches.ts';
import { REPORT_ANNOTATION } from '../../src/api/names.ts';
import { jobSetForCache, trainJobForCache } from '../../src/reconciler/cache-shape.ts';

const NS = 'team';
const NAME = 'tj';
const UID = 'uid-tj';

const trainJob = (over: Partial<TrainJob> = {}): TrainJob => ({
  apiVersion: 'trainer.kubeflow.org/v1alpha1',
  kind: 'TrainJob',
  metadata: { name: NAME, namespace: NS, uid: UID, generation: 1, resourceVersion: '1' },
  spec: { runtimeRef: { name: 'torch-distributed' }, suspend: true, trainer: { numNodes: 1 } },
  ...over,
});

const trainerOwns = (time: string, subresource?: string) => ({
  manager: 'trainer',
  operation: 'Apply',
  time,
  ...(subresource ? { subresource } : {}),
  fieldsV1: subresource ? { 'f:status': {} } : { 'f:spec': { 'f:suspend': {}, 'f:replicatedJobs': {} } },
});

const jobSet = (over: { status?: Record<string, unknown>; managedFields?: unknown[]; rv?: string } = {}): JobSet =>
  ({
    apiVersion: 'jobset.x-k8s.io/v1alpha2',
    kind: 'JobSet',
    metadata: {
      name: NAME,
      namespace: NS,
      uid: 'uid-js',
      resourceVersion: over.rv ?? '2',
      ownerReferences: [{ apiVersion: 'v1', kind: 'TrainJob', name: NAME, uid: UID, controller: true }],
      managedFields: over.managedFields ?? [trainerOwns('2026-01-01T00:00:00Z')],
    },
    spec: { suspend: true, replicatedJobs: [{ name: 'node', replicas: 1, template: { spec: { parallelism: 1 } } }] },
    ...(over.status ? { status: over.status } : {}),
  }) as JobSet;

/** The JobSet with its node job's pod running this one container. */
const withNode = (js: JobSet, container: Record<string, unknown>): JobSet => {
  const copy = structuredClone(js);
  copy.spec!.replicatedJobs![0].template!.spec!.template = { spec: { containers: [container as never] } };
  return copy;
};

const job = (name: string, over: { suspend?: boolean; status?: Record<string, unknown>; rv?: string } = {}): Job =>
  ({
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name: `${NAME}-${name}-0`,
      namespace: NS,
      resourceVersion: over.rv ?? '3',
      labels: { 'jobset.sigs.k8s.io/jobset-name': NAME },
    },
    spec: { suspend: over.suspend ?? true, parallelism: 1 },
    ...(over.status ? { status: over.status } : {}),
  }) as Job;

const suspendedCondition = {
  type: 'Suspended',
  status: 'True',
  reason: 'Suspended',
  message: 'TrainJob is suspended',
  lastTransitionTime: 'T1',
} as const;

type Row = [string, WatchSource, 'companion' | 'standalone', unknown, unknown, boolean];

describe('eventChangesDecision: does a watch event change anything a decision reads?', () => {
  const rows: Row[] = [
    ['a TrainJob created', 'trainjob', 'companion', undefined, trainJob(), true],
    ['a TrainJob deleted', 'trainjob', 'companion', trainJob(), undefined, true],
    [
      'a TrainJob whose resourceVersion and managedFields alone moved',
      'trainjob',
      'companion',
      trainJob(),
      trainJob({
        metadata: { ...trainJob().metadata, resourceVersion: '9', managedFields: [{ manager: 'x' }] } as never,
      }),
      false,
    ],
    [
      'Trainer copies the JobSet status into status.jobsStatus (companion: nobody reads it)',
      'trainjob',
      'companion',
      trainJob({ status: { conditions: [suspendedCondition] } }),
      trainJob({ status: { conditions: [suspendedCondition], jobsStatus: [{ name: 'node', suspended: 1 }] } }),
      false,
    ],
    [
      'status.jobsStatus in standalone mode (the sidecar writes it from the JobSet)',
      'trainjob',
      'standalone',
      trainJob({ status: { conditions: [suspendedCondition] } }),
      trainJob({ status: { conditions: [suspendedCondition], jobsStatus: [{ name: 'node', suspended: 1 }] } }),
      true,
    ],
    ...(['companion', 'standalone'] as const).map((mode): Row => [
      `the reconciler's own status field written (${mode}: no decision reads it)`,
      'trainjob',
      mode,
      trainJob({ status: { conditions: [suspendedCondition] } }),
      trainJob({
        status: {
          conditions: [suspendedCondition],
          trainjobWebhook: { nodes: 2, selector: 'jobset.sigs.k8s.io/jobset-name=a', rebuild: 'Rebuilt' },
        },
      } as never),
      false,
    ]),
    ...(['companion', 'standalone'] as const).map((mode): Row => [
      `the status field's first write, on a TrainJob with no status yet (${mode}: was a change, 3 reconciles per created TrainJob)`,
      'trainjob',
      mode,
      trainJob(),
      trainJob({ status: { trainjobWebhook: { nodes: 1, rebuild: 'None' } } } as never),
      false,
    ]),
    [
      "Trainer's Suspended condition (the pause grace and the resume's refusals read it)",
      'trainjob',
      'companion',
      trainJob(),
      trainJob({ status: { conditions: [suspendedCondition] } }),
      true,
    ],
    [
      'a numNodes change',
      'trainjob',
      'companion',
      trainJob(),
      trainJob({ spec: { ...trainJob().spec, trainer: { numNodes: 2 } } as never }),
      true,
    ],
    [
      'the report annotation',
      'trainjob',
      'companion',
      trainJob(),
      trainJob({ metadata: { ...trainJob().metadata, annotations: { [REPORT_ANNOTATION]: '{}' } } }),
      true,
    ],
    [
      'an annotation nothing reads (cache-shape.ts keeps only the report and the refusal fold)',
      'trainjob',
      'companion',
      trainJob(),
      trainJob({ metadata: { ...trainJob().metadata, annotations: { 'example.com/note': 'x' } } }),
      false,
    ],
    ['a JobSet created', 'jobset', 'companion', undefined, jobSet(), true],
    ['a JobSet deleted', 'jobset', 'companion', jobSet(), undefined, true],
    [
      "JobSet's status write of a suspended JobSet (Suspended condition, replicatedJobsStatus), companion",
      'jobset',
      'companion',
      jobSet(),
      jobSet({
        rv: '5',
        status: {
          conditions: [{ type: 'Suspended', status: 'True' }],
          replicatedJobsStatus: [{ name: 'node', suspended: 1 }],
        },
        managedFields: [trainerOwns('2026-01-01T00:00:00Z'), trainerOwns('2026-01-01T00:00:01Z', 'status')],
      }),
      false,
    ],
    [
      'replicatedJobsStatus in standalone mode (copied into the TrainJob status)',
      'jobset',
      'standalone',
      jobSet(),
      jobSet({ status: { replicatedJobsStatus: [{ name: 'node', suspended: 1 }] } }),
      true,
    ],
    [
      'the JobSet Completed (finished: never rebuilt)',
      'jobset',
      'companion',
      jobSet(),
      jobSet({ status: { conditions: [{ type: 'Completed', status: 'True' }] } }),
      true,
    ],
    [
      'the sidecar takes spec.suspend (it resumes only a JobSet it suspended)',
      'jobset',
      'companion',
      jobSet(),
      jobSet({
        managedFields: [
          trainerOwns('2026-01-01T00:00:00Z'),
          { manager: 'trainjob-webhook', fieldsV1: { 'f:spec': { 'f:suspend': {} } } },
        ],
      }),
      true,
    ],
    [
      "only a managedFields entry's time moved",
      'jobset',
      'companion',
      jobSet(),
      jobSet({ managedFields: [trainerOwns('2026-02-02T00:00:00Z')] }),
      false,
    ],
    [
      "a JobSet's container image, command or other env changed (no decision reads them: cache-shape.ts)",
      'jobset',
      'companion',
      withNode(jobSet(), { name: 'node', image: 'a:1', env: [{ name: 'PET_NNODES', value: '1' }] }),
      withNode(jobSet(), {
        name: 'node',
        image: 'a:2',
        command: ['x'],
        env: [
          { name: 'PET_NNODES', value: '1' },
          { name: 'OTHER', value: 'y' },
        ],
      }),
      false,
    ],
    [
      "a JobSet's PET_NNODES changed (the staleness check compares it)",
      'jobset',
      'companion',
      withNode(jobSet(), { name: 'node', env: [{ name: 'PET_NNODES', value: '1' }] }),
      withNode(jobSet(), { name: 'node', env: [{ name: 'PET_NNODES', value: '2' }] }),
      true,
    ],
    [
      "a JobSet's container made malformed (kept whole then: the decisions report it)",
      'jobset',
      'companion',
      withNode(jobSet(), { name: 'node', image: 'a:1' }),
      withNode(jobSet(), { name: 'node', image: 7 }),
      true,
    ],
    [
      "companion: a TrainJob's trainer image changed (Trainer builds it; no decision here reads it)",
      'trainjob',
      'companion',
      trainJob(),
      trainJob({ spec: { ...trainJob().spec, trainer: { numNodes: 1, image: 'b:2' } } as never }),
      false,
    ],
    [
      "standalone: a TrainJob's trainer image changed (the sidecar builds the JobSet from it)",
      'trainjob',
      'standalone',
      trainJob(),
      trainJob({ spec: { ...trainJob().spec, trainer: { numNodes: 1, image: 'b:2' } } as never }),
      true,
    ],
    ['a Job created suspended (JobSet creates them so)', 'job', 'companion', undefined, job('node'), false],
    [
      'a Job created running (it blocks a rebuild)',
      'job',
      'companion',
      undefined,
      job('node', { suspend: false }),
      true,
    ],
    [
      "the Job controller's status write of a suspended Job",
      'job',
      'companion',
      job('node'),
      job('node', { rv: '7', status: { conditions: [{ type: 'Suspended', status: 'True' }] } }),
      false,
    ],
    [
      "a suspended Job's last active pod gone (a waiting rebuild may go on)",
      'job',
      'companion',
      job('node', { status: { active: 1 } }),
      job('node', { status: { active: 0 } }),
      true,
    ],
    [
      'a finished initializer Job (suspend false, Complete)',
      'job',
      'companion',
      job('init', { suspend: false, status: { active: 1 } }),
      job('init', { suspend: false, status: { conditions: [{ type: 'Complete', status: 'True' }] } }),
      true,
    ],
    ['a suspended Job deleted', 'job', 'companion', job('node'), undefined, false],
    ['a running Job deleted', 'job', 'companion', job('node', { status: { active: 2 } }), undefined, true],
  ];
  for (const [what, source, mode, old, now, matters] of rows)
    it(`${what}: ${matters ? 'matters' : 'changes nothing read'}`, () =>
      assert.equal(eventChangesDecision(source, mode, old as never, now as never), matters));
});

/** A ClusterCache over plain maps, as the watches hold objects. */
function fakeCache() {
  const trainJobs = new Map<string, TrainJob>();
  const jobSets = new Map<string, JobSet>();
  const jobs = new Map<string, Job>();
  const cache: ClusterCache = {
    synced: () => true,
    getTrainJob: (ns, name) => structuredClone(trainJobs.get(`${ns}/${name}`)),
    getJobSet: (ns, name) => structuredClone(jobSets.get(`${ns}/${name}`)),
    listJobs: (ns, jobSetName) =>
      [...jobs.values()].filter(
        (j) => j.metadata.namespace === ns && j.metadata.labels?.['jobset.sigs.k8s.io/jobset-name'] === jobSetName,
      ),
  };
  return { cache, trainJobs, jobSets, jobs };
}

function manualTimers() {
  const pending: { fn: () => void; id: number }[] = [];
  let next = 0;
  const timers: Timers = {
    set: (fn) => {
      const id = ++next;
      pending.push({ fn, id });
      return id;
    },
    clear: (h) => {
      const i = pending.findIndex((p) => p.id === h);
      if (i >= 0) pending.splice(i, 1);
    },
  };
  return { timers, fire: () => pending.splice(0).forEach((p) => p.fn()) };
}

const settle = async (q: WorkQueue) => {
  for (let i = 0; i < 20 || q.length || q.active; i++) await new Promise((r) => setImmediate(r));
};

/**
 * One world with the queue wired as run.ts wires it; `gated: false` queues every event at once,
 * as before the gate. `event` applies a write to the cache (the informer's store) and then calls
 * the handler; `window` ends a batching window (the timers fire) and lets the workers run.
 */
function world(gated: boolean) {
  const w = fakeCache();
  const { timers, fire } = manualTimers();
  let reconciles = 0;
  const q = new WorkQueue({ workers: 4, timers, handler: async () => void reconciles++ });
  const gate = new DecisionInputGate(w.cache, 'companion');
  const key = `${NS}/${NAME}`;
  q.start();
  const event = async (source: WatchSource, apply: () => void) => {
    apply();
    if (!gated) q.add(key);
    else {
      const effect = gate.judge(key, source);
      if (effect === 'intent') q.add(key);
      else if (effect === 'changed') q.addSoon(key, WATCH_BATCH_MS);
      else if (effect === 'overwritten') q.addSoon(key, gate.overwriteDelayMs(key));
    }
    await settle(q);
  };
  const window = async () => {
    fire();
    await settle(q);
  };
  return { ...w, q, gate, event, window, key, reconciles: () => reconciles };
}

/** What creating one suspended TrainJob brings about beside Trainer v2.3.0 and JobSet v0.12.0. */
async function creationBurst(w: ReturnType<typeof world>) {
  const jobNames = ['dataset-initializer', 'model-initializer', 'node'];
  await w.event('trainjob', () => w.trainJobs.set(w.key, trainJob()));
  await w.window();
  // Trainer's reconcile: the JobSet applied, then the TrainJob's status.
  await w.event('jobset', () => w.jobSets.set(w.key, jobSet()));
  await w.event('trainjob', () =>
    w.trainJobs.set(w.key, trainJob({ status: { conditions: [suspendedCondition] } } as never)),
  );
  await w.window();
  // JobSet's reconcile: its Jobs, created suspended, then its status.
  for (const name of jobNames) await w.event('job', () => w.jobs.set(name, job(name)));
  await w.event('jobset', () =>
    w.jobSets.set(w.key, jobSet({ rv: '4', status: { conditions: [{ type: 'Suspended', status: 'True' }] } })),
  );
  await w.window();
  // The Job controller's status writes, then Trainer's copy of the JobSet's status.
  for (const name of jobNames)
    await w.event('job', () =>
      w.jobs.set(name, job(name, { rv: '8', status: { conditions: [{ type: 'Suspended', status: 'True' }] } })),
    );
  await w.event('trainjob', () =>
    w.trainJobs.set(
      w.key,
      trainJob({ status: { conditions: [suspendedCondition], jobsStatus: [{ name: 'node', suspended: 1 }] } } as never),
    ),
  );
  await w.window();
}

describe('the creation burst of one suspended TrainJob, through the gate and the work queue', () => {
  it('every event queued alone (as before the gate): eleven reconciles', async () => {
    const w = world(false);
    await creationBurst(w);
    assert.equal(w.reconciles(), 11);
    await w.q.shutdown();
  });

  it('through the gate: two reconciles (the TrainJob at once; the JobSet with Trainer’s status, batched)', async () => {
    const w = world(true);
    await creationBurst(w);
    assert.equal(w.reconciles(), 2);
    await w.q.shutdown();
  });

  it('after the burst, every change that matters is reconciled: a numNodes change at once, a Job that stops running, the TrainJob deleted', async () => {
    const w = world(true);
    await creationBurst(w);
    const after = w.reconciles();
    await w.event('trainjob', () =>
      w.trainJobs.set(
        w.key,
        trainJob({
          metadata: { ...trainJob().metadata, generation: 2 },
          spec: { ...trainJob().spec, trainer: { numNodes: 2 } },
        } as never),
      ),
    );
    assert.equal(w.reconciles(), after + 1, 'a spec change is not batched');
    await w.event('job', () => w.jobs.set('node', job('node', { rv: '20', status: { active: 1 } })));
    await w.window();
    await w.event('job', () => w.jobs.set('node', job('node', { rv: '21', status: { active: 0 } })));
    await w.window();
    assert.equal(w.reconciles(), after + 3);
    await w.event('trainjob', () => w.trainJobs.delete(w.key));
    assert.equal(w.reconciles(), after + 4);
    assert.equal(w.gate.size, 0, 'nothing kept for a TrainJob that is gone');
    await w.q.shutdown();
  });

  it('a hint (an add) during a batching window runs the key at once and drops the window', async () => {
    const w = world(true);
    await creationBurst(w);
    const after = w.reconciles();
    await w.event('jobset', () => w.jobSets.set(w.key, { ...jobSet(), spec: { suspend: false } } as JobSet));
    assert.equal(w.reconciles(), after, 'waits for the window');
    w.q.add(w.key);
    await settle(w.q);
    assert.equal(w.reconciles(), after + 1);
    await w.window();
    assert.equal(w.reconciles(), after + 1, 'the window was merged into that run');
    await w.q.shutdown();
  });
});

describe("the status field through the gate: the reconciler's own write is no change, anyone else's is one", () => {
  const withField = (field: Record<string, unknown> | undefined, rv: string) =>
    trainJob({
      metadata: { ...trainJob().metadata, resourceVersion: rv },
      status: { conditions: [suspendedCondition], ...(field ? { trainjobWebhook: field } : {}) },
    } as never);
  const ours = { nodes: 1, selector: 'jobset.sigs.k8s.io/jobset-name=a', rebuild: 'None' };

  it('its own write comes back: not queued; the field removed by another writer (a status write under a CRD without it): queued, then written again: not queued', async () => {
    const w = world(true);
    await creationBurst(w);
    const after = w.reconciles();
    w.gate.expectStatusField(w.key, UID, ours);
    await w.event('trainjob', () => w.trainJobs.set(w.key, withField(ours, '30')));
    await w.window();
    assert.equal(w.reconciles(), after, 'the echo of its own write');
    await w.event('trainjob', () => w.trainJobs.set(w.key, withField(undefined, '31')));
    await w.window();
    assert.equal(w.reconciles(), after + 1, 'removed by someone else: looked at again (and written again)');
    w.gate.expectStatusField(w.key, UID, ours);
    await w.event('trainjob', () => w.trainJobs.set(w.key, withField(ours, '32')));
    await w.window();
    assert.equal(w.reconciles(), after + 1);
    await w.q.shutdown();
  });

  it('changed by another writer (kubectl edit --subresource=status): queued; a write of ours that failed expects nothing', async () => {
    const w = world(true);
    await creationBurst(w);
    w.gate.expectStatusField(w.key, UID, ours);
    await w.event('trainjob', () => w.trainJobs.set(w.key, withField(ours, '30')));
    await w.window();
    const after = w.reconciles();
    await w.event('trainjob', () => w.trainJobs.set(w.key, withField({ ...ours, nodes: 7 }, '31')));
    await w.window();
    assert.equal(w.reconciles(), after + 1);
    w.gate.expectStatusField(w.key, UID, ours);
    w.gate.statusFieldWriteFailed(w.key);
    await w.event('trainjob', () => w.trainJobs.set(w.key, withField(ours, '32')));
    await w.window();
    assert.equal(w.reconciles(), after + 2, 'not our write: a change');
    await w.q.shutdown();
  });

  it("an expectation is matched by the TrainJob's uid: a field like ours on a TrainJob created again under the name is not our write", () => {
    const w = world(true);
    const gate = new DecisionInputGate(w.cache, 'companion');
    w.trainJobs.set(w.key, withField(undefined, '1'));
    assert.equal(gate.judge(w.key, 'trainjob'), 'intent');
    gate.expectStatusField(w.key, 'uid-of-the-one-deleted', ours);
    w.trainJobs.set(w.key, withField(ours, '2'));
    assert.equal(gate.judge(w.key, 'trainjob'), 'overwritten');
    gate.expectStatusField(w.key, UID, ours);
    w.trainJobs.set(w.key, withField(ours, '3'));
    assert.equal(gate.judge(w.key, 'trainjob'), 'unchanged', 'the field as it was: nothing to match');
  });

  it("an echo after the next reconcile started is looked at again (that reconcile read an older cache), as no one else's write", () => {
    const w = world(true);
    const gate = new DecisionInputGate(w.cache, 'companion');
    w.trainJobs.set(w.key, withField(undefined, '1'));
    gate.judge(w.key, 'trainjob');
    gate.expectStatusField(w.key, UID, ours);
    gate.reconcileStarts(w.key); // the next reconcile starts before the echo
    w.trainJobs.set(w.key, withField(ours, '2'));
    assert.equal(gate.judge(w.key, 'trainjob'), 'changed');
    assert.equal(gate.overwrites(w.key), 0);
  });

  it('two writers that disagree: each overwrite waits twice as long, up to 5 minutes; 10 quiet minutes start again at 500 ms', () => {
    const w = world(true);
    let now = 0;
    const gate = new DecisionInputGate(w.cache, 'companion', () => now);
    const theirs = { ...ours, nodes: 9 };
    w.trainJobs.set(w.key, withField(undefined, '1'));
    gate.judge(w.key, 'trainjob');
    const delays: number[] = [];
    for (let i = 0; i < 12; i++) {
      gate.expectStatusField(w.key, UID, ours);
      w.trainJobs.set(w.key, withField(ours, String(10 + 2 * i)));
      assert.equal(gate.judge(w.key, 'trainjob'), 'unchanged', 'our write');
      w.trainJobs.set(w.key, withField(theirs, String(11 + 2 * i)));
      assert.equal(gate.judge(w.key, 'trainjob'), 'overwritten', 'theirs');
      delays.push(gate.overwriteDelayMs(w.key));
      now += delays.at(-1) ?? 0;
    }
    assert.deepEqual(delays, [500, 1000, 2000, 4000, 8000, 16000, 32000, 64000, 128000, 256000, 300000, 300000]);
    assert.equal(gate.overwrites(w.key), 12);
    now += 10 * 60_000;
    assert.equal(gate.overwrites(w.key), 0);
    w.trainJobs.set(w.key, withField(ours, '99'));
    assert.equal(gate.judge(w.key, 'trainjob'), 'overwritten');
    assert.equal(gate.overwriteDelayMs(w.key), 500);
  });
});

describe('the gate judges by the cache shape (one list of what a decision reads)', () => {
  const whole = {
    ...jobSet(),
    metadata: { ...jobSet().metadata, labels: { a: 'b' }, annotations: { c: 'd' } },
    spec: {
      ...jobSet().spec,
      replicatedJobs: [
        {
          name: 'node',
          replicas: 1,
          template: {
            metadata: { labels: { x: 'y' } },
            spec: {
              parallelism: 1,
              template: {
                spec: {
                  containers: [{ name: 'node', image: 'i', command: ['c'], env: [{ name: 'PET_NNODES', value: '1' }] }],
                  volumes: [{ name: 'v', emptyDir: {} }],
                },
              },
            },
          },
        },
      ],
    },
    status: { conditions: [{ type: 'Suspended', status: 'True' }], restarts: 0 },
  } as JobSet;
  for (const mode of ['companion', 'standalone'] as const) {
    it(`${mode}: a whole JobSet and its cached shape are the same view`, () =>
      assert.equal(eventChangesDecision('jobset', mode, whole, jobSetForCache(whole, mode)), false));
    it(`${mode}: a whole TrainJob and its cached shape are the same view`, () => {
      const tj = trainJob({
        metadata: { ...trainJob().metadata, labels: { q: 'r' }, annotations: { [REPORT_ANNOTATION]: '{}' } },
        status: { conditions: [suspendedCondition], jobsStatus: [{ name: 'node', suspended: 1 }] },
      } as never);
      assert.equal(eventChangesDecision('trainjob', mode, tj, trainJobForCache(tj, mode)), false);
    });
  }
});
