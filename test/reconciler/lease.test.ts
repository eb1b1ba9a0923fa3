// Leader election, the pure part: when to create, renew, take over, or wait.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { leaseStep, microTime, recordOf, type LeaseObject } from '../../src/reconciler/lease.ts';

const lease = (holder: string, renewTime = '2026-11-30T00:00:00.000000Z', extra: object = {}): LeaseObject => ({
  metadata: { name: 'l', namespace: 'ns', resourceVersion: '5' },
  spec: {
    holderIdentity: holder,
    leaseDurationSeconds: 15,
    acquireTime: '2026-11-30T00:00:00.000000Z',
    renewTime,
    leaseTransitions: 2,
    ...extra,
  },
});

describe('leaseStep', () => {
  const now = Date.parse('2026-11-30T00:00:20Z');

  it('no Lease: create it as the holder', () => {
    const step = leaseStep(undefined, undefined, 'me', now, 15_000);
    assert.deepEqual(step, {
      kind: 'create',
      spec: {
        holderIdentity: 'me',
        leaseDurationSeconds: 15,
        acquireTime: '2026-11-30T00:00:20.000000Z',
        renewTime: '2026-11-30T00:00:20.000000Z',
        leaseTransitions: 0,
      },
    });
  });

  it('my Lease: renew, keeping acquireTime and the transition count', () => {
    const step = leaseStep(lease('me'), undefined, 'me', now, 15_000);
    assert.equal(step.kind, 'update');
    assert.deepEqual(
      step.kind === 'update' && [step.spec.acquireTime, step.spec.renewTime, step.spec.leaseTransitions],
      ['2026-11-30T00:00:00.000000Z', '2026-11-30T00:00:20.000000Z', 2],
    );
  });

  it("another holder's Lease, first seen now: wait a whole duration on my own clock (its renewTime may be skewed)", () => {
    assert.deepEqual(leaseStep(lease('other', '2020-01-01T00:00:00.000000Z'), undefined, 'me', now, 15_000), {
      kind: 'wait',
      holder: 'other',
    });
  });

  it('another holder that kept renewing: wait', () => {
    const l = lease('other');
    assert.equal(leaseStep(l, { record: 'other@earlier', atMs: now - 60_000 }, 'me', now, 15_000).kind, 'wait');
  });

  it('another holder whose record did not change for a whole duration: take over, one more transition', () => {
    const l = lease('other');
    const step = leaseStep(l, { record: recordOf(l), atMs: now - 15_001 }, 'me', now, 15_000);
    assert.equal(step.kind, 'update');
    assert.deepEqual(
      step.kind === 'update' && [step.spec.holderIdentity, step.spec.acquireTime, step.spec.leaseTransitions],
      ['me', '2026-11-30T00:00:20.000000Z', 3],
    );
  });

  it('a released Lease (no holder): take it at once', () => {
    assert.equal(leaseStep(lease(''), undefined, 'me', now, 15_000).kind, 'update');
  });

  it('microTime has six fractional digits (metav1.MicroTime)', () => {
    assert.equal(microTime(Date.parse('2026-11-30T01:02:03.456Z')), '2026-11-30T01:02:03.456000Z');
  });
});
