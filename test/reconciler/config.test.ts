import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, parseReconcileArgs } from '../../src/reconciler/config.ts';

const sources = { env: {}, hostname: () => 'pod-a', uuid: () => 'u1' };
const pod = {
  env: { KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443' },
  readFile: () => 'kubeflow-system\n',
  hostname: () => 'pod-a',
  uuid: () => 'u1',
};

describe('parseReconcileArgs', () => {
  it('defaults (in a pod): in-cluster, companion, hand-off 8082 on loopback, ops 8083, own field manager, a Lease in the pod namespace', () => {
    const c = parseReconcileArgs([], pod);
    assert.deepEqual(c.cluster, { mode: 'in-cluster', host: '10.96.0.1', port: '443' });
    assert.equal(c.mode, 'companion');
    assert.deepEqual(c.handoff, { host: '127.0.0.1', port: 8082, hintWaitMs: 10_000 });
    assert.equal(c.opsPort, 8083);
    assert.equal(c.opsHost, undefined, 'every address: dual-stack :: where the host has IPv6, else 0.0.0.0');
    assert.equal(c.fieldManager, 'trainjob-webhook-reconciler');
    assert.equal(c.workers, 4);
    assert.deepEqual(
      c.leaderElection && {
        ns: c.leaderElection.namespace,
        name: c.leaderElection.name,
        id: c.leaderElection.identity,
      },
      { ns: 'kubeflow-system', name: 'trainjob-webhook-reconciler', id: 'pod-a_u1' },
    );
    // client-go's timing (the resilience e2e suite runs its sidecars with shorter ones).
    assert.deepEqual(
      c.leaderElection && [
        c.leaderElection.leaseDurationMs,
        c.leaderElection.renewDeadlineMs,
        c.leaderElection.retryPeriodMs,
      ],
      [15_000, 10_000, 2_000],
    );
    assert.equal(c.crashAfter, undefined);
    assert.equal(c.restoreCrdPatch, false, 'the CRD patch restorer is opt-in');
    assert.equal(c.resyncMs, 10 * 60 * 60_000, "controller-runtime's default SyncPeriod: 10 hours");
  });

  it('--restore-crd-patch switches the CRD patch restorer on', () => {
    assert.equal(parseReconcileArgs(['--kubeconfig', 'kc', '--restore-crd-patch'], sources).restoreCrdPatch, true);
  });

  it('reads every flag', () => {
    const c = parseReconcileArgs(
      [
        '--kubeconfig',
        'kc',
        '--mode',
        'standalone',
        '--handoff-port',
        '9000',
        '--ops-port',
        '9001',
        '--ops-host',
        '127.0.0.1',
        '--field-manager',
        'me',
        '--workers',
        '8',
        '--lease-namespace',
        'ops',
        '--log-level',
        'debug',
      ],
      sources,
    );
    assert.deepEqual(c.cluster, { mode: 'kubeconfig', path: 'kc' });
    assert.equal(c.mode, 'standalone');
    assert.equal(c.handoff.port, 9000);
    assert.equal(c.opsPort, 9001);
    assert.equal(c.opsHost, '127.0.0.1');
    assert.equal(c.fieldManager, 'me');
    assert.equal(c.workers, 8);
    assert.equal(c.leaderElection?.namespace, 'ops');
    assert.equal(c.logLevel, 'debug');
  });

  it('outside a pod a kubeconfig is required (never picked up implicitly); the Lease defaults to namespace default', () => {
    assert.throws(
      () => parseReconcileArgs([], { env: { KUBECONFIG: '/home/me/.kube/config' } }),
      /needs a cluster: pass --kubeconfig/,
    );
    assert.equal(parseReconcileArgs(['--kubeconfig', 'kc'], sources).leaderElection?.namespace, 'default');
  });

  it('--trainer-deployment and --no-trainer-deployment are gone (the controller image hint was removed): refused as unknown', () => {
    for (const flag of ['--trainer-deployment=kubeflow-system/x', '--no-trainer-deployment'])
      assert.throws(
        () => parseReconcileArgs(['--kubeconfig', 'kc', flag], sources),
        /Unknown option '--(no-)?trainer-deployment'/,
      );
  });

  it('--no-leader-election for a single replica', () => {
    assert.equal(parseReconcileArgs(['--kubeconfig', 'kc', '--no-leader-election'], sources).leaderElection, undefined);
  });

  for (const [args, message] of [
    [['--mode', 'both'], /--mode must be one of companion, standalone/],
    [['--workers', '0'], /--workers must be a whole number from 1 to 64/],
    [['--handoff-port', '70000'], /--handoff-port must be a port number/],
    [['--handoff-port', '9000', '--ops-port', '9000'], /must differ/],
    [['--field-manager', 'has space'], /--field-manager must be 1-128 printable/],
    [['--kubeconfig', ''], /--kubeconfig needs a value/],
    // Test only (a crash point for the crash-consistency suites): not a flag of the shipped CLI.
    [['--crash-after', 'delete-jobset'], /Unknown option '--crash-after'/],
    [['--nope'], /Unknown option '--nope'/],
  ] as const) {
    it(`refuses ${args.join(' ')}`, () => {
      const all = args[0] === '--kubeconfig' ? [...args] : ['--kubeconfig', 'kc', ...args];
      assert.throws(
        () => parseReconcileArgs(all, sources),
        (err: Error) => err instanceof ConfigError && message.test(err.message),
      );
    });
  }
});
