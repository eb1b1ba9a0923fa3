// Every env var the staleness check compares (ml-policy.ts expectedNodeShape, NodeShape.env) for
// any ML policy is kept by the JobSet watch's cache (cache-shape.ts READ_CONTAINER_ENV). Were one
// dropped, the kept JobSet would lack it, stale.ts compares an env only when present, and a JobSet
// built for another count would be judged current. Rows: every vendored upstream runtime (Trainer
// v2.2.1, v2.3.0, main 8c0f5059) and one runtime per known policy source, at several node counts.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import type { JobSet, Runtime, TrainJob } from '../../src/api/objects.ts';
import { expectedNodeShape, KNOWN_POLICIES, mlPolicyOf, NODE_COUNT_ENV } from '../../src/scale/ml-policy.ts';
import { jobSetForCache, READ_CONTAINER_ENV } from '../../src/reconciler/cache-shape.ts';
import { trainJob, trainJobOwner } from '../rebuild/fixtures.ts';

const upstream = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../upstream');
const RUNTIME_DIRS = ['runtimes', 'trainer-main-8c0f5059/manifests/base/runtimes'];

/** The ClusterTrainingRuntimes under `dir`, by their path below upstream/. */
function runtimesUnder(dir: string): { name: string; runtime: Runtime }[] {
  const files = readdirSync(path.join(upstream, dir), { recursive: true, encoding: 'utf8' }).filter((f) =>
    f.endsWith('.yaml'),
  );
  return files.flatMap((f) => {
    const doc = parse(readFileSync(path.join(upstream, dir, f), 'utf8'));
    if (doc?.kind !== 'ClusterTrainingRuntime') return [];
    return [{ name: `${dir}/${f}`, runtime: { kind: doc.kind, name: doc.metadata.name, spec: doc.spec } }];
  });
}

const ROWS = [
  ...RUNTIME_DIRS.flatMap(runtimesUnder),
  ...KNOWN_POLICIES.map((source) => ({
    name: `a runtime with mlPolicy.${source}`,
    runtime: { kind: 'ClusterTrainingRuntime', name: source, spec: { mlPolicy: { numNodes: 1, [source]: {} } } },
  })),
];

/** A JobSet of one `node` job whose container carries `env`, controlled by `tj`. */
function jobSetWithEnv(tj: TrainJob, env: { name: string; value: string }): JobSet {
  return {
    apiVersion: 'jobset.x-k8s.io/v1alpha2',
    kind: 'JobSet',
    metadata: {
      name: tj.metadata.name,
      namespace: 'ns',
      ownerReferences: [trainJobOwner(tj)],
    },
    spec: {
      replicatedJobs: [
        {
          name: 'node',
          template: { spec: { template: { spec: { containers: [{ name: 'node', image: 'i', env: [env] }] } } } },
        },
      ],
    },
  };
}

describe('every env var a policy’s staleness check compares is kept by the JobSet cache', () => {
  for (const { name, runtime } of ROWS)
    for (const numNodes of [undefined, 1, 3])
      it(`${name} (${mlPolicyOf(runtime).kind}), numNodes ${numNodes ?? 'unset'}`, () => {
        const tj = trainJob('t', numNodes === undefined ? {} : { trainer: { numNodes } }, runtime.name);
        const result = expectedNodeShape(tj, runtime);
        assert.ok(result.known, `not judged: ${result.known ? '' : result.reason}`);
        const env = result.shape.env;
        if (!env) return;
        assert.ok(READ_CONTAINER_ENV.includes(env.name), `${env.name} is compared but not in READ_CONTAINER_ENV`);
        for (const mode of ['companion', 'standalone'] as const) {
          const kept = jobSetForCache(jobSetWithEnv(tj, { name: env.name, value: '9' }), mode);
          const container = kept?.spec?.replicatedJobs?.[0]?.template?.spec?.template?.spec?.containers?.[0];
          assert.deepEqual(container?.env, [{ name: env.name, value: '9' }], `${mode} mode dropped ${env.name}`);
        }
      });

  it('the rows compare every env var in NODE_COUNT_ENV (none is listed that no policy compares)', () => {
    const compared = ROWS.flatMap(({ runtime }) => {
      const result = expectedNodeShape(trainJob('t', { trainer: { numNodes: 2 } }, runtime.name), runtime);
      return result.known && result.shape.env ? [result.shape.env.name] : [];
    });
    assert.deepEqual([...new Set(compared)].sort(), [...NODE_COUNT_ENV].sort());
  });
});
