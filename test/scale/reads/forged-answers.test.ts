// What a forged count change learns from the answer (issue 26): `serve` with the real validator and
// scale check, its reads against a loopback API server that holds a victim's namespace, and the
// reviews sent over HTTPS by a plain client with no certificate, as any pod that reaches the port
// can send them. The answers name the request's TrainJob and nothing else the reads found: no Job,
// pod, controller or Lease holder, no count, no read's error; each still says what to do. The
// details go to the webhook's log, one line per judgment. The same reviews from the API server
// (`--client-ca`, its client certificate) get the detailed answers.
//
// Forged writes to a TrainJob's scale subresource make the webhook read the TrainJob: their answers
// must not tell whether a TrainJob of that name exists (not found, a read refused and another uid
// all get one general answer), where the API server's tell it why.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { apiClient } from '../../../src/cluster/api-request.ts';
import { directConnection } from '../../../src/cluster/connection.ts';
import type { JobSet, TrainJob } from '../../../src/api/objects.ts';
import { createMetrics } from '../../../src/observability/metrics.ts';
import { buildPolicy } from '../../../src/rules/policy.ts';
import { createValidator } from '../../../src/rules/validator.ts';
import { jobSetReader } from '../../../src/scale/reads/jobset-read.ts';
import { scaleChecker } from '../../../src/scale/reads/scale-check.ts';
import { trainJobReader } from '../../../src/scale/reads/trainjob-read.ts';
import { parseServeArgs } from '../../../src/webhook/config.ts';
import { startServe } from '../../../src/webhook/run.ts';
import { listen } from '../../cluster/support/loopback.ts';
import { createCA, issueClientCert, issueServingCert, writeKeyPair, type KeyPairPem } from '../../harness/pki.ts';
import { trainerJobSet, trainJob, torch1, upstreamRuntime, withCount } from '../../rebuild/fixtures.ts';
import { captureLogs, postOverTls, review } from '../../webhook/fixtures.ts';

const NS = 'victim';
const LEASE = { namespace: 'kubeflow-system', name: 'trainjob-webhook-reconciler' };
/** What the victim's namespace holds that no request names; none of it may reach a forged answer. */
const SECRETS = {
  job: 'payroll-node-0',
  active: 37,
  terminating: 19,
  controller: 'payroll-exporter',
  controllerKind: 'Deployment',
  mpiParallelism: 23,
  holder: 'reconciler-7f9c4-hq2zx',
  account: 'system:serviceaccount:kubeflow-system:trainjob-webhook',
};

const renamed = <T extends { metadata?: object }>(o: T, name: string): T => ({
  ...o,
  metadata: { ...o.metadata, name, namespace: NS },
});

/** Each scenario: the TrainJob before and after its count change, and what the API server holds for it. */
interface Scenario {
  before: TrainJob;
  after: TrainJob;
  jobSet: JobSet | { status: number; message: string };
  jobs: unknown[];
}

function scenarios(): Record<string, Scenario> {
  const torch = trainerJobSet('torch1');
  const mpi = withCount(trainerJobSet('mpi'), 'node', SECRETS.mpiParallelism);
  // The fixtures' JobSets are controlled by the TrainJob of the same uid (trainjob-uid-<fixture>).
  const mpiJob = (n: number) => trainJob('mpi', { trainer: { numNodes: n } }, 'gone-runtime');
  const foreign = renamed(torch, 'foreign');
  foreign.metadata.ownerReferences = [
    { apiVersion: 'apps/v1', kind: SECRETS.controllerKind, name: SECRETS.controller, uid: 'u-2', controller: true },
  ];
  return {
    // Its JobSet's pods still run: admitted, with a warning about them.
    busy: {
      before: renamed(torch1(1), 'busy'),
      after: renamed(torch1(2), 'busy'),
      jobSet: renamed(torch, 'busy'),
      jobs: [
        {
          metadata: { name: SECRETS.job },
          status: { active: SECRETS.active, terminating: SECRETS.terminating },
        },
      ],
    },
    // Its JobSet is another controller's: refused for good.
    foreign: {
      before: renamed(torch1(1), 'foreign'),
      after: renamed(torch1(2), 'foreign'),
      jobSet: foreign,
      jobs: [],
    },
    // Its runtime is gone and its MPI JobSet cannot tell the count from a change: refused for now.
    mpi: {
      before: renamed(mpiJob(SECRETS.mpiParallelism), 'mpi'),
      after: renamed(mpiJob(SECRETS.mpiParallelism + 1), 'mpi'),
      jobSet: renamed(mpi, 'mpi'),
      jobs: [],
    },
    // Its JobSet cannot be read (the webhook's own rights): refused for now.
    unreadable: {
      before: renamed(torch1(1), 'unreadable'),
      after: renamed(torch1(2), 'unreadable'),
      jobSet: {
        status: 403,
        message: `jobsets.jobset.x-k8s.io "unreadable" is forbidden: User "${SECRETS.account}" cannot get resource "jobsets"`,
      },
      jobs: [],
    },
  };
}

/** TrainJob GETs the API server has answered. */
const served = { trainJobs: 0 };

/** The API server as the webhook reads it: the scenarios' JobSets and Jobs, the torch runtime, the Lease. */
function apiServer(all: Record<string, Scenario>, lease: () => unknown): Server {
  const runtime = upstreamRuntime('torch');
  return createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const json = (status: number, body: unknown) =>
      void res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    const notFound = () => json(404, { kind: 'Status', code: 404, message: 'not found' });
    const jobSet = url.pathname.match(/^\/apis\/jobset\.x-k8s\.io\/v1alpha2\/namespaces\/victim\/jobsets\/(.+)$/);
    if (jobSet) {
      const s = all[jobSet[1]]?.jobSet;
      if (!s) return notFound();
      if ('status' in s && typeof s.status === 'number')
        return json(s.status, { kind: 'Status', code: s.status, message: (s as { message: string }).message });
      return json(200, s);
    }
    const tj = url.pathname.match(/^\/apis\/trainer\.kubeflow\.org\/v1alpha1\/namespaces\/victim\/trainjobs\/(.+)$/);
    if (tj) {
      served.trainJobs++;
      return trainJobAnswer(all, tj[1], json, notFound);
    }
    if (url.pathname === '/apis/batch/v1/namespaces/victim/jobs') {
      const name = (url.searchParams.get('labelSelector') ?? '').split('=')[1] ?? '';
      return json(200, { kind: 'JobList', items: all[name]?.jobs ?? [] });
    }
    if (url.pathname === '/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes/torch-distributed')
      return json(200, { metadata: { name: 'torch-distributed' }, spec: runtime.spec });
    if (url.pathname === `/apis/coordination.k8s.io/v1/namespaces/${LEASE.namespace}/leases/${LEASE.name}`)
      return json(200, lease());
    notFound();
  });
}

/** A TrainJob GET: the scenario's TrainJob, `locked` forbidden (the webhook's own rights), else 404. */
function trainJobAnswer(
  all: Record<string, Scenario>,
  name: string,
  json: (status: number, body: unknown) => void,
  notFound: () => void,
): void {
  if (name === 'locked')
    return json(403, {
      kind: 'Status',
      code: 403,
      message: `trainjobs.trainer.kubeflow.org "locked" is forbidden: User "${SECRETS.account}" cannot get resource "trainjobs"`,
    });
  const s = all[name];
  return s ? json(200, s.before) : notFound();
}

const leaseRenewedAgo = (ms: number) => ({
  metadata: { name: LEASE.name, namespace: LEASE.namespace },
  spec: {
    holderIdentity: SECRETS.holder,
    leaseDurationSeconds: 15,
    renewTime: new Date(Date.now() - ms).toISOString(),
  },
});

interface Answer {
  allowed: boolean;
  code?: number;
  message: string;
  warnings: string[];
}

/** POSTs one review over HTTPS, as a pod would: with no client certificate unless `client` is given. */
async function post(url: string, servingCa: string, body: unknown, client?: KeyPairPem): Promise<Answer> {
  const got = await postOverTls(url, servingCa, body, client);
  if ('error' in got) throw new Error(got.error);
  const r = JSON.parse(got.text).response;
  return { allowed: r.allowed, code: r.status?.code, message: r.status?.message ?? '', warnings: r.warnings ?? [] };
}

function countChange(name: string, s: Scenario): unknown {
  const r = review('UPDATE', { uid: `forged-${name}`, oldObject: s.before, object: s.after }) as {
    request: Record<string, unknown>;
  };
  r.request.name = name;
  r.request.namespace = NS;
  return r;
}

/**
 * What the answer says beyond the request: every secret's name, and any digit once the request's
 * own counts and version strings (Trainer v2.3.0, JobSet v0.12.0) are taken out.
 */
function leaks(answer: Answer, s: Scenario): string[] {
  const text = [answer.message, ...answer.warnings].join('\n');
  const named = [SECRETS.job, SECRETS.controller, SECRETS.controllerKind, SECRETS.holder, SECRETS.account].filter((n) =>
    text.includes(n),
  );
  const own = [s.before.spec?.trainer?.numNodes, s.after.spec?.trainer?.numNodes].map(String);
  let rest = text.replace(/v\d+(\.\d+)+/g, '');
  for (const n of own) rest = rest.replace(new RegExp(`\\b${n}\\b`, 'g'), '');
  const digits = rest.match(/\b\d+\b/g) ?? [];
  return [...named, ...digits.map((d) => `the number ${d}`)];
}

describe('forged count changes: the answer names only the TrainJob, the log has the rest', () => {
  let dir: string;
  let servingCa: string;
  let caFile: string;
  let apiServerCert: KeyPairPem;
  let api: Server;
  let apiUrl: string;
  let lease: unknown;
  const all = scenarios();

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tjw-forged-answers-'));
    const ca = await createCA('forged-answers-ca');
    servingCa = ca.certPem;
    await writeKeyPair(join(dir, 'serving'), await issueServingCert(ca, 'trainjob-webhook'));
    caFile = join(dir, 'client-ca.crt');
    await writeFile(caFile, ca.certPem);
    apiServerCert = await issueClientCert(ca, 'kube-apiserver');
    lease = leaseRenewedAgo(1_000);
    api = apiServer(all, () => lease);
    apiUrl = `http://127.0.0.1:${await listen(api)}`;
  });
  after(async () => {
    api.closeAllConnections();
    api.close();
    await rm(dir, { recursive: true, force: true });
  });

  async function serve(flags: string[]) {
    const { logger, lines } = captureLogs();
    const metrics = createMetrics();
    const client = apiClient(directConnection({ server: apiUrl, insecureSkipTlsVerify: false }));
    const scaleCheck = scaleChecker(client, {
      lease: LEASE,
      readJobs: jobSetReader(client),
      metrics,
      logger: logger.child({ component: 'count-change' }),
    });
    const config = parseServeArgs(
      ['--port', '0', '--ops-port', '0', '--host', '127.0.0.1', '--cert-dir', join(dir, 'serving'), ...flags],
      {},
    );
    const validator = createValidator({ policy: buildPolicy(), scaleCheck });
    const handle = await startServe(config, { validator, logger, metrics, readTrainJob: trainJobReader(client) });
    after(() => handle.close());
    return { url: handle.admissionUrl, lines };
  }

  it('a plain HTTPS client with no certificate: each answer names nothing the request did not, and says what to do', async () => {
    const { url, lines } = await serve([]);
    const answers: Record<string, Answer> = {};
    for (const [name, s] of Object.entries(all)) answers[name] = await post(url, servingCa, countChange(name, s));
    lease = leaseRenewedAgo(3_600_000);
    answers.noLeader = await post(url, servingCa, countChange('busy', all.busy));
    lease = leaseRenewedAgo(1_000);

    for (const [name, answer] of Object.entries(answers))
      assert.deepEqual(leaks(answer, all[name] ?? all.busy), [], `${name}: ${JSON.stringify(answer)}`);
    // Each verdict is the one the reads support, in general words with the way out.
    assert.equal(answers.busy.allowed, true, JSON.stringify(answers.busy));
    assert.ok(
      answers.busy.warnings.includes(
        `TrainJob ${NS}/busy: its JobSet's pods have not all stopped yet: the rebuild waits until none of its pods runs or is terminating, and its pods stop once the JobSet is suspended; \`kubectl -n ${NS} get pods -l jobset.sigs.k8s.io/jobset-name=busy\` shows them`,
      ),
      JSON.stringify(answers.busy.warnings),
    );
    assert.equal(answers.foreign.code, 403);
    assert.match(answers.foreign.message, /its JobSet is not controlled by this TrainJob.*leave numNodes as it is/);
    assert.equal(answers.mpi.code, 503);
    assert.match(
      answers.mpi.message,
      /the runtime its spec\.runtimeRef names does not exist, and without the runtime its MPI JobSet cannot tell this count from a change.*restore the runtime; the change is refused for now/,
    );
    assert.equal(answers.unreadable.code, 503);
    assert.match(
      answers.unreadable.message,
      /its JobSet could not be read \(the webhook's log says why\).*refused for now/,
    );
    assert.equal(answers.noLeader.code, 503);
    assert.match(answers.noLeader.message, /no reconciler leads to carry the rebuild out.*refused for now/);

    // The details are in the log: one info line per judgment that left some out.
    const logged = lines.filter((l) => l.component === 'count-change');
    assert.equal(logged.length, 5, JSON.stringify(logged));
    assert.ok(logged.every((l) => l.level === 'info'));
    const text = JSON.stringify(logged);
    for (const detail of [
      `Job ${SECRETS.job}: ${SECRETS.active} active, ${SECRETS.terminating} terminating`,
      `${SECRETS.controllerKind} ${SECRETS.controller}`,
      `parallelism ${SECRETS.mpiParallelism}`,
      SECRETS.account,
      SECRETS.holder,
    ])
      assert.ok(text.includes(detail), `the log lacks ${detail}: ${text}`);
  });

  it('the API server (--client-ca, its client certificate): the same reviews get the detailed answers', async () => {
    const { url, lines } = await serve(['--client-ca', caFile]);
    const busy = await post(url, servingCa, countChange('busy', all.busy), apiServerCert);
    assert.ok(
      busy.warnings.some((w) => w.includes(`Job ${SECRETS.job}: ${SECRETS.active} active`)),
      JSON.stringify(busy),
    );
    const foreign = await post(url, servingCa, countChange('foreign', all.foreign), apiServerCert);
    assert.match(foreign.message, new RegExp(`its controller is ${SECRETS.controllerKind} ${SECRETS.controller}`));
    assert.equal(lines.filter((l) => l.component === 'count-change').length, 0, 'nothing withheld, nothing logged');
  });

  /**
   * A forged count change of `name` from `from` to `to` nodes, its metadata the scenario's TrainJob's
   * with `uid` in place of the stored one (undefined: none) and no resourceVersion when `noVersion`.
   */
  function guessed(name: string, from: number, to: number, uid: string | undefined, noVersion = false): unknown {
    const meta = (t: TrainJob) => {
      const m: Record<string, unknown> = { ...t.metadata, name, namespace: NS };
      if (uid === undefined) delete m.uid;
      else m.uid = uid;
      if (noVersion) delete m.resourceVersion;
      return { ...t, metadata: m } as TrainJob;
    };
    return countChange(name, { ...all.busy, before: meta(torch1(from)), after: meta(torch1(to)) });
  }

  it('forged count changes without the stored uid and version: whether a JobSet exists, and its count, do not show', async () => {
    // Found by review: a JobSet of that name and another controller got 403 ("not controlled by
    // this TrainJob"), no JobSet an admission; with no uid, the count the JobSet was built for
    // was admitted ("already has this count") where another count was judged.
    const { url, lines } = await serve([]);
    const cases = {
      jobSetOfAnother: await post(url, servingCa, guessed('foreign', 2, 3, 'a-guessed-uid')),
      noJobSet: await post(url, servingCa, guessed('ghost', 2, 3, 'a-guessed-uid')),
      builtCountNoUid: await post(url, servingCa, guessed('busy', 2, 1, undefined)),
      otherCountNoUid: await post(url, servingCa, guessed('busy', 2, 3, undefined)),
      storedUidNoVersion: await post(url, servingCa, guessed('busy', 2, 1, 'trainjob-uid-torch1', true)),
    };
    const seen = Object.entries(cases).map(([, a]) => ({
      ...a,
      message: a.message.replace(/\b(foreign|ghost|busy)\b/g, 'NAME'),
    }));
    for (const answer of seen) assert.deepEqual(answer, seen[0], JSON.stringify(cases));
    assert.equal(cases.noJobSet.code, 503);
    assert.match(
      cases.noJobSet.message,
      /the TrainJob could not be read for the judgment \(the webhook's log says why\).*refused for now/,
    );
    const logged = JSON.stringify(lines.filter((l) => l.component === 'count-change'));
    for (const reason of ['the TrainJob was replaced', 'the TrainJob was not found', 'the review names no uid'])
      assert.ok(logged.includes(reason), `the log lacks ${reason}: ${logged}`);
  });

  /** A forged write to the scale subresource of `name`, from a Scale of that uid (none: left out) and version. */
  function scaleWrite(name: string, uid: string | undefined, resourceVersion = '1'): unknown {
    const scale = (replicas: number) => ({
      apiVersion: 'autoscaling/v1',
      kind: 'Scale',
      metadata: { name, namespace: NS, resourceVersion, ...(uid ? { uid } : {}) },
      spec: { replicas },
    });
    const r = review('UPDATE', {
      uid: `forged-scale-${name}`,
      kind: { group: 'autoscaling', version: 'v1', kind: 'Scale' },
      oldObject: scale(1),
      object: scale(2),
    }) as { request: Record<string, unknown> };
    Object.assign(r.request, { name, namespace: NS, subResource: 'scale' });
    return r;
  }

  it('forged scale writes: whether the TrainJob exists, cannot be read or has another uid, the answer is the same', async () => {
    const { url, lines } = await serve([]);
    const cases = {
      // 'busy' exists; the forger cannot know its uid.
      exists: await post(url, servingCa, scaleWrite('busy', 'a-guessed-uid'), undefined),
      existsNoUid: await post(url, servingCa, scaleWrite('busy', undefined), undefined),
      absent: await post(url, servingCa, scaleWrite('ghost', 'a-guessed-uid'), undefined),
      unreadable: await post(url, servingCa, scaleWrite('locked', 'a-guessed-uid'), undefined),
    };
    const as = (answer: Answer, name: string) => ({ ...answer, message: answer.message.replaceAll(name, 'NAME') });
    const seen = [
      as(cases.exists, 'busy'),
      as(cases.existsNoUid, 'busy'),
      as(cases.absent, 'ghost'),
      as(cases.unreadable, 'locked'),
    ];
    for (const answer of seen) assert.deepEqual(answer, seen[0], JSON.stringify(cases));
    assert.equal(cases.absent.code, 503);
    assert.match(
      cases.absent.message,
      /the TrainJob could not be read for the judgment \(the webhook's log says why\).*refused for now/,
    );
    assert.deepEqual(leaks(cases.unreadable, all.busy), []);
    // The reasons are in the log.
    const logged = JSON.stringify(lines.filter((l) => l.component === 'scale-subresource'));
    for (const reason of [
      'the TrainJob was replaced',
      'the review names no uid',
      'the TrainJob was not found',
      SECRETS.account,
    ])
      assert.ok(logged.includes(reason), `the log lacks ${reason}: ${logged}`);
  });

  it('a scale write of the stored TrainJob from a caller not known to be the API server reads it once', async () => {
    // Found by review: the count change read the TrainJob again to gate the Scale path's own read.
    const { url } = await serve([]);
    served.trainJobs = 0;
    const answer = await post(url, servingCa, scaleWrite('busy', 'trainjob-uid-torch1', '10'));
    assert.equal(answer.allowed, true, JSON.stringify(answer));
    assert.equal(served.trainJobs, 1);
  });

  it('the API server (--client-ca): the same scale writes are told why', async () => {
    const { url } = await serve(['--client-ca', caFile]);
    const absent = await post(url, servingCa, scaleWrite('ghost', 'a-guessed-uid'), apiServerCert);
    assert.match(absent.message, /the TrainJob was not found/);
    const unreadable = await post(url, servingCa, scaleWrite('locked', 'a-guessed-uid'), apiServerCert);
    assert.ok(unreadable.message.includes(SECRETS.account), unreadable.message);
    const replaced = await post(url, servingCa, scaleWrite('busy', 'a-guessed-uid'), apiServerCert);
    assert.match(replaced.message, /the TrainJob was replaced/);
  });
});
