// docs/answers.md says what the API server answers to each change of a TrainJob; this file has the
// real API server answer each one, in the cell TJW_CELL names (it runs in every cell of the version
// matrix: hack/test-matrix.ts COMPAT_FILES), and compares the code, the reason and the text kubectl
// prints with the docs' cell. The table's rows and this file's scenarios are one set: a row with no
// scenario fails, and so does a scenario with no row. One world, two install modes in turn:
// - the default install: the cell's Trainer CRD with the CRD patch generated for it, `serve`
//   registered as the validating and mutating webhook, the cell's Trainer and JobSet managers, and
//   the reconciler from the moment a row needs one to lead (the rows that need none run first);
// - VAP mode (manifests/overlays/vap): the webhook unregistered, the CRD's blanket rule lifted with
//   nothing in its place, the ValidatingAdmissionPolicy generated for the cell's Trainer line.
// Each row runs in a namespace of its own per mode, its TrainJob always named my-job.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parse, stringify } from 'yaml';
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
import {
  api,
  crdPatchFor,
  startWorld,
  startWorldReconciler,
  stockRuntimes,
  torchTrainJob,
  type World,
} from '../reconciler/support/world.ts';
import {
  apiRequest,
  describeAnswer,
  mismatch,
  parseAnswerCell,
  parseAnswersTable,
  type Answer,
} from './support/answers.ts';
import { patchedCrd, upstreamTrainJobCrd, type Obj } from './support/trainjobs.ts';
import { unregisterWebhook } from './support/webhook.ts';
import { vapManifests } from '../../src/rules/generate/vap.ts';
import { TABLE_SCHEMA } from '../../src/rules/table-schema.ts';
import { rulesFor } from '../../src/rules/table.ts';
import { detectTrainerLine } from '../../src/api/trainer-line-detect.ts';

const DOC = path.join(projectRoot, 'docs/answers.md');
/** The columns a test checks; the table has exactly these. */
const COLUMNS = [
  'Change',
  'The TrainJob',
  'Default install (CRD patch + webhook)',
  'VAP mode (the policy, no webhook)',
] as const;
/** The install mode of each answer column. */
const MODES = [
  { column: 2, name: 'default', ns: 'row' },
  { column: 3, name: 'vap', ns: 'vap-row' },
] as const;
type Mode = (typeof MODES)[number];
/** Every row's TrainJob has this name (the answers name it), each in a namespace of its own. */
const NAME = 'my-job';
/** What the docs call the row's namespace, where an answer names it. */
const DOCS_NAMESPACE = 'my-ns';
/** torch-distributed with a workspace claim (spec.template.spec.volumeClaimPolicies), as torchtune's runtimes have. */
const WORKSPACE_RUNTIME = 'torch-distributed-workspace';

const cell = currentCell();
const skip = skipUnless(controlPlaneAvailability(), upstreamControllersAvailability());

interface Ctx {
  w: World;
  /** The row's namespace. */
  ns: string;
  p: ReturnType<typeof pods>;
  /** Creates the row's TrainJob, `spec` over torchTrainJob's (suspended, 1 node); it must be admitted. */
  create(spec?: Obj, change?: (t: Obj) => void): Promise<void>;
  /** GET, change, PUT, as `kubectl edit` does (strict field validation unless asked not to); a 409 is tried again. */
  update(change: (o: Obj) => void, opts?: { fieldValidation?: 'Strict' | 'none' }): Promise<Answer>;
  /** Waits for Trainer to have built the TrainJob's JobSet. */
  jobSetBuilt(): Promise<void>;
  /** Creates it running and waits for its one node pod to run. */
  running(spec?: Obj): Promise<void>;
}

interface Scenario {
  /** Whether a reconciler leads while the change is made: absent, or started first. */
  reconciler: 'none' | 'leads';
  /** Puts the row's TrainJob in the row's state and makes the row's change. */
  run(ctx: Ctx): Promise<Answer>;
}

const setCount = (n: number) => (o: Obj) => (o.spec.trainer.numNodes = n);
const PATCH = (label: string) => [
  { manager: 'example.com/team', trainingRuntimeSpec: { template: { metadata: { labels: { team: label } } } } },
];

/** Keyed by the row's first two cells, `Change | The TrainJob`, as docs/answers.md writes them. */
const SCENARIOS: Record<string, Scenario> = {
  'Change `spec.trainer.image` | Suspended': {
    reconciler: 'none',
    async run(ctx) {
      await ctx.create();
      return ctx.update((o) => (o.spec.trainer.image = 'ghcr.io/acme/train:2'));
    },
  },
  'Set `spec.trainer.image` | Suspended, no image ever set': {
    reconciler: 'none',
    async run(ctx) {
      await ctx.create({}, (t) => delete t.spec.trainer.image);
      return ctx.update((o) => (o.spec.trainer.image = 'ghcr.io/acme/train:1'));
    },
  },
  'Change `numNodes` | Running': {
    reconciler: 'none',
    async run(ctx) {
      await ctx.running();
      return ctx.update(setCount(2));
    },
  },
  'Change `numNodes` | Finished: Trainer set `Complete`': {
    reconciler: 'none',
    async run(ctx) {
      await ctx.running();
      await ctx.p.endJobSetTraining(ctx.ns, NAME, 'Succeeded', 'node');
      await waitFor(`${ctx.ns}/${NAME}: Trainer sets Complete`, async () => {
        const t = await ctx.w.tj.get(ctx.ns, NAME);
        return t.status?.conditions?.some((c: Obj) => c.type === 'Complete' && c.status === 'True');
      });
      return ctx.update(setCount(2));
    },
  },
  'Change `runtimePatches` | Running': {
    reconciler: 'none',
    async run(ctx) {
      await ctx.running({ runtimePatches: PATCH('a') });
      return ctx.update((o) => (o.spec.runtimePatches = PATCH('b')));
    },
  },
  'Change `runtimePatches` | Suspended': {
    reconciler: 'none',
    async run(ctx) {
      await ctx.create({ runtimePatches: PATCH('a') });
      return ctx.update((o) => (o.spec.runtimePatches = PATCH('b')));
    },
  },
  'Set a field `spec.trainer` does not have (kubectl: strict field validation) | Any': {
    reconciler: 'none',
    async run(ctx) {
      await ctx.create();
      return ctx.update((o) => (o.spec.trainer.priority = 'high'));
    },
  },
  'Set a field `spec.trainer` does not have (a client that asks for no field validation) | Any': {
    reconciler: 'none',
    async run(ctx) {
      await ctx.create();
      return ctx.update((o) => (o.spec.trainer.priority = 'high'), { fieldValidation: 'none' });
    },
  },
  'Change `numNodes` | Suspended, its JobSet built; no reconciler leads': {
    reconciler: 'none',
    async run(ctx) {
      await ctx.create();
      await ctx.jobSetBuilt();
      return ctx.update(setCount(2));
    },
  },
  'Change `numNodes` | Suspended, its JobSet built from a runtime with workspace claims': {
    reconciler: 'none',
    async run(ctx) {
      await ctx.create({ runtimeRef: { name: WORKSPACE_RUNTIME } });
      await ctx.jobSetBuilt();
      return ctx.update(setCount(2));
    },
  },
  'Change `numNodes` | Suspended, its JobSet built': {
    reconciler: 'leads',
    async run(ctx) {
      await ctx.create();
      await ctx.jobSetBuilt();
      return ctx.update(setCount(2));
    },
  },
  'Set `suspend: true` and change `numNodes` in one update | Running': {
    reconciler: 'leads',
    async run(ctx) {
      await ctx.running();
      return ctx.update((o) => {
        o.spec.suspend = true;
        o.spec.trainer.numNodes = 2;
      });
    },
  },
  'Set `suspend: false` and change `numNodes` in one update | Suspended, its JobSet built': {
    reconciler: 'leads',
    async run(ctx) {
      await ctx.create();
      await ctx.jobSetBuilt();
      return ctx.update((o) => {
        o.spec.suspend = false;
        o.spec.trainer.numNodes = 2;
      });
    },
  },
};

const rowKey = (cells: string[]) => `${cells[0]} | ${cells[1]}`;

/** The cell's torch runtime with a workspace claim added. */
function workspaceRuntime(): string {
  const rt = parse(stockRuntimes(cell.trainer)[0]);
  assert.equal(rt.metadata.name, 'torch-distributed');
  rt.metadata.name = WORKSPACE_RUNTIME;
  rt.spec.template.spec.volumeClaimPolicies = [
    {
      templates: [
        {
          metadata: { name: 'workspace' },
          spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
        },
      ],
    },
  ];
  for (const job of rt.spec.template.spec.replicatedJobs)
    for (const c of job.template.spec.template.spec.containers)
      c.volumeMounts = [...(c.volumeMounts ?? []), { name: 'workspace', mountPath: '/workspace' }];
  return stringify(rt);
}

describe('docs/answers.md: every row has a scenario, every scenario a row, every cell is an answer', () => {
  it('the table and the scenarios are one set', () => {
    const { header, rows } = parseAnswersTable(readFileSync(DOC, 'utf8'));
    assert.deepEqual(header, COLUMNS, 'the columns are those this file checks');
    const keys = rows.map((r) => rowKey(r.cells));
    const twice = keys.filter((k, i) => keys.indexOf(k) !== i);
    assert.deepEqual(twice, [], 'each row once');
    const noScenario = rows
      .filter((r) => !(rowKey(r.cells) in SCENARIOS))
      .map((r) => `line ${r.line}: ${rowKey(r.cells)}`);
    assert.deepEqual(noScenario, [], 'rows of docs/answers.md with no scenario here');
    const noRow = Object.keys(SCENARIOS).filter((k) => !keys.includes(k));
    assert.deepEqual(noRow, [], 'scenarios here with no row in docs/answers.md');
    for (const r of rows) for (const c of r.cells.slice(2)) parseAnswerCell(c);
  });
});

describe(
  `[${cell.name}] docs/answers.md: the API server's answers in the default install and in VAP mode`,
  { skip },
  () => {
    const { rows } = parseAnswersTable(readFileSync(DOC, 'utf8'));
    let w: World;
    let sidecar: Sidecar | undefined;

    /** The context of one row: its own namespace, its TrainJob named NAME. */
    async function rowContext(ns: string): Promise<Ctx> {
      const a = api(w.cp);
      const p = pods(w.cp);
      const at = `/apis/trainer.kubeflow.org/v1alpha1/namespaces/${ns}/trainjobs/${NAME}`;
      await w.cp.kubectl(['create', 'namespace', ns]);
      const ctx: Ctx = {
        w,
        ns,
        p,
        async create(spec = {}, change) {
          const t = torchTrainJob(NAME, ns, spec) as Obj;
          change?.(t);
          const out = await w.tj.create(t);
          assert.ok(out.allowed, JSON.stringify(out));
        },
        async update(change, opts = {}) {
          const query = (opts.fieldValidation ?? 'Strict') === 'Strict' ? '?fieldValidation=Strict' : '';
          for (let attempt = 0; ; attempt++) {
            const got = await apiRequest(w.cp.kubeConfig, 'GET', at);
            assert.equal(got.answer.code, 200, JSON.stringify(got.body));
            const next = structuredClone(got.body) as Obj;
            change(next);
            const put = await apiRequest(w.cp.kubeConfig, 'PUT', `${at}${query}`, next);
            if (put.answer.code !== 409 || attempt >= 10) return put.answer;
          }
        },
        async jobSetBuilt() {
          await a.waitJobSet(ns, NAME, 'built by Trainer', () => true, 90_000);
        },
        async running(spec = {}) {
          await ctx.create({ suspend: false, ...spec });
          await p.waitJobSetRunning(ns, NAME, 1, 'node', 90_000);
        },
      };
      return ctx;
    }

    before(async () => {
      w = await startWorld({ trainer: true, webhook: true });
      await w.cp.applyYaml(workspaceRuntime());
    });
    after(async () => {
      if (process.exitCode && w) process.stderr.write(`[${cell.name}]\n${w.cp.logTails(30)}`);
      await sidecar?.proc.stop();
      await w?.stop();
    });

    /** The world's state; each row brings it where the row needs it (a --test-name-pattern run too). */
    let installed: Mode['name'] = 'default';

    const startReconciler = async () => {
      if (sidecar) return;
      sidecar = await startWorldReconciler(w);
      if (installed === 'vap') return;
      // A dry-run count change of a suspended job with a JobSet: 503 until the webhook sees a leader.
      const probe = await rowContext('lead-probe');
      await probe.create();
      await probe.jobSetBuilt();
      await waitFor(
        'the webhook admits a count change (a reconciler leads)',
        async () => (await w.tj.update(probe.ns, NAME, setCount(2), 'All')).allowed,
        { timeoutMs: 60_000 },
      );
    };
    const stopReconciler = async () => {
      await sidecar?.proc.stop();
      sidecar = undefined;
    };
    /** VAP mode (manifests/overlays/vap): no webhook, the blanket rule lifted with nothing in its place, the policy. */
    const installVap = async () => {
      if (installed === 'vap') return;
      installed = 'vap';
      await unregisterWebhook(w.cp);
      const upstream = upstreamTrainJobCrd(cell.trainer);
      const schema = upstream.spec.versions[0].schema.openAPIV3Schema;
      const lift = (crdPatchFor(upstream) as Obj[]).filter((op) => op.op !== 'add');
      const file = path.join(await w.cp.tempDir('crd-lift'), 'trainjobs.yaml');
      await writeFile(file, stringify(patchedCrd(upstream, lift)));
      await w.cp.installCRDs([file]);
      // The policy generated for the cell's Trainer line (manifests/vap/ holds v2.3.0's and main's).
      const policy = vapManifests(TABLE_SCHEMA, schema, rulesFor(detectTrainerLine(upstream).line));
      await w.cp.applyYaml(policy.map((m) => stringify(m)).join('---\n'));
      const probe = await rowContext('vap-probe');
      await probe.create();
      await waitFor('the policy refuses an image change', async () => {
        const out = await w.tj.update(probe.ns, NAME, (o) => (o.spec.trainer.image = 'ghcr.io/acme/train:2'), 'All');
        return !out.allowed && out.refusal.message.includes('ValidatingAdmissionPolicy');
      });
    };
    /** The row's install mode, and a reconciler leading or not. */
    const bringTo = async (mode: Mode, reconciler: Scenario['reconciler']) => {
      assert.ok(mode.name === installed || mode.name === 'vap', 'the default install is tried before VAP mode');
      if (mode.name === 'vap') await installVap();
      if (reconciler === 'leads') await startReconciler();
      else if (mode.name === 'vap') await stopReconciler();
      else assert.equal(sidecar, undefined, "the default install's rows without a reconciler come first");
    };

    const check = (mode: Mode, row: (typeof rows)[number], i: number) =>
      it(`[${cell.name}] ${mode.name}: line ${row.line}: ${rowKey(row.cells)}`, async () => {
        const scenario = SCENARIOS[rowKey(row.cells)];
        assert.ok(scenario, 'the row has a scenario (see the test above)');
        const expected = parseAnswerCell(row.cells[mode.column]);
        await bringTo(mode, scenario.reconciler);
        const ns = `${mode.ns}-${i + 1}`;
        // The docs name the row's namespace my-ns (a warning names the JobSet as namespace/name).
        const docsNs = (t: string) => t.replaceAll(`${ns}/${NAME}`, `${DOCS_NAMESPACE}/${NAME}`);
        const raw = await scenario.run(await rowContext(ns));
        const got = { ...raw, text: docsNs(raw.text), warnings: raw.warnings.map(docsNs) };
        const why = mismatch(expected, got);
        // What the API server said, for a reader of the run's log (and a docs writer).
        console.log(`answer [${cell.name}] ${mode.name} line ${row.line}: ${describeAnswer(got)}`);
        assert.equal(
          why,
          undefined,
          `docs/answers.md line ${row.line}, ${COLUMNS[mode.column]}:\n  the docs: ${row.cells[mode.column]}\n  the API server: ${describeAnswer(got)}\n  (${why})\n  Status: ${JSON.stringify(got.status)}`,
        );
      });
    const phase = (r: Scenario['reconciler']) =>
      rows.map((row, i) => ({ row, i })).filter(({ row }) => SCENARIOS[rowKey(row.cells)]?.reconciler === r);

    // The default install: the rows that need no reconciler first, then those that need one to
    // lead. Then VAP mode: the rows that need one (it runs on), then the others once it stopped.
    for (const { row, i } of phase('none')) check(MODES[0], row, i);
    for (const { row, i } of phase('leads')) check(MODES[0], row, i);
    for (const { row, i } of phase('leads')) check(MODES[1], row, i);
    for (const { row, i } of phase('none')) check(MODES[1], row, i);
  },
);
