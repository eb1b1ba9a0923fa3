// The hint both processes share (src/handoff/hint.ts): what the webhook builds from an admitted
// object, written as the sender writes it, is what the reconciler's parse accepts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hintOf, parseHint } from '../../src/handoff/hint.ts';
import { parseJsonLossless, stringifyJsonLossless } from '../../src/json/lossless.ts';

const uid = '6f1c2a4e-0d7b-4a51-9a57-1f3c0b9e2d10';

/** The webhook's hint through the wire: the sender's lossless writing, the receiver's JSON.parse. */
const overTheWire = (hint: ReturnType<typeof hintOf>) => parseHint(JSON.parse(stringifyJsonLossless(hint)));

describe('hintOf and parseHint: one hint at both ends', () => {
  it('an admitted object: namespace, name, uid and generation arrive as built', () => {
    const hint = hintOf('team-a', 'my-job', { name: 'my-job', uid, generation: 3 });
    assert.deepEqual(overTheWire(hint), {
      ok: true,
      hint: { namespace: 'team-a', name: 'my-job', uid, generation: 3 },
    });
  });
  it('no generation: null, and the hint is still accepted (the reconciler waits for the uid alone)', () => {
    const hint = hintOf('team-a', 'my-job', { uid });
    assert.equal(hint.generation, null);
    assert.deepEqual(overTheWire(hint), {
      ok: true,
      hint: { namespace: 'team-a', name: 'my-job', uid, generation: null },
    });
  });
  it('the largest safe generation, parsed losslessly as the webhook parses admission bodies', () => {
    const metadata = parseJsonLossless(`{"uid":"${uid}","generation":9007199254740991}`) as Record<string, unknown>;
    const hint = hintOf('team-a', 'my-job', metadata);
    assert.deepEqual(overTheWire(hint), {
      ok: true,
      hint: { namespace: 'team-a', name: 'my-job', uid, generation: 9007199254740991 },
    });
  });
  it('metadata without a string uid: the hint is built, and refused at the other end', () => {
    const hint = hintOf('team-a', 'my-job', { uid: 42 });
    assert.equal(hint.uid, '');
    const parsed = overTheWire(hint);
    assert.equal(parsed.ok, false);
  });
});
