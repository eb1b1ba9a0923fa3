// Deciding the same kind of review many times must not grow the V8 heap it reserves: converted
// CEL maps with per-object accessors leave the heap at ~146 MiB (RSS ~330 MiB) after 100,000
// decisions, against ~46 MiB, though nothing stays alive (bench/PROFILE.md).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import v8 from 'node:v8';
import { parseJsonLossless } from '../../src/json/lossless.ts';
import { admissionInput, parseAdmissionReview } from '../../src/webhook/envelope.ts';
import { decideUpdate } from '../../src/rules/decide.ts';
import { buildPolicy } from '../../src/rules/policy.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

describe('memory of repeated decisions', () => {
  it('30,000 allowed UPDATEs leave the heap V8 reserves under 96 MiB', () => {
    const text = readFileSync(path.join(root, 'examples/allowed-numnodes-suspended.json'), 'utf8');
    const policy = buildPolicy();
    for (let i = 0; i < 30_000; i++) {
      const input = admissionInput(parseAdmissionReview(parseJsonLossless(text)));
      decideUpdate(policy, input.object, input.oldObject);
    }
    const reserved = v8.getHeapStatistics().total_heap_size / 1048576;
    assert.ok(reserved < 96, `heap reserved: ${reserved.toFixed(0)} MiB`);
  });
});
