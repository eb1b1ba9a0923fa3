// The hand-off hint, the one message between the two processes: `{namespace, name, uid,
// generation}` of an admitted change, built by the webhook (webhook/handoff-sender.ts posts it)
// and parsed by the reconciler (reconciler/handoff-server.ts). A hint is only a nudge: the
// reconciler waits until the stored TrainJob matches it (reconciler/hint-wait.ts), then acts on
// what is stored, never on the hint.

export interface Hint {
  namespace: string;
  name: string;
  uid: string;
  /**
   * The generation the admitted object will be stored with; null when unknown. The webhook keeps a
   * value past 2^53 exact (a bigint from the lossless parser); parseHint gives only safe numbers.
   */
  generation: number | bigint | null;
}

export type HintParse = { ok: true; hint: Hint } | { ok: false; error: string };

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const UID = /^[A-Za-z0-9][A-Za-z0-9-]{0,127}$/;

// eslint-disable-next-line complexity -- one check per hint field, every error reported at once
export function parseHint(body: unknown): HintParse {
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    return { ok: false, error: 'a hint is a JSON object {namespace, name, uid, generation}' };
  const { namespace, name, uid, generation } = body as Record<string, unknown>;
  const errors: string[] = [];
  if (typeof namespace !== 'string' || namespace.length > 63 || !DNS_LABEL.test(namespace))
    errors.push('namespace must be a DNS label');
  if (typeof name !== 'string' || name.length > 253 || !DNS_SUBDOMAIN.test(name))
    errors.push('name must be a DNS subdomain');
  if (typeof uid !== 'string' || !UID.test(uid)) errors.push('uid must be an object uid');
  let gen: number | null = null;
  if (generation !== undefined && generation !== null) {
    const n = typeof generation === 'bigint' ? Number(generation) : generation;
    if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 1)
      errors.push('generation must be a positive integer or null');
    else gen = n;
  }
  if (errors.length) return { ok: false, error: errors.join('; ') };
  return {
    ok: true,
    hint: { namespace: namespace as string, name: name as string, uid: uid as string, generation: gen },
  };
}

/**
 * The hint for an admitted object: uid and generation as the API server set them before validating
 * admission (a generation past 2^53 stays the bigint the lossless parser made, written exactly).
 */
export function hintOf(namespace: string, name: string, metadata: Record<string, unknown>): Hint {
  const { uid, generation } = metadata;
  return {
    namespace,
    name,
    uid: typeof uid === 'string' ? uid : '',
    generation: typeof generation === 'number' || typeof generation === 'bigint' ? generation : null,
  };
}
