// Our KWOK Stages (kwok/stages.yaml) as data, without a cluster: fixed delays only (no jitter, so
// timings measure the product), the delays the tests print (STAGE_DELAYS), and every pod stage
// telling apart deleted from live pods, so no two stages can match one pod at once.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { STAGE_DELAYS } from './pods.ts';
import { stagesFile } from './world.ts';

type Stage = {
  kind: string;
  metadata: { name: string };
  spec: {
    resourceRef: { kind: string };
    delay?: Record<string, unknown>;
    selector: { matchExpressions: { jq?: { key: string; operator: string; values?: string[] } }[] };
  };
};
const stages = parseAllDocuments(readFileSync(stagesFile, 'utf8')).map((d) => d.toJSON() as Stage);
const byName = new Map(stages.map((s) => [s.metadata.name, s]));
const podStages = stages.filter((s) => s.spec.resourceRef.kind === 'Pod');

describe("the world's KWOK stages", () => {
  it('are all Stages, with unique names', () => {
    assert.ok(stages.every((s) => s.kind === 'Stage'));
    assert.equal(byName.size, stages.length);
  });

  it('have no jitter', () => {
    for (const s of stages) {
      assert.ok(
        !s.spec.delay || (!('jitterDurationMilliseconds' in s.spec.delay) && !('jitterDurationFrom' in s.spec.delay)),
        s.metadata.name,
      );
    }
  });

  it('use the delays the tests print', () => {
    assert.equal(byName.get('pod-start')?.spec.delay?.durationMilliseconds, STAGE_DELAYS.startMs);
    assert.equal(byName.get('pod-initializer-succeed')?.spec.delay?.durationMilliseconds, STAGE_DELAYS.initializerMs);
    assert.equal(byName.get('pod-terminate')?.spec.delay?.durationMilliseconds, STAGE_DELAYS.terminationMs);
    // The delay measured from the deletion: the annotation's default is the same grace.
    const expression = (byName.get('pod-terminate')?.spec.delay?.durationFrom as { jq: { expression: string } }).jq
      .expression;
    assert.ok(expression.includes(`// "${STAGE_DELAYS.terminationMs / 1000}"`), expression);
  });

  it('select deleted pods (Exists) apart from live ones (DoesNotExist) in every pod stage', () => {
    for (const s of podStages) {
      const on = s.spec.selector.matchExpressions.find((e) => e.jq?.key === '.metadata.deletionTimestamp');
      assert.ok(on && ['Exists', 'DoesNotExist'].includes(on.jq!.operator), s.metadata.name);
    }
    const live = podStages
      .filter((s) =>
        s.spec.selector.matchExpressions.some(
          (e) => e.jq?.key === '.metadata.deletionTimestamp' && e.jq.operator === 'DoesNotExist',
        ),
      )
      .map((s) => s.metadata.name);
    assert.deepEqual(live.sort(), ['pod-initializer-succeed', 'pod-start', 'pod-training-ends']);
  });
});
