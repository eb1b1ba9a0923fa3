// What each Trainer line builds for the same TrainJob and runtime (fixtures/by-line, captured from
// the real managers by capture-jobsets-by-line.ts), and where two lines differ in a part JobSet
// keeps immutable (jobset-diff.ts): a JobSet built by the older line is then one the newer Trainer
// can no longer apply, which the reconciler rebuilds at the resume (src/rebuild/refused-apply.ts).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import type { JobSet } from '../../src/api/objects.ts';
import { immutableDifferences, leafDiff } from './jobset-diff.ts';
import { LINE_CASES } from './line-cases.ts';

const here = path.dirname(fileURLToPath(import.meta.url));
const built = (line: string, name: string): JobSet =>
  JSON.parse(readFileSync(path.join(here, 'fixtures/by-line', `${line}-jobset-${name}.json`), 'utf8'));

const ssh = (rJob: string) => `spec.replicatedJobs[${rJob}].template.spec.template.spec.volumes[mpi-ssh-auth].secret`;
/** kubeflow/trainer#3649 (v2.3.0): the SSH Secret volume's modes, on the launcher and the nodes. */
const SSH_MODES = ['launcher', 'node'].flatMap((r) => [
  `${ssh(r)}.defaultMode: absent -> 256`,
  `${ssh(r)}.items[0].mode: absent -> 416`,
  `${ssh(r)}.items[1].mode: absent -> 420`,
  `${ssh(r)}.items[2].mode: absent -> 420`,
]);
const node = 'spec.replicatedJobs[node].template.spec.template.spec.containers[node]';

const V221_TO_V230: Record<keyof typeof LINE_CASES, string[]> = {
  torch: [],
  'torch-res': [],
  'torch-patch': [],
  // v2.2.1 replaced the node container's resources with resourcesPerNode; v2.3.0 merges them.
  'torch-merge': [
    `${node}.resources.limits.memory: absent -> "16Gi"`,
    `${node}.resources.requests: absent -> {"cpu":"4"}`,
  ],
  mpi: SSH_MODES,
  'mpi-res': SSH_MODES,
};

describe('JobSets built by each Trainer line for the same TrainJob and runtime', () => {
  for (const [name, want] of Object.entries(V221_TO_V230))
    it(`v2.2.1 -> v2.3.0, ${name}: ${want.length ? 'immutable parts differ' : 'nothing immutable differs'}`, () => {
      assert.deepEqual(immutableDifferences(built('v2.2.1', name), built('v2.3.0', name)), want);
    });
  for (const name of Object.keys(LINE_CASES))
    it(`v2.3.0 -> main 8c0f5059, ${name}: the same JobSet`, () => {
      assert.deepEqual(leafDiff(built('v2.3.0', name), built('main', name), ''), []);
    });
  it('the diff sees what JobSet refuses: a pod label may change while suspended, not once running', () => {
    const a = built('v2.3.0', 'torch');
    const b = structuredClone(a);
    const pod = b.spec!.replicatedJobs![0]!.template!.spec!.template!;
    pod.metadata = { ...pod.metadata, labels: { kueue: 'x' } };
    assert.deepEqual(immutableDifferences(a, b, true), []);
    assert.equal(immutableDifferences(a, b, false).length, 1);
  });
});
