// The AdmissionReviews the bench sends: realistic ones from examples/, and a CREATE carrying a
// 1 MiB command (a long inline script), the size that shows what parsing and checking cost.
import { readFileSync } from 'node:fs';
import path from 'node:path';

export interface Body {
  name: string;
  /** A few words for table headers. */
  short: string;
  /** What every deciding server must answer. */
  expected: 'allowed' | 'denied';
  json: string;
}

export const MIB = 1024 * 1024;

/** A CREATE whose spec.trainer.command carries a script of `bytes` characters. */
export function withLargeCommand(createReview: string, bytes: number): string {
  const review = JSON.parse(createReview);
  if (review?.request?.operation !== 'CREATE') throw new Error('withLargeCommand: expected a CREATE AdmissionReview');
  const line = 'print("trainjob-webhook bench: one line of a long inline training script")\n';
  const script = line.repeat(Math.ceil(bytes / line.length)).slice(0, bytes);
  review.request.object.spec.trainer.command = ['python', '-c', script];
  return JSON.stringify(review);
}

/** Checked for agreement before the load but not loaded: more of the table's decisions. */
export function agreementOnlyBodies(root: string): Body[] {
  const example = (f: string) => readFileSync(path.join(root, 'examples', f), 'utf8');
  return [
    {
      name: 'denied UPDATE (image change)',
      short: 'image change',
      expected: 'denied',
      json: example('denied-image-change.json'),
    },
    {
      name: 'denied UPDATE (numNodes of a finished job)',
      short: 'finished job',
      expected: 'denied',
      json: example('denied-numnodes-finished.json'),
    },
    { name: 'allowed CREATE', short: 'CREATE', expected: 'allowed', json: example('allowed-create.json') },
  ];
}

export function benchBodies(root: string): Body[] {
  const example = (f: string) => readFileSync(path.join(root, 'examples', f), 'utf8');
  return [
    {
      name: 'allowed UPDATE (numNodes 2 -> 4, suspended)',
      short: 'allowed UPDATE',
      expected: 'allowed',
      json: example('allowed-numnodes-suspended.json'),
    },
    {
      name: 'denied UPDATE (numNodes while running)',
      short: 'denied UPDATE',
      expected: 'denied',
      json: example('denied-numnodes-running.json'),
    },
    {
      name: 'CREATE with a 1 MiB command',
      short: '1 MiB CREATE',
      expected: 'allowed',
      json: withLargeCommand(example('allowed-create.json'), MIB),
    },
  ];
}
