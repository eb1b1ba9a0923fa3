// What forged reviews can make the webhook read (issue 26): the real validator and scale check
// (src/rules/validator.ts, src/scale/reads/scale-check.ts, jobset-read.ts) against a loopback API
// server that counts what it is sent. The webhook does not know who calls it, so a review the
// rules refuse reads nothing, and concurrent count changes of one TrainJob share one set of reads.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { after, before, beforeEach, describe, it } from 'node:test';
import { apiClient, type ApiClient, type ApiResponse } from '../../../src/cluster/api-request.ts';
import { Slots } from '../../../src/cluster/slots.ts';
import { directConnection } from '../../../src/cluster/connection.ts';
import { createMetrics } from '../../../src/observability/metrics.ts';
import { buildPolicy } from '../../../src/rules/policy.ts';
import { createValidator } from '../../../src/rules/validator.ts';
import { jobSetReader } from '../../../src/scale/reads/jobset-read.ts';
import { Coalesced } from '../../../src/scale/reads/coalesced.ts';
import { scaleChecker, withOwnSlots } from '../../../src/scale/reads/scale-check.ts';
import { listen } from '../../cluster/support/loopback.ts';
import { trainJob, update, variant } from '../../rules/fixtures.ts';

const policy = buildPolicy();
const suspended = trainJob();
const running = variant(suspended, (o) => (o.spec.suspend = false));
/** The suspended TrainJob as the API server stores it (with a resourceVersion). */
const stored = variant(suspended, (o) => (o.metadata.resourceVersion = '3'));

describe('forged reviews and the cluster reads they cause', () => {
  let server: Server;
  let loopback: ApiClient;
  /** Paths the loopback API server was sent. */
  const received: string[] = [];
  /** Paths the scale check asked its client for, counted as it asks (before any byte is sent). */
  const asked: string[] = [];
  /** Answers held until the test lets them go. */
  let held: (() => void)[] | undefined;

  const answer = (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname.endsWith('/jobs'))
      return void res.writeHead(200, { 'content-type': 'application/json' }).end('{"kind":"JobList","items":[]}');
    // The stored TrainJob, for the check that a caller not known to be the API server sent it.
    if (url.pathname === '/apis/trainer.kubeflow.org/v1alpha1/namespaces/team-a/trainjobs/llama-ft')
      return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(stored));
    res.writeHead(404, { 'content-type': 'application/json' }).end('{"kind":"Status","code":404}');
  };

  before(async () => {
    server = createServer((req, res) => {
      received.push(req.url ?? '');
      if (held) held.push(() => answer(req, res));
      else answer(req, res);
    });
    loopback = apiClient(
      directConnection({ server: `http://127.0.0.1:${await listen(server)}`, insecureSkipTlsVerify: false }),
    );
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });
  beforeEach(() => {
    received.length = 0;
    asked.length = 0;
    held = undefined;
  });

  const validator = (onAsk: () => void = () => {}) => {
    const counting: ApiClient = {
      server: loopback.server,
      request(path, options) {
        asked.push(path);
        onAsk();
        return loopback.request(path, options);
      },
      stream: (path, signal) => loopback.stream(path, signal),
    };
    // Reads held by the test must not time out on a loaded machine: no test waits on a clock.
    const timeoutMs = 120_000;
    const scaleCheck = scaleChecker(counting, {
      lease: undefined,
      readJobs: jobSetReader(counting, { timeoutMs }),
      metrics: createMetrics(),
      timeoutMs,
    });
    return createValidator({ policy, scaleCheck });
  };

  it('an update the rules refuse (image and numNodes on a running job) sends no request to the API server', async () => {
    const forged = variant(running, (o) => ((o.spec.trainer.image = 'evil:1'), (o.spec.trainer.numNodes = 2)));
    const decision = await validator().validate(update(forged, running));
    assert.ok(decision.causes.length > 0, 'refused by the rules');
    assert.ok(!decision.causes.some((c) => c.origin?.startsWith('scale-check')), 'not by the judgment');
    assert.deepEqual(asked, [], 'no read was asked for');
    // A genuine count change of another TrainJob, awaited: its reads go out on the same client
    // after any the refused one started, so the server has seen those too.
    await validator().validate({
      ...update(
        variant(suspended, (o) => (o.spec.trainer.numNodes = 2)),
        suspended,
      ),
      name: 'other',
    });
    assert.ok(
      received.some((p) => p.includes('other')),
      'the genuine change was read',
    );
    assert.deepEqual(
      received.filter((p) => p.includes('llama-ft')),
      [],
      'the API server was sent nothing about the refused one',
    );
  });

  it('200 concurrent count changes of one TrainJob share one set of reads', async () => {
    const n = 200;
    held = [];
    let reached = 0;
    // The answers are held until every judgment has reached its reads (or, without coalescing,
    // until each has asked for its own), so none can start a second set after the first returned.
    const release = () => {
      const answers = held ?? [];
      held = undefined;
      for (const a of answers) a();
    };
    const v = validator(() => {
      if (asked.length === 4 * n) release();
    });
    const change = variant(stored, (o) => (o.spec.trainer.numNodes = 2));
    const decisions = await Promise.all(
      Array.from({ length: n }, () =>
        v.validate({
          ...update(change, stored),
          holdWhileReading: () => {
            if (++reached === n) setImmediate(release);
            return true;
          },
        }),
      ),
    );
    // The TrainJob GET (its uid and version are the review's), the JobSet GET (and its quorum read:
    // it is absent), the runtime GET and the Jobs LIST: once each.
    assert.ok(received.length <= 5, `${received.length} requests to the API server:\n${received.join('\n')}`);
    assert.ok(
      received.some((p) => p.includes('/jobsets/')),
      'judged: the JobSet was read',
    );
    assert.equal(reached, n);
    assert.ok(
      decisions.every((d) => d.causes.length === 0 || d.transient),
      'each judged from the shared reads (absent JobSet: nothing to rebuild)',
    );
  });
});

describe('Coalesced', () => {
  it('shares a read in flight by key, starts a new one once it settled, and keeps nothing settled', async () => {
    const c = new Coalesced();
    let starts = 0;
    let finish!: (v: number) => void;
    const read = () => {
      starts++;
      return new Promise<number>((resolve) => (finish = resolve));
    };
    const a = c.run('k', read);
    const b = c.run('k', read);
    const other = c.run('j', () => Promise.resolve(7));
    assert.equal(starts, 1);
    assert.equal(c.size, 2);
    finish(1);
    assert.deepEqual(await Promise.all([a, b, other]), [1, 1, 7]);
    assert.equal(c.size, 0);
    const again = c.run('k', read);
    assert.equal(starts, 2);
    finish(2);
    assert.equal(await again, 2);
    assert.equal(c.size, 0);
  });

  it('a read that fails is shared as failed, and leaves the map', async () => {
    const c = new Coalesced();
    const a = c.run('k', () => Promise.reject(new Error('down')));
    const b = c.run('k', () => Promise.resolve('not started'));
    await assert.rejects(a, /down/);
    await assert.rejects(b, /down/);
    assert.equal(c.size, 0);
  });
});

describe('withOwnSlots', () => {
  it('lets at most its slots of requests through to the client at once, the rest in order as they finish', async () => {
    const sent: string[] = [];
    const finish: (() => void)[] = [];
    const client: ApiClient = {
      server: new URL('http://127.0.0.1'),
      request: (path) =>
        new Promise<ApiResponse>((resolve) => {
          sent.push(path);
          finish.push(() => resolve({ status: 200, body: Buffer.from('{}') }));
        }),
      stream: () => Promise.reject(new Error('no watches here')),
    };
    const limited = withOwnSlots(client, new Slots(2));
    const signal = new AbortController().signal;
    const all = ['a', 'b', 'c', 'd'].map((p) => limited.request(p, { signal, maxBytes: 100 }));
    // Let the requests that got a slot reach the client.
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(sent, ['a', 'b']);
    finish.shift()!();
    await all[0];
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(sent, ['a', 'b', 'c']);
    while (finish.length > 0) {
      finish.shift()!();
      await new Promise((resolve) => setImmediate(resolve));
    }
    assert.equal((await Promise.all(all)).length, 4);
    assert.deepEqual(sent, ['a', 'b', 'c', 'd']);
  });
});
