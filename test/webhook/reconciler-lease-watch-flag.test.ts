// --watch-reconciler-lease: off by default (the shipped role grants `get` on the Lease, not
// `watch`), on only with cluster access and a Lease to check.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, parseServeArgs } from '../../src/webhook/config.ts';

describe('--watch-reconciler-lease', () => {
  it('is off by default: the Lease is read by GET per numNodes change', () => {
    const c = parseServeArgs(['--kubeconfig', 'kc'], {});
    assert.deepEqual(c.reconcilerLease, { namespace: 'default', name: 'trainjob-webhook-reconciler' });
  });
  it('marks the Lease to watch, the default one or --reconciler-lease', () => {
    assert.deepEqual(parseServeArgs(['--kubeconfig', 'kc', '--watch-reconciler-lease'], {}).reconcilerLease, {
      namespace: 'default',
      name: 'trainjob-webhook-reconciler',
      watch: true,
    });
    assert.deepEqual(
      parseServeArgs(['--kubeconfig', 'kc', '--watch-reconciler-lease', '--reconciler-lease', 'ops/lock'], {})
        .reconcilerLease,
      { namespace: 'ops', name: 'lock', watch: true },
    );
  });
  it('contradicts --no-reconciler-check', () => {
    assert.throws(
      () => parseServeArgs(['--kubeconfig', 'kc', '--watch-reconciler-lease', '--no-reconciler-check'], {}),
      ConfigError,
    );
  });
  it('watches nothing offline', () => {
    assert.equal(parseServeArgs(['--watch-reconciler-lease'], {}).reconcilerLease, undefined);
  });
});
