// The standard protocol: the CRD patch adds the scale subresource on spec.trainer.numNodes, this
// project's status field and printer columns. In the world where pods run, beside the real Trainer
// v2.3.0 and JobSet v0.12.0 managers, the webhook and the reconciler, with the pinned kubectl:
// - `kubectl scale trainjob/NAME --replicas N` on a suspended job is admitted, the JobSet is rebuilt
//   with N nodes after the resume, and `kubectl get trainjobs` shows it;
// - on a running job the API server refuses it with the CRD's rule (422), before any webhook;
// - a ServiceAccount with only update/patch on trainjobs/scale (an HPA's rights) writing /scale of
//   a running job gets the same clear refusal;
// - a scale the count-change judgment refuses (a workspace claim) gets the webhook's 403;
// - a job without numNodes: GET /scale is a 500 (nothing to read), `kubectl scale` sets numNodes;
// - the status field survives Trainer's own status write (the reconciler stopped meanwhile, so it
//   cannot have written it again).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { controlPlaneAvailability, upstreamControllersAvailability, waitFor, skipUnless } from '../harness/index.ts';
import type { TrainJob } from '../../src/api/objects.ts';
import type { Sidecar } from '../reconciler/support/sidecar.ts';
import {
  api,
  inNamespace,
  parallelism,
  startWorld,
  startWorldReconciler,
  torchTrainJob,
  type World,
} from '../reconciler/support/world.ts';

const skip = skipUnless(controlPlaneAvailability(), upstreamControllersAvailability());

const NS = 'scale-api';
const scalePath = (name: string) => `/apis/trainer.kubeflow.org/v1alpha1/namespaces/${NS}/trainjobs/${name}/scale`;
type StatusField = { nodes?: number; selector?: string; rebuild?: string; reason?: string };
const field = (t: TrainJob): StatusField | undefined => t.status?.trainjobWebhook as StatusField | undefined;

describe('kubectl scale: the scale subresource of a TrainJob', { skip }, () => {
  let w: World;
  let reconciler: Sidecar;
  const { getTj, create, patch } = inNamespace(NS, () => w);
  const kubectl = (args: string[], kubeconfig?: string) =>
    w.cp.kubectl([...args, '-n', NS], { check: false, ...(kubeconfig ? { kubeconfig } : {}) });

  before(async () => {
    w = await startWorld({ trainer: true, webhook: true });
    await w.cp.kubectl(['create', 'namespace', NS]);
    reconciler = await startWorldReconciler(w, 'reconciler-scale');
  });
  after(async () => {
    if (process.exitCode && w) process.stderr.write(w.cp.logTails(20));
    await w?.stop();
  });

  it('on a suspended job: admitted; after the resume the JobSet runs 2 nodes, and kubectl get trainjobs shows it', async () => {
    await create(torchTrainJob('llama', NS));
    const a = api(w.cp);
    const old = await a.waitJobSet(NS, 'llama', 'built for 1 node', (js) => parallelism(js) === 1);
    await waitFor(
      'the status field: the JobSet is built for 1 node',
      async () => field(await getTj('llama'))?.nodes === 1,
    );
    const scaled = await kubectl(['scale', 'trainjob/llama', '--replicas', '2']);
    assert.equal(scaled.code, 0, scaled.stderr);
    assert.equal(scaled.stdout.trim(), 'trainjob.trainer.kubeflow.org/llama scaled');
    assert.equal((await getTj('llama')).spec?.trainer?.numNodes, 2);
    await patch('llama', { spec: { suspend: false } });
    await a.waitJobSet(
      NS,
      'llama',
      're-created with 2 nodes, running',
      (js) => js.metadata.uid !== old.metadata.uid && parallelism(js) === 2 && js.spec?.suspend === false,
    );
    const shown = await waitFor('kubectl get trainjobs shows 2 nodes asked for and built, Rebuilt', async () => {
      const out = await kubectl(['get', 'trainjobs']);
      return /^llama\s+\S+\s+2\s+2\s+Rebuilt\s+\S+$/m.test(out.stdout) ? out.stdout : undefined;
    });
    assert.match(shown.split('\n')[0], /^NAME\s+STATE\s+NODES\s+JOBSET\s+REBUILD\s+AGE$/);
    const read = JSON.parse((await w.cp.kubectl(['get', '--raw', scalePath('llama')])).stdout);
    assert.deepEqual(
      { spec: read.spec, status: read.status },
      {
        spec: { replicas: 2 },
        status: {
          replicas: 2,
          // The training nodes' pods only: not the initializers' (the node job, src/rebuild/status-field.ts).
          selector: 'jobset.sigs.k8s.io/jobset-name=llama,jobset.sigs.k8s.io/replicatedjob-name=node',
        },
      },
    );
  });

  it('on a running job: refused by the CRD rule before any webhook (422), the count kept', async () => {
    const out = await kubectl(['scale', 'trainjob/llama', '--replicas', '3']);
    assert.notEqual(out.code, 0);
    assert.match(
      out.stderr,
      /TrainJob "llama" is invalid: spec\.trainer\.numNodes: Forbidden: numNodes may only change while the TrainJob is suspended/,
    );
    assert.equal((await getTj('llama')).spec?.trainer?.numNodes, 2);
  });

  it("an autoscaler's ServiceAccount (get, update, patch on trainjobs/scale only) writing /scale of a running job: the same clear refusal", async () => {
    await w.cp.applyYaml(
      [
        { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'autoscaler', namespace: NS } },
        {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'Role',
          metadata: { name: 'scale-trainjobs', namespace: NS },
          rules: [
            { apiGroups: ['trainer.kubeflow.org'], resources: ['trainjobs/scale'], verbs: ['get', 'update', 'patch'] },
          ],
        },
        {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'RoleBinding',
          metadata: { name: 'autoscaler', namespace: NS },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'scale-trainjobs' },
          subjects: [{ kind: 'ServiceAccount', name: 'autoscaler', namespace: NS }],
        },
      ]
        .map((d) => JSON.stringify(d))
        .join('\n---\n'),
    );
    const hpa = await w.cp.makeUserKubeconfig(`system:serviceaccount:${NS}:autoscaler`, ['system:serviceaccounts']);
    // What an HPA does: GET the Scale, set spec.replicas, PUT it back (with its resourceVersion),
    // and on a conflict (Trainer's and the reconciler's status writes move the version) do it again.
    const getAndPut = async () => {
      const got = await kubectl(['get', '--raw', scalePath('llama')], hpa.path);
      assert.equal(got.code, 0, got.stderr);
      const scale = JSON.parse(got.stdout);
      scale.spec.replicas = 4;
      return w.cp.kubectl(['replace', '--raw', scalePath('llama'), '-f', '-'], {
        kubeconfig: hpa.path,
        input: JSON.stringify(scale),
        check: false,
      });
    };
    const put = await waitFor('an answer other than a conflict', async () => {
      const out = await getAndPut();
      return /Conflict|the object has been modified/.test(out.stderr) ? undefined : out;
    });
    assert.notEqual(put.code, 0);
    assert.match(
      put.stderr,
      /numNodes may only change while the TrainJob is suspended: set spec\.suspend to true first/,
    );
    assert.equal((await getTj('llama')).spec?.trainer?.numNodes, 2);
  });

  it("a scale the count-change judgment refuses (a workspace claim): the webhook's 403 through /scale", async () => {
    await create({
      ...torchTrainJob('claims', NS),
      spec: { runtimeRef: { name: 'torchtune-llama3.2-1b' }, suspend: true, trainer: { numNodes: 1 } },
    });
    await api(w.cp).waitJobSet(NS, 'claims', 'built', (js) => parallelism(js) === 1);
    const out = await kubectl(['scale', 'trainjob/claims', '--replicas', '2']);
    assert.notEqual(out.code, 0);
    assert.match(out.stderr, /\(Forbidden\)/);
    // The world's webhook runs without --client-ca: the API server is not known to be the caller,
    // so the answer is in general words (src/scale/reads/scale-check.ts), naming only the TrainJob.
    assert.match(
      out.stderr,
      /spec\.trainer\.numNodes: Forbidden: its JobSet has workspace claims \(spec\.volumeClaimPolicies\).*create a new TrainJob with numNodes 2/,
    );
    assert.equal((await getTj('claims')).spec?.trainer?.numNodes, 1);
  });

  it('a job without numNodes: GET /scale is a 500 (no count to read); kubectl scale sets numNodes', async () => {
    const bare = torchTrainJob('bare', NS);
    delete bare.spec?.trainer?.numNodes;
    await create(bare);
    const got = await w.cp.kubectl(['get', '--raw', scalePath('bare')], { check: false });
    assert.notEqual(got.code, 0);
    assert.match(got.stderr, /InternalError|500/);
    assert.match(got.stderr, /the spec replicas field "\.spec\.trainer\.numNodes" does not exist/);
    const out = await kubectl(['scale', 'trainjob/bare', '--replicas', '2']);
    assert.equal(out.code, 0, out.stderr);
    assert.equal((await getTj('bare')).spec?.trainer?.numNodes, 2);
  });

  it("the status field survives Trainer's own status write", async () => {
    await create(torchTrainJob('kept', NS));
    await waitFor('the status field written', async () => field(await getTj('kept'))?.nodes === 1);
    // No reconciler from here on: nothing of ours can write the field again.
    await reconciler.proc.stop();
    const before = await getTj('kept');
    const suspended = (t: TrainJob) => t.status?.conditions?.find((c) => c.type === 'Suspended')?.status;
    assert.equal(suspended(before), 'True');
    await patch('kept', { spec: { suspend: false } });
    // Trainer's status write: Suspended turns False (its merge patch of the status it knows).
    const afterWrite = await waitFor("Trainer's status write (Suspended=False)", async () => {
      const t = await getTj('kept');
      return suspended(t) === 'False' ? t : undefined;
    });
    assert.deepEqual(field(afterWrite), field(before));
    type Entry = { manager?: string; subresource?: string };
    const entries = (afterWrite.metadata as { managedFields?: Entry[] }).managedFields ?? [];
    const managers = entries.filter((m) => m.subresource === 'status');
    assert.ok(
      managers.some((m) => m.manager === 'trainer' || String(m.manager).includes('trainer-controller')),
      JSON.stringify(managers.map((m) => m.manager)),
    );
  });
});
