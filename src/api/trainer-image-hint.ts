// The Trainer controller's image tag, read as a hint beside the line found from the TrainJob CRD
// (trainer-line-detect.ts): which container of the controller-manager Deployment is the manager,
// what its image's tag names (a release, a commit, a moving tag, nothing readable), and whether
// that agrees with the CRD's line. The hint never chooses the rules: a disagreement is reported,
// with what it usually means (a Trainer upgrade half done: the CRD not upgraded, or the controller
// not rolled out yet) and what to do.
//
// Pure and total: the Deployment comes from the cluster, so anything (no containers, an image that
// is not a string, a huge one, a hostile tag) gives an answer, never an exception; what is quoted
// back in messages is bounded.
import { isObject } from '../json/object.ts';
import { TRAINER_MANAGER_CONTAINER, TRAINER_MANAGER_IMAGE } from './names.ts';
import type { KnownTrainerLine, TrainerLine } from './trainer-line.ts';

/**
 * An image reference longer than this is not read. The distribution spec bounds a name at 255
 * characters, a tag at 128 and a digest at ~135; the API server bounds none of them.
 */
export const MAX_IMAGE_LENGTH = 1024;

/** A release as far as a tag tells it: major and minor, the patch when the tag has one. */
export interface Release {
  major: number;
  minor: number;
  patch?: number;
}

/**
 * The releases whose TrainJob CRD each known line is found for: the line's minor release (a patch
 * release keeps the CRD; v2.2.0's differs from v2.2.1's in descriptions only, so it is found as
 * v2.2.1). Main at 8c0f5059 stands in for v2.4, and a build of that commit names it.
 */
export const LINE_RELEASES: Readonly<Record<KnownTrainerLine, { major: number; minor: number; commit?: string }>> = {
  'v2.2.1': { major: 2, minor: 2 },
  'v2.3.0': { major: 2, minor: 3 },
  'main-8c0f5059': { major: 2, minor: 4, commit: '8c0f5059' },
};

export type ManagerImage = { ok: true; container: string; image: string } | { ok: false; reason: string };

const at = (node: unknown, ...steps: string[]): unknown =>
  steps.reduce<unknown>((n, s) => (isObject(n) && Object.hasOwn(n, s) ? n[s] : undefined), node);
const typeName = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'a list' : `a ${typeof v}`);
/** A string from the cluster, quoted for a message: at most 63 characters, control characters escaped. */
const quote = (s: string) => JSON.stringify(s.length > 63 ? `${s.slice(0, 60)}...` : s);
/** The repository of an image reference: its last path segment without tag or digest. */
const repositoryOf = (image: string) => (image.split('@')[0].split('/').pop() ?? '').split(':')[0];

/**
 * The manager container's image: the container Trainer names `manager`; else the only container;
 * else the only one running a `trainer-controller-manager` image (a Deployment with sidecars).
 */
export function managerImageOf(deployment: unknown): ManagerImage {
  const fail = (reason: string): ManagerImage => ({ ok: false, reason });
  const list = at(deployment, 'spec', 'template', 'spec', 'containers');
  if (!Array.isArray(list)) return fail('the Deployment has no list of containers (spec.template.spec.containers)');
  const containers = list.filter(isObject);
  if (containers.length === 0) return fail('the Deployment has no containers');
  const byImage = containers.filter(
    (c) =>
      typeof c.image === 'string' &&
      c.image.length <= MAX_IMAGE_LENGTH &&
      repositoryOf(c.image) === TRAINER_MANAGER_IMAGE,
  );
  const chosen =
    containers.find((c) => c.name === TRAINER_MANAGER_CONTAINER) ??
    (containers.length === 1 ? containers[0] : byImage.length === 1 ? byImage[0] : undefined);
  if (!chosen)
    return fail(
      `the Deployment has ${containers.length} containers and none is named "${TRAINER_MANAGER_CONTAINER}" ` +
        `(Trainer's name for it) or is the only one with a ${TRAINER_MANAGER_IMAGE} image`,
    );
  // A container name is a DNS label (63 characters) where the API server validated it.
  const container = typeof chosen.name === 'string' ? chosen.name.slice(0, 63) : '(unnamed)';
  const { image } = chosen;
  if (image === undefined || image === '') return fail(`container ${quote(container)} has no image`);
  if (typeof image !== 'string')
    return fail(`container ${quote(container)}'s image is ${typeName(image)}, not an image reference`);
  if (image.length > MAX_IMAGE_LENGTH)
    return fail(
      `container ${quote(container)}'s image reference has ${image.length} characters (over ${MAX_IMAGE_LENGTH})`,
    );
  return { ok: true, container, image };
}

export type ImageTag =
  | ({ kind: 'release'; tag: string; prerelease?: string } & Release)
  /** A commit's build: a bare sha, `sha-<sha>`, or git describe's `v2.3.0-58-g8c0f5059` (built after that release). */
  | { kind: 'commit'; tag: string; commit: string; after?: Release & { patch: number } }
  /** latest, main, nightly...: names no release (an image with no tag is latest). */
  | { kind: 'moving'; tag: string }
  | { kind: 'other'; tag: string }
  | { kind: 'none'; reason: string };

/** The distribution spec's tag grammar. */
const TAG = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;
const RELEASE = /^v?(\d{1,6})\.(\d{1,6})(?:\.(\d{1,6}))?(?:-([0-9A-Za-z.-]+))?$/;
const DESCRIBE = /^(\d+)-g([0-9a-f]{7,40})$/;
const COMMIT = /^(?:sha-)?([0-9a-f]{7,40})$/;
const MOVING = new Set(['latest', 'main', 'master', 'dev', 'nightly', 'edge']);

/** The tag and digest of `[registry[:port]/]path[:tag][@digest]`, or why it cannot be read. */
function splitReference(image: string): { tag?: string; digest?: string } | { reason: string } {
  if (image.length > MAX_IMAGE_LENGTH) return { reason: `an image reference over ${MAX_IMAGE_LENGTH} characters` };
  if (/[\s\p{C}]/u.test(image)) return { reason: 'the image reference has spaces or control characters' };
  const [name, digest, ...more] = image.split('@');
  if (more.length > 0) return { reason: 'the image reference has two digests' };
  const last = name.split('/').pop() ?? '';
  const colon = last.indexOf(':');
  return { ...(colon < 0 ? {} : { tag: last.slice(colon + 1) }), ...(digest === undefined ? {} : { digest }) };
}

/** A tag of release form: `v2.3.0`, `2.3.0`, `v2.4`, `v2.4.0-rc.1`, or git describe's `v2.3.0-58-g8c0f5059`. */
function releaseTag(tag: string, m: RegExpExecArray): ImageTag {
  const [major, minor] = [Number(m[1]), Number(m[2])];
  const patch = m[3] === undefined ? undefined : Number(m[3]);
  const prerelease = m[4];
  const described = prerelease === undefined ? null : DESCRIBE.exec(prerelease);
  if (described && patch !== undefined)
    return { kind: 'commit', tag, commit: described[2], after: { major, minor, patch } };
  return {
    kind: 'release',
    tag,
    major,
    minor,
    ...(patch === undefined ? {} : { patch }),
    ...(prerelease === undefined ? {} : { prerelease }),
  };
}

/** What an image reference's tag names. */
export function readImageTag(image: string): ImageTag {
  const ref = splitReference(image);
  if ('reason' in ref) return { kind: 'none', reason: ref.reason };
  const { tag, digest } = ref;
  if (tag === undefined)
    return digest === undefined
      ? { kind: 'moving', tag: '' }
      : { kind: 'none', reason: `the image is pinned by digest (${digest.slice(0, 19)}...) and has no tag` };
  if (!TAG.test(tag)) return { kind: 'none', reason: `its tag ${quote(tag)} is not a valid image tag` };
  if (MOVING.has(tag.toLowerCase())) return { kind: 'moving', tag };
  const release = RELEASE.exec(tag);
  if (release) return releaseTag(tag, release);
  const commit = COMMIT.exec(tag);
  // A sha has a letter in it (all digits is more likely a date or a build number).
  if (commit && /[a-f]/.test(commit[1])) return { kind: 'commit', tag, commit: commit[1] };
  return { kind: 'other', tag };
}

export type HintVerdict = 'agrees' | 'disagrees' | 'uninformative' | 'unreadable' | 'unknown-line';

export interface HintJudgment {
  verdict: HintVerdict;
  /** The tag as read ('' when there is none). */
  imageTag: string;
  /** One sentence for the log: what the tag says beside the CRD's line; for a disagreement, what to do. */
  message: string;
}

const releaseName = (r: Release) => `v${r.major}.${r.minor}${r.patch === undefined ? '' : `.${r.patch}`}`;
/** Negative: r is older than the line's release; 0 the same minor; positive newer. */
const compare = (r: Release, line: { major: number; minor: number }) => r.major - line.major || r.minor - line.minor;
const sameCommit = (a: string, b: string) => a.length >= 7 && b.length >= 7 && (a.startsWith(b) || b.startsWith(a));

function disagreement(tag: string, names: string, newer: boolean, line: TrainerLine): string {
  const head = `the controller image's tag ${tag} names ${names}, ${newer ? 'newer' : 'older'} than the TrainJob CRD (${line.label}); ${line.label}'s rules stay in force (the CRD decides, the tag is a hint)`;
  return newer
    ? `${head}. Mid-upgrade this clears once the new release's CRD is applied; if it stays, the CRD was not upgraded: apply the TrainJob CRD of the controller's release (Trainer's chart does from v2.3.0 on; with kustomize, its manifests/base/crds), then this project's CRD patch for it (docs/versions.md, "Upgrading Trainer"). Until then the reconciler follows rules the controller may not share (a newer Trainer may treat every Failed job as final)`
    : `${head}. Mid-upgrade this clears once the new controller has rolled out; if it stays, the controller was not upgraded with its CRD, or its tag is pinned (the chart's image.tag; main's chart at 8c0f5059 is versioned 2.3.0, so its default tag is v2.3.0): roll out the controller of the CRD's release`;
}

/** What the tag names, for messages. */
function namesOf(tag: Exclude<ImageTag, { kind: 'none' }>): string {
  switch (tag.kind) {
    case 'release':
      return `Trainer ${releaseName(tag)}${tag.prerelease ? ' (a pre-release)' : ''}`;
    case 'commit':
      return `a build of commit ${tag.commit.slice(0, 12)}${tag.after ? ` after ${releaseName(tag.after)}` : ''}`;
    case 'moving':
      return 'no release (a moving tag)';
    default:
      return 'no release this project can read';
  }
}

/**
 * Where the tag's build lies against the line's release: 0 the line's own (its minor, or its
 * commit), positive newer, negative older, undefined when it cannot be told. A known line's commit
 * places a build; one built after a later minor's release is newer; any other commit may be the
 * line's own (a release branch, main).
 */
function placeTag(tag: ImageTag, line: KnownTrainerLine): number | undefined {
  const release = LINE_RELEASES[line];
  if (tag.kind === 'release') return compare(tag, release);
  if (tag.kind !== 'commit') return undefined;
  const known = (Object.keys(LINE_RELEASES) as KnownTrainerLine[]).find((id) => {
    const commit = LINE_RELEASES[id].commit;
    return commit !== undefined && sameCommit(tag.commit, commit);
  });
  if (known) return known === line ? 0 : compare(LINE_RELEASES[known], release);
  return tag.after && compare(tag.after, release) > 0 ? 1 : undefined;
}

/** The tag of the manager's image beside the line the CRD is (pure; see the header). */
export function judgeImageHint(line: TrainerLine, image: ManagerImage): HintJudgment {
  const judged = (verdict: HintVerdict, imageTag: string, message: string): HintJudgment => ({
    verdict,
    imageTag,
    message,
  });
  const tag: ImageTag = image.ok ? readImageTag(image.image) : { kind: 'none', reason: image.reason };
  if (tag.kind === 'none') return judged('unreadable', '', `no tag is read from the controller's image: ${tag.reason}`);
  const shown = tag.tag || '(none: latest)';
  const names = namesOf(tag);
  if (line.id === 'unknown')
    return judged(
      'unknown-line',
      tag.tag,
      `the controller image's tag ${shown} names ${names}; the TrainJob CRD is of no known line, so the careful rules apply`,
    );
  const order = placeTag(tag, line.id);
  if (order === undefined)
    return judged(
      'uninformative',
      tag.tag,
      `the controller image's tag ${shown} names ${names}; the TrainJob CRD decides (${line.label})`,
    );
  return order === 0
    ? judged(
        'agrees',
        tag.tag,
        `the controller image's tag ${shown} (${names}) agrees with the TrainJob CRD (${line.label})`,
      )
    : judged('disagrees', tag.tag, disagreement(shown, names, order > 0, line));
}
