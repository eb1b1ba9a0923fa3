// The hostile mix of `npm run bench:flood`: AdmissionReviews a pod on the cluster network could
// send, each the shape of a cause the flood bound was built for (bench/history/2026-12-03-issue-18.md,
// "Hostile flood"), built from the example CREATE and UPDATE with `__UID__` where the uid goes.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ADMISSION_BODY_LIMIT } from '../../src/webhook/server.ts';

export interface HostileBody {
  name: string;
  url: string;
  text: string;
}

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const VALIDATE = '/validate-trainer-kubeflow-org-v1alpha1-trainjob';
const MUTATE = '/mutate-trainer-kubeflow-org-v1alpha1-trainjob';
const MiB = 1024 * 1024;

type Review = { request: Record<string, any> };

function example(name: string): Review {
  const review = JSON.parse(readFileSync(path.join(root, 'examples', name), 'utf8')) as Review;
  review.request.uid = '__UID__';
  return review;
}

/** The example CREATE with `change` applied to its request. */
function create(change: (request: Record<string, any>) => void): string {
  const review = example('allowed-create.json');
  change(review.request);
  return JSON.stringify(review);
}

/** The example CREATE with raw JSON text in request.options (not validated, but parsed). */
function withOptions(raw: string): string {
  return create((r) => (r.options = '__RAW__')).replace('"__RAW__"', raw);
}

/** An UPDATE as large as the body limit: both objects carry the same long inline script. */
function largestUpdate(): string {
  const review = example('allowed-numnodes-suspended.json');
  const size = Buffer.byteLength(JSON.stringify(review));
  const each = Math.floor((ADMISSION_BODY_LIMIT - size - 1024) / 2);
  const script = 'x = 1 + 2  # one statement of a long inline training script; '
    .repeat(Math.ceil(each / 62))
    .slice(0, each);
  review.request.object.spec.trainer.command = ['python', '-c', script];
  review.request.oldObject.spec.trainer.command = ['python', '-c', script];
  return JSON.stringify(review);
}

const levels = (n: number) => '['.repeat(n) + ']'.repeat(n);

export function hostileBodies(url: string): HostileBody[] {
  const bodies: Array<[string, string, string]> = [
    ['1 MiB uid (echoed in the answer)', VALIDATE, create((r) => (r.uid = '__UID__' + 'u'.repeat(MiB)))],
    ['1 MiB image', VALIDATE, create((r) => (r.object.spec.trainer.image = 'x'.repeat(MiB)))],
    [
      '1 MiB annotation value, mutated',
      MUTATE,
      create((r) => (r.object.metadata.annotations = { a: 'v'.repeat(MiB) })),
    ],
    [
      '1 MiB user name and namespace',
      VALIDATE,
      create((r) => ((r.userInfo.username = 'n'.repeat(MiB)), (r.namespace = 'n'.repeat(MiB)))),
    ],
    [
      '100,000 wrong-typed command items',
      VALIDATE,
      create((r) => (r.object.spec.trainer.command = Array(100_000).fill(1))),
    ],
    [
      '100,000 annotations with bad keys',
      VALIDATE,
      create(
        (r) =>
          (r.object.metadata.annotations = Object.fromEntries(
            Array.from({ length: 100_000 }, (_, i) => [`/${i}`, 'v']),
          )),
      ),
    ],
    ['200,000 {} in command', VALIDATE, create((r) => (r.object.spec.trainer.command = Array(200_000).fill({})))],
    ['2,000,000 {} in options (7 MiB)', VALIDATE, withOptions(`[${Array(2_000_000).fill('{}').join(',')}]`)],
    [
      '1,000,000 short strings in args',
      VALIDATE,
      create((r) => (r.object.spec.trainer.args = Array(1_000_000).fill('a'))),
    ],
    ['3,500,000 levels of [ (7 MiB)', VALIDATE, withOptions(levels(3_500_000))],
    [
      '9,990 levels in spec.trainer.command',
      MUTATE,
      create((r) => (r.object.spec.trainer.command = '__RAW__')).replace('"__RAW__"', levels(9_990)),
    ],
    ['the largest UPDATE (2 x 3.5 MiB script)', VALIDATE, largestUpdate()],
    ['not JSON (1 MiB)', VALIDATE, '{"kind":"AdmissionReview",' + 'x'.repeat(MiB)],
  ];
  return bodies.map(([name, route, text]) => ({ name, url: url + route, text }));
}
