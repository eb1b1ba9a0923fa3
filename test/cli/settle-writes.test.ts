// `settle --revert`'s writes (src/commands/settle.ts), against a fake API server that answers as
// the real one does for these paths: a running Blocked TrainJob is suspended and reverted in one
// update, then resumed; each PUT carries the resourceVersion last read or written; a conflict on
// the resume (a status write meanwhile) is retried while the spec is the one written, and a spec
// changed by someone else is left as they made it. The real API server's part (the CRD's rule
// refusing numNodes alone on a running job) is test/e2e/settle-revert.test.ts.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { REPORT_ANNOTATION } from '../../src/api/names.ts';
import type { TrainJob } from '../../src/api/objects.ts';
import { settleCommand } from '../../src/commands/settle.ts';
import { encodeReport } from '../../src/rebuild/report.ts';
import { torch1, trainerJobSet, upstreamRuntime } from '../rebuild/fixtures.ts';

const TJ_PATH = '/apis/trainer.kubeflow.org/v1alpha1/namespaces/ns/trainjobs/torch1';

interface World {
  tj: TrainJob;
  /** Before the PUT numbered by key (1-based) is answered: what else happens first. */
  meanwhile: Map<number, (w: World) => void>;
  puts: TrainJob[];
}

function blockedRunning(labels?: Record<string, string>): TrainJob {
  return torch1(2, (t) => {
    t.spec = { ...t.spec, suspend: false, runtimeRef: { name: 'torch-distributed' } };
    t.metadata.labels = labels;
    t.metadata.annotations = {
      [REPORT_ANNOTATION]: encodeReport({
        state: 'Blocked',
        numNodes: 2,
        replicatedJob: 'node',
        parallelism: { from: 1, to: 2 },
        reason: 'JobSet torch1 could not be re-created',
      }),
    };
  });
}

/** The API server's answer to a PUT: 409 on a stale resourceVersion, else stored (generation up on a spec change). */
function put(w: World, body: TrainJob): { status: number; body: unknown } {
  w.puts.push(body);
  w.meanwhile.get(w.puts.length)?.(w);
  if (body.metadata.resourceVersion !== w.tj.metadata.resourceVersion)
    return { status: 409, body: { kind: 'Status', message: 'the object has been modified', reason: 'Conflict' } };
  const specChanged = JSON.stringify(body.spec) !== JSON.stringify(w.tj.spec);
  w.tj = {
    ...body,
    metadata: {
      ...body.metadata,
      resourceVersion: String(Number(w.tj.metadata.resourceVersion) + 1),
      generation: (w.tj.metadata.generation ?? 1) + (specChanged ? 1 : 0),
    },
  };
  return { status: 200, body: w.tj };
}

describe('settle --revert: the writes on a running job', () => {
  let server: Server;
  let dir: string;
  let kubeconfig: string;
  let w: World;

  before(async () => {
    const runtime = upstreamRuntime('torch');
    server = createServer((req, res) => {
      let raw = '';
      req.on('data', (c) => (raw += c));
      req.on('end', () => {
        const url = new URL(req.url ?? '/', 'http://x');
        const send = (status: number, body: unknown) => {
          res.writeHead(status, { 'content-type': 'application/json' });
          res.end(JSON.stringify(body));
        };
        if (req.method === 'PUT' && url.pathname === TJ_PATH) {
          const out = put(w, JSON.parse(raw) as TrainJob);
          return send(out.status, out.body);
        }
        if (url.pathname === '/apis/trainer.kubeflow.org/v1alpha1/trainjobs') return send(200, { items: [w.tj] });
        if (url.pathname === TJ_PATH) return send(200, w.tj);
        if (url.pathname === '/apis/jobset.x-k8s.io/v1alpha2/namespaces/ns/jobsets/torch1')
          return send(200, trainerJobSet('torch1'));
        if (url.pathname === '/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes/torch-distributed')
          return send(200, { metadata: { name: runtime.name }, spec: runtime.spec });
        send(404, { kind: 'Status', reason: 'NotFound' });
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as { port: number };
    dir = await mkdtemp(path.join(tmpdir(), 'settle-writes-'));
    kubeconfig = path.join(dir, 'kubeconfig');
    await writeFile(
      kubeconfig,
      [
        'apiVersion: v1',
        'kind: Config',
        `clusters: [{name: c, cluster: {server: "http://127.0.0.1:${port}"}}]`,
        'users: [{name: u, user: {token: t}}]',
        'contexts: [{name: c, context: {cluster: c, user: u}}]',
        'current-context: c',
      ].join('\n'),
    );
  });
  after(async () => {
    server.close();
    await rm(dir, { recursive: true, force: true });
  });

  const settle = async () => {
    let out = '';
    const code = await settleCommand(['--kubeconfig', kubeconfig, '--revert'], {
      out: (t) => (out += `${t}\n`),
      err: () => {},
    });
    return { code, out };
  };
  const specs = () => w.puts.map((p) => [p.spec?.suspend, p.spec?.trainer?.numNodes, p.metadata.resourceVersion]);

  it('suspended and reverted in one update, then resumed; each write tests the resourceVersion it read', async () => {
    w = { tj: blockedRunning(), meanwhile: new Map(), puts: [] };
    const { out } = await settle();
    assert.match(out, /ns\/torch1: reverted to numNodes 1; suspended in the same update, then resumed/);
    assert.deepEqual(specs(), [
      [true, 1, '10'],
      [false, 1, '11'],
    ]);
    assert.deepEqual([w.tj.spec?.suspend, w.tj.spec?.trainer?.numNodes], [false, 1]);
  });

  it('a status write before the resume (409): read again, and resumed, as its spec is still the one written', async () => {
    w = {
      tj: blockedRunning(),
      meanwhile: new Map([[2, (x) => (x.tj.metadata.resourceVersion = '50')]]),
      puts: [],
    };
    const { out } = await settle();
    assert.match(out, /reverted to numNodes 1; suspended in the same update, then resumed/);
    assert.deepEqual(specs(), [
      [true, 1, '10'],
      [false, 1, '11'],
      [false, 1, '50'],
    ]);
    assert.equal(w.tj.spec?.suspend, false);
  });

  it('someone changes the spec before the resume: not resumed, left as they made it', async () => {
    w = {
      tj: blockedRunning(),
      meanwhile: new Map([
        [
          2,
          (x) => {
            x.tj.metadata.resourceVersion = '50';
            x.tj.metadata.generation = 9;
            x.tj.spec = { ...x.tj.spec, trainer: { ...x.tj.spec?.trainer, numNodes: 3 } };
          },
        ],
      ]),
      puts: [],
    };
    const { code, out } = await settle();
    assert.match(out, /changed by someone else before the resume: left as they made it/);
    assert.equal(code, 1);
    assert.equal(w.puts.length, 2);
    assert.deepEqual([w.tj.spec?.suspend, w.tj.spec?.trainer?.numNodes], [true, 3]);
  });

  it('under Kueue: suspended and reverted, never resumed by settle', async () => {
    w = { tj: blockedRunning({ 'kueue.x-k8s.io/queue-name': 'team' }), meanwhile: new Map(), puts: [] };
    const { out } = await settle();
    assert.match(out, /Kueue resumes it once its Workload is admitted/);
    assert.deepEqual(specs(), [[true, 1, '10']]);
  });

  it('a conflict on the first write (the user suspended it meanwhile): read again, judged again, numNodes alone', async () => {
    w = {
      tj: blockedRunning(),
      meanwhile: new Map([
        [
          1,
          (x) => {
            x.tj.metadata.resourceVersion = '20';
            x.tj.spec = { ...x.tj.spec, suspend: true };
          },
        ],
      ]),
      puts: [],
    };
    const { out } = await settle();
    assert.match(out, /reverted to numNodes 1; it stays suspended/);
    assert.deepEqual(specs(), [
      [true, 1, '10'],
      [true, 1, '20'],
    ]);
  });
});
