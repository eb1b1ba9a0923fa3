// Trainer's controller image tag as a hint beside the line found from the CRD, as tables: which
// container is the manager, what a tag names, and the verdict per line (agrees, disagrees,
// uninformative, unreadable, unknown-line). Hostile Deployments give a reason, never a throw.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  judgeImageHint,
  LINE_RELEASES,
  managerImageOf,
  MAX_IMAGE_LENGTH,
  readImageTag,
  type HintVerdict,
  type ImageTag,
} from '../../src/api/trainer-image-hint.ts';
import {
  KNOWN_TRAINER_LINES,
  TRAINER_LINES,
  UNKNOWN_TRAINER_LINE,
  type KnownTrainerLine,
} from '../../src/api/trainer-line.ts';

const REPO = 'ghcr.io/kubeflow/trainer/trainer-controller-manager';
const deployment = (containers: unknown) => ({ spec: { template: { spec: { containers } } } });

describe('the manager container of the Deployment', () => {
  const cases: [string, unknown, RegExp | { container: string; image: string }][] = [
    [
      "Trainer's own: one container named manager",
      deployment([{ name: 'manager', image: `${REPO}:v2.3.0` }]),
      {
        container: 'manager',
        image: `${REPO}:v2.3.0`,
      },
    ],
    [
      'a sidecar before it (istio, kube-rbac-proxy): the one named manager',
      deployment([
        { name: 'kube-rbac-proxy', image: 'quay.io/brancz/kube-rbac-proxy:v0.18.0' },
        { name: 'manager', image: `${REPO}:v2.4.0` },
      ]),
      { container: 'manager', image: `${REPO}:v2.4.0` },
    ],
    [
      'renamed, beside a sidecar: the only trainer-controller-manager image',
      deployment([
        { name: 'proxy', image: 'envoy:v1' },
        { name: 'controller', image: `registry.local:5000/mirror/trainer-controller-manager:v2.3.0` },
      ]),
      { container: 'controller', image: 'registry.local:5000/mirror/trainer-controller-manager:v2.3.0' },
    ],
    [
      'a name of 100 kB, alone: cut to a DNS label',
      deployment([{ name: 'n'.repeat(100_000), image: `${REPO}:v2.3.0` }]),
      { container: 'n'.repeat(63), image: `${REPO}:v2.3.0` },
    ],
    [
      'renamed and alone: that one',
      deployment([{ name: 'ctrl', image: 'x:v2.3.0' }]),
      {
        container: 'ctrl',
        image: 'x:v2.3.0',
      },
    ],
    [
      'two containers, neither named manager nor a trainer image',
      deployment([
        { name: 'a', image: 'x:1' },
        { name: 'b', image: 'y:2' },
      ]),
      /2 containers and none is named "manager"/,
    ],
    ['no spec', {}, /no list of containers/],
    ['null', null, /no list of containers/],
    ['containers a string', deployment('manager'), /no list of containers/],
    ['an empty list', deployment([]), /no containers/],
    ['a list of non-objects', deployment([null, 7, 'manager']), /no containers/],
    ['image a number', deployment([{ name: 'manager', image: 7 }]), /image is a number, not an image reference/],
    ['image missing', deployment([{ name: 'manager' }]), /container "manager" has no image/],
    ['image a list', deployment([{ name: 'manager', image: ['x'] }]), /image is a list/],
    ['image empty', deployment([{ name: 'manager', image: '' }]), /container "manager" has no image/],
    [
      'an image of 10 MB',
      deployment([{ name: 'manager', image: `x:${'v'.repeat(10_000_000)}` }]),
      new RegExp(`has 10000002 characters \\(over ${MAX_IMAGE_LENGTH}\\)`),
    ],
    [
      'a name of 100 kB is quoted short',
      deployment([{ image: 9, name: 'n'.repeat(100_000) }]),
      /^container "n{63}"'s image is a number/,
    ],
  ];
  for (const [name, input, want] of cases)
    it(name, () => {
      const got = managerImageOf(input);
      if (want instanceof RegExp) {
        assert.equal(got.ok, false);
        assert.match((got as { reason: string }).reason, want);
        assert.ok((got as { reason: string }).reason.length < 300, 'the reason is bounded');
      } else assert.deepEqual(got, { ok: true, ...want });
    });
});

describe('what a tag names', () => {
  const cases: [string, ImageTag][] = [
    [`${REPO}:v2.3.0`, { kind: 'release', tag: 'v2.3.0', major: 2, minor: 3, patch: 0 }],
    [`${REPO}:2.3.0`, { kind: 'release', tag: '2.3.0', major: 2, minor: 3, patch: 0 }],
    [`${REPO}:v2.4`, { kind: 'release', tag: 'v2.4', major: 2, minor: 4 }],
    [`${REPO}:v2.4.0-rc.1`, { kind: 'release', tag: 'v2.4.0-rc.1', major: 2, minor: 4, patch: 0, prerelease: 'rc.1' }],
    [
      `${REPO}:v2.3.0-58-g8c0f5059`,
      { kind: 'commit', tag: 'v2.3.0-58-g8c0f5059', commit: '8c0f5059', after: { major: 2, minor: 3, patch: 0 } },
    ],
    [`${REPO}:8c0f5059`, { kind: 'commit', tag: '8c0f5059', commit: '8c0f5059' }],
    [`${REPO}:sha-8c0f505`, { kind: 'commit', tag: 'sha-8c0f505', commit: '8c0f505' }],
    [`${REPO}:20260821`, { kind: 'other', tag: '20260821' }],
    [`${REPO}:latest`, { kind: 'moving', tag: 'latest' }],
    [`${REPO}:main`, { kind: 'moving', tag: 'main' }],
    [REPO, { kind: 'moving', tag: '' }],
    ['localhost:5000/trainer-controller-manager', { kind: 'moving', tag: '' }],
    [
      'localhost:5000/trainer-controller-manager:v2.2.1',
      { kind: 'release', tag: 'v2.2.1', major: 2, minor: 2, patch: 1 },
    ],
    [`${REPO}:v2.3.0@sha256:${'a'.repeat(64)}`, { kind: 'release', tag: 'v2.3.0', major: 2, minor: 3, patch: 0 }],
    [`${REPO}:my-build`, { kind: 'other', tag: 'my-build' }],
  ];
  for (const [image, want] of cases) it(image, () => assert.deepEqual(readImageTag(image), want));

  const none: [string, string, RegExp][] = [
    ['a digest, no tag', `${REPO}@sha256:${'b'.repeat(64)}`, /pinned by digest \(sha256:b{12}\.\.\.\) and has no tag/],
    ['two digests', `${REPO}@sha256:a@sha256:b`, /two digests/],
    ['a space', `${REPO}:v2.3.0 `, /spaces or control characters/],
    ['a newline in the tag', `${REPO}:v2\n.3.0`, /spaces or control characters/],
    ['a tag of 129 characters', `${REPO}:${'a'.repeat(129)}`, /is not a valid image tag/],
    ['a tag starting with a dot', `${REPO}:.v2`, /is not a valid image tag/],
    ['a huge reference', `x:${'1'.repeat(MAX_IMAGE_LENGTH)}`, /over 1024 characters/],
  ];
  for (const [name, image, reason] of none)
    it(`none: ${name}`, () => {
      const got = readImageTag(image);
      assert.equal(got.kind, 'none');
      assert.match((got as { reason: string }).reason, reason);
      assert.ok((got as { reason: string }).reason.length < 200, 'the reason is bounded');
    });
});

describe("the verdict: the tag beside the CRD's line (the CRD decides)", () => {
  const verdict = (line: KnownTrainerLine | 'unknown', tag: string) =>
    judgeImageHint(line === 'unknown' ? UNKNOWN_TRAINER_LINE : TRAINER_LINES[line], {
      ok: true,
      container: 'manager',
      image: tag.includes('/') || tag.includes('@') ? tag : `${REPO}:${tag}`,
    }).verdict;
  // line, tag, verdict
  const table: [KnownTrainerLine | 'unknown', string, HintVerdict][] = [
    ['v2.3.0', 'v2.3.0', 'agrees'],
    ['v2.3.0', '2.3.0', 'agrees'],
    ['v2.3.0', 'v2.3.1', 'agrees'], // a patch release keeps its minor's CRD
    ['v2.3.0', 'v2.4.0', 'disagrees'], // newer controller: the CRD was not upgraded (yet)
    ['v2.3.0', 'v2.2.1', 'disagrees'], // older controller: not rolled out (yet)
    ['v2.3.0', 'v3.0.0', 'disagrees'],
    ['v2.3.0', 'latest', 'uninformative'],
    ['v2.3.0', 'deadbeef1', 'uninformative'], // a commit that may be a v2.3 branch's
    ['v2.3.0', 'v2.3.0-4-gdeadbee', 'uninformative'], // built after v2.3.0: a release branch or main
    ['v2.3.0', 'v2.3.0-58-g8c0f5059', 'disagrees'], // main's commit: newer than v2.3.0
    ['v2.3.0', 'v2.4.0-1-gabcdef0', 'disagrees'], // built after v2.4.0
    ['v2.3.0', 'my-build', 'uninformative'],
    ['v2.3.0', `${REPO}@sha256:${'c'.repeat(64)}`, 'unreadable'],
    ['v2.2.1', 'v2.2.1', 'agrees'],
    ['v2.2.1', 'v2.2.0', 'agrees'], // v2.2.0's CRD is found as v2.2.1's
    ['v2.2.1', 'v2.3.0', 'disagrees'],
    ['v2.2.1', 'v2.3.0-2-gabcdef0', 'disagrees'],
    ['main-8c0f5059', 'v2.4.0', 'agrees'], // main stands in for v2.4
    ['main-8c0f5059', 'v2.4.0-rc.0', 'agrees'],
    ['main-8c0f5059', '8c0f5059', 'agrees'],
    ['main-8c0f5059', '8c0f5059aa12', 'agrees'],
    ['main-8c0f5059', 'v2.3.0-58-g8c0f5059', 'agrees'],
    ['main-8c0f5059', 'v2.3.0-40-g1234abc', 'uninformative'], // another main commit
    ['main-8c0f5059', 'v2.3.0', 'disagrees'], // e.g. main's chart (version 2.3.0) with its default tag
    ['main-8c0f5059', 'v2.5.0', 'disagrees'],
    ['main-8c0f5059', 'latest', 'uninformative'],
    ['unknown', 'v2.5.0', 'unknown-line'],
    ['unknown', 'latest', 'unknown-line'],
    ['unknown', `${REPO}@sha256:${'d'.repeat(64)}`, 'unreadable'],
  ];
  for (const [line, tag, want] of table) it(`${line} · ${tag}: ${want}`, () => assert.equal(verdict(line, tag), want));

  it('every known line has its release', () => assert.deepEqual(Object.keys(LINE_RELEASES), KNOWN_TRAINER_LINES));

  it('a disagreement says which way, that the CRD decides, and what to do', () => {
    const newer = judgeImageHint(TRAINER_LINES['v2.3.0'], { ok: true, container: 'manager', image: `${REPO}:v2.4.0` });
    assert.match(
      newer.message,
      /tag v2\.4\.0 names Trainer v2\.4\.0, newer than the TrainJob CRD \(Trainer v2\.3\.0\)/,
    );
    assert.match(newer.message, /Trainer v2\.3\.0's rules stay in force \(the CRD decides, the tag is a hint\)/);
    assert.match(newer.message, /apply the TrainJob CRD of the controller's release.*then this project's CRD patch/);
    const older = judgeImageHint(TRAINER_LINES['main-8c0f5059'], {
      ok: true,
      container: 'manager',
      image: `${REPO}:v2.3.0`,
    });
    assert.match(older.message, /older than the TrainJob CRD/);
    assert.match(older.message, /roll out the controller of the CRD's release/);
  });

  it('an unreadable image says why', () => {
    const j = judgeImageHint(TRAINER_LINES['v2.3.0'], { ok: false, reason: 'the Deployment has no containers' });
    assert.deepEqual([j.verdict, j.imageTag], ['unreadable', '']);
    assert.match(j.message, /no tag is read from the controller's image: the Deployment has no containers/);
  });
});
