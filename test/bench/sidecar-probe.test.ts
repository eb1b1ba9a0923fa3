// The scale benchmark's black-box readings of the sidecar: Prometheus samples by label, their
// differences, and a log read on from where it stopped.
import assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { byLabel, deltaOf, logTail, samplesOf, sumOf } from '../../bench/lib/sidecar-probe.ts';

const exposition = [
  '# HELP trainjob_reconciler_api_requests_total Requests.',
  '# TYPE trainjob_reconciler_api_requests_total counter',
  'trainjob_reconciler_api_requests_total{verb="get",resource="trainjobs"} 3',
  'trainjob_reconciler_api_requests_total{verb="get",resource="leases"} 40',
  'trainjob_reconciler_api_requests_total{verb="list",resource="jobs"} 2',
  'trainjob_reconciler_api_requests_total_other 9',
  'workqueue_depth{name="trainjob-rebuild",controller="trainjob-rebuild",priority=""} 0',
  'trainjob_reconciler_leader 1',
].join('\n');

describe('sidecar probe', () => {
  it('reads samples with and without labels, by name only (not a longer name that starts alike)', () => {
    assert.equal(samplesOf(exposition, 'trainjob_reconciler_api_requests_total').length, 3);
    assert.deepEqual(samplesOf(exposition, 'trainjob_reconciler_leader'), [{ labels: {}, value: 1 }]);
    assert.equal(samplesOf(exposition, 'workqueue_depth')[0]?.labels.priority, '');
  });

  it('sums by a label, leaving out what the filter drops, and differences readings', () => {
    const noLeases = (l: Record<string, string>) => l.resource !== 'leases';
    const before = byLabel(exposition, 'trainjob_reconciler_api_requests_total', 'verb', noLeases);
    assert.deepEqual(before, { get: 3, list: 2 });
    assert.equal(sumOf(exposition, 'trainjob_reconciler_api_requests_total'), 45);
    assert.deepEqual(deltaOf(before, { get: 3, list: 5, patch: 1 }), { list: 3, patch: 1 });
  });

  it('reads a log on from where it stopped, a line cut in the middle completed by the next read', () => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'probe-')), 'log');
    writeFileSync(file, '{"msg":"a"}\nnot json\n{"msg":');
    const tail = logTail(file);
    assert.deepEqual(tail.next(), [{ msg: 'a' }]);
    assert.deepEqual(tail.next(), []);
    appendFileSync(file, '"b"}\n');
    assert.deepEqual(tail.next(), [{ msg: 'b' }]);
  });
});
