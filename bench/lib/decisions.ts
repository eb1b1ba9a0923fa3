// What a server decided for one AdmissionReview, reduced to what every enforcer must agree on:
// allowed or not, and for a denial its HTTP-like code and the fields its causes blame.
import { isObject } from '../../src/json/object.ts';

export interface Decision {
  allowed: boolean;
  /** response.status.code of a denial (422 Invalid, 403 Forbidden). */
  code?: number;
  /** The causes' fields, sorted, duplicates kept (two rules on one field are two causes). */
  fields: string[];
}

/** The decision in an AdmissionReview answer; a clear error when the answer is not one. */
export function decisionOf(answer: unknown): Decision {
  if (!isObject(answer) || answer.kind !== 'AdmissionReview' || !isObject(answer.response)) {
    throw new Error(`not an AdmissionReview answer: ${JSON.stringify(answer)?.slice(0, 200)}`);
  }
  const { allowed, status } = answer.response;
  if (typeof allowed !== 'boolean') throw new Error('response.allowed is not a boolean');
  if (allowed) return { allowed, fields: [] };
  const details = isObject(status) && isObject(status.details) ? status.details : {};
  const causes = Array.isArray(details.causes) ? details.causes : [];
  const fields = causes.map((c) => (isObject(c) && typeof c.field === 'string' ? c.field : '')).sort();
  return { allowed, code: isObject(status) && typeof status.code === 'number' ? status.code : undefined, fields };
}

export function formatDecision(d: Decision): string {
  return d.allowed ? 'allowed' : `denied ${d.code ?? '?'} [${d.fields.join(', ')}]`;
}

export function sameDecision(a: Decision, b: Decision): boolean {
  return (
    a.allowed === b.allowed &&
    a.code === b.code &&
    a.fields.length === b.fields.length &&
    a.fields.every((f, i) => f === b.fields[i])
  );
}

export interface NamedDecision {
  server: string;
  decision: Decision;
}

/**
 * One line per server whose decision on a body differs from the reference's (the first entry),
 * plus one when the reference itself is not what the body is meant to show. Empty: all agree.
 */
export function disagreements(
  body: string,
  expected: 'allowed' | 'denied',
  decisions: readonly NamedDecision[],
): string[] {
  const [reference, ...others] = decisions;
  if (!reference) return [];
  const out: string[] = [];
  if (reference.decision.allowed !== (expected === 'allowed')) {
    out.push(
      `${body}: ${reference.server} answered ${formatDecision(reference.decision)}, the body is meant to be ${expected}`,
    );
  }
  for (const o of others) {
    if (!sameDecision(o.decision, reference.decision)) {
      out.push(
        `${body}: ${o.server} answered ${formatDecision(o.decision)}, ${reference.server} ${formatDecision(reference.decision)}`,
      );
    }
  }
  return out;
}
