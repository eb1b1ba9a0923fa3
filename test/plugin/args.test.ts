import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseDuration, parseScaleArgs, parseStatusArgs } from '../../src/plugin/args.ts';

describe('plugin flags', () => {
  it('scale: kubectl spellings', () => {
    assert.deepEqual(parseScaleArgs(['llama', '-n', 'ml', '--nodes', '4', '--dry-run=server', '--context', 'c']), {
      namespace: 'ml',
      context: 'c',
      name: 'llama',
      nodes: 4,
      dryRun: true,
      noResume: false,
      timeoutMs: 600_000,
    });
    assert.equal(parseScaleArgs(['x', '--nodes=0', '--no-resume', '--timeout', '1h30m']).timeoutMs, 5_400_000);
  });
  const bad: [string[], RegExp][] = [
    [['--nodes', '2'], /a TrainJob name is required/],
    [['a', 'b', '--nodes', '2'], /one TrainJob name, got 2/],
    [['a'], /--nodes is required/],
    [['a', '--nodes=-1'], /invalid argument "-1" for "--nodes"/],
    [['a', '--nodes', '2.5'], /invalid argument "2.5"/],
    [['a', '--nodes', '2', '--dry-run=client'], /--dry-run=client is not supported/],
    [['a', '--nodes', '2', '--dry-run=all'], /invalid argument "all" for "--dry-run"/],
    [['a', '--nodes', '2', '--replicas', '3'], /unknown flag: --replicas/],
    [['a', '--nodes', '2', '--timeout', '10'], /invalid argument "10" for "--timeout"/],
    [['a', '--nodes', '2', '-n', ''], /--namespace needs a value/],
  ];
  for (const [args, want] of bad)
    it(`scale ${args.join(' ')}: ${want.source}`, () => assert.throws(() => parseScaleArgs(args), want));

  it('durations as Go writes them', () => {
    assert.equal(parseDuration('--timeout', '90s'), 90_000);
    assert.equal(parseDuration('--timeout', '0'), 0);
    assert.equal(parseDuration('--timeout', '1m30s'), 90_000);
    assert.equal(parseDuration('--timeout', '500ms'), 500);
    assert.throws(() => parseDuration('--timeout', '1x'));
  });

  it('status: a name or none, -o json|yaml', () => {
    assert.deepEqual(parseStatusArgs([]), { output: 'text' });
    assert.deepEqual(parseStatusArgs(['a', '-o', 'yaml', '-n', 'x']), { namespace: 'x', name: 'a', output: 'yaml' });
    assert.throws(() => parseStatusArgs(['-o', 'wide']), /output format "wide"/);
    assert.throws(() => parseStatusArgs(['a', 'b']), /at most one/);
  });
});
