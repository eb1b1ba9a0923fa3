// The AdmissionReview envelope: what a request must look like to be decided, and the answer
// built around a decision. A body that is not an AdmissionReview cannot be answered in-band (there
// is no uid to echo), so it gets HTTP 400 with a message saying what was wrong. Once apiVersion,
// kind and request.uid are read, every error is answered in-band, as controller-runtime answers
// them: an AdmissionReview with allowed false, code 400 and the uid echoed. That includes a review
// whose text nests deeper than the parser takes (its envelope read by envelope-scan.ts).
import { TRAINJOB_GROUP, TRAINJOB_KIND } from '../api/names.ts';
import { isObject } from '../json/object.ts';
import type { AdmissionInput, Operation } from '../rules/contract.ts';
import type { Status } from './status.ts';

export const ADMISSION_VERSIONS = ['admission.k8s.io/v1', 'admission.k8s.io/v1beta1'] as const;
export type AdmissionVersion = (typeof ADMISSION_VERSIONS)[number];

const OPERATIONS: readonly Operation[] = ['CREATE', 'UPDATE', 'DELETE', 'CONNECT'];

export interface GroupVersionKind {
  group: string;
  version: string;
  kind: string;
}

/** A well-formed AdmissionReview request, with the parts the webhooks need. */
export interface AdmissionReviewRequest {
  apiVersion: AdmissionVersion;
  uid: string;
  operation: Operation;
  /** request.kind; absent only in hand-written reviews (the API server always sends it). */
  kind?: GroupVersionKind;
  /** request.resource's group and resource (a subresource's request names its parent's resource here). */
  resource?: { group: string; resource: string };
  subResource?: string;
  namespace?: string;
  /** request.name, else object.metadata.name (empty on CREATE with generateName). */
  name: string;
  object: Record<string, unknown> | null;
  oldObject: Record<string, unknown> | null;
  dryRun: boolean;
  username?: string;
}

/** The envelope of a review known well enough to answer it in-band. */
export type KnownEnvelope = Pick<AdmissionReviewRequest, 'apiVersion' | 'uid'> & { operation?: Operation };

/**
 * Thrown for a body that is not an AdmissionReview (answered with HTTP 400 `{error}`), or, with
 * `review`, for an AdmissionReview whose envelope is known (answered in-band with code 400).
 */
export class EnvelopeError extends Error {
  override name = 'EnvelopeError';
  readonly statusCode = 400;
  readonly review?: KnownEnvelope;
  constructor(message: string, review?: KnownEnvelope) {
    super(message);
    if (review) this.review = review;
  }
}

/** A body the parser could not decode whole, whose envelope was read from its text: answered in-band. */
export class UndecodableReview {
  readonly review: KnownEnvelope;
  readonly message: string;
  constructor(review: KnownEnvelope, message: string) {
    this.review = review;
    this.message = message;
  }
}

/** The envelope read from a body's text (envelope-scan.ts), if it is one to answer in-band. */
export function knownEnvelope(fields: {
  apiVersion?: unknown;
  kind?: unknown;
  uid?: unknown;
  operation?: unknown;
}): KnownEnvelope | undefined {
  const { apiVersion, kind, uid, operation } = fields;
  if (kind !== 'AdmissionReview' || !ADMISSION_VERSIONS.includes(apiVersion as AdmissionVersion)) return undefined;
  if (typeof uid !== 'string' || uid === '') return undefined;
  const review: KnownEnvelope = { apiVersion: apiVersion as AdmissionVersion, uid };
  if (OPERATIONS.includes(operation as Operation)) review.operation = operation as Operation;
  return review;
}

export function parseAdmissionReview(body: unknown): AdmissionReviewRequest {
  if (body instanceof UndecodableReview) throw new EnvelopeError(body.message, body.review);
  if (body === undefined || body === null || body === '')
    throw new EnvelopeError('request body is empty: expected an AdmissionReview');
  if (!isObject(body))
    throw new EnvelopeError(`request body is ${describeType(body)}, expected an AdmissionReview object`);
  const { apiVersion, kind, request } = body;
  if (kind !== 'AdmissionReview') throw new EnvelopeError(`kind must be "AdmissionReview", got ${show(kind)}`);
  if (!ADMISSION_VERSIONS.includes(apiVersion as AdmissionVersion)) {
    throw new EnvelopeError(`apiVersion must be one of ${ADMISSION_VERSIONS.join(', ')}, got ${show(apiVersion)}`);
  }
  if (!isObject(request))
    throw new EnvelopeError(
      request === undefined ? 'request is missing' : `request must be an object, got ${describeType(request)}`,
    );
  const { uid, operation } = request;
  if (typeof uid !== 'string' || uid === '')
    throw new EnvelopeError(
      uid === undefined ? 'request.uid is missing' : `request.uid must be a non-empty string, got ${show(uid)}`,
    );
  const known: KnownEnvelope = { apiVersion: apiVersion as AdmissionVersion, uid };
  try {
    return requestOf(known, request, operation);
  } catch (err) {
    // The envelope is known: the error is answered in-band, with the uid.
    if (err instanceof EnvelopeError) throw new EnvelopeError(err.message, known);
    throw err;
  }
}

/** The rest of a review whose apiVersion, kind and uid are good. */
// eslint-disable-next-line complexity -- one check per AdmissionReview field, each with its own 400 message
function requestOf(known: KnownEnvelope, request: Record<string, unknown>, operation: unknown): AdmissionReviewRequest {
  const { apiVersion, uid } = known;
  if (!OPERATIONS.includes(operation as Operation))
    throw new EnvelopeError(`request.operation must be one of ${OPERATIONS.join(', ')}, got ${show(operation)}`);
  const op = operation as Operation;

  const object = objectOrNull(request.object, 'request.object');
  const oldObject = objectOrNull(request.oldObject, 'request.oldObject');
  if ((op === 'CREATE' || op === 'UPDATE') && object === null)
    throw new EnvelopeError(`request.object is required for ${op}`);
  if (op === 'UPDATE' && oldObject === null) throw new EnvelopeError('request.oldObject is required for UPDATE');

  const dryRun = request.dryRun ?? false;
  if (typeof dryRun !== 'boolean') throw new EnvelopeError(`request.dryRun must be a boolean, got ${show(dryRun)}`);

  const userInfo = isObject(request.userInfo) ? request.userInfo : undefined;
  const metadata = isObject((object ?? oldObject)?.metadata)
    ? ((object ?? oldObject)!.metadata as Record<string, unknown>)
    : undefined;
  return {
    apiVersion,
    uid,
    operation: op,
    kind: parseGvk(request.kind),
    resource: resourceOf(request.resource),
    subResource: optionalString(request.subResource, 'request.subResource'),
    namespace: optionalString(request.namespace, 'request.namespace') ?? stringOf(metadata?.namespace),
    name: optionalString(request.name, 'request.name') ?? stringOf(metadata?.name) ?? '',
    object,
    oldObject,
    dryRun,
    username: stringOf(userInfo?.username),
  };
}

/**
 * Why this request is not for a TrainJob, or undefined when it is. A request for another kind
 * means the webhook is registered for the wrong resources; it is denied in-band (see
 * `wrongKindStatus`), so the user sees the reason instead of an opaque webhook-call failure.
 * Without request.kind (hand-written reviews), the object's own apiVersion/kind is checked.
 */
export function wrongKind(req: AdmissionReviewRequest): string | undefined {
  if (req.kind) {
    if (req.kind.group === TRAINJOB_GROUP && req.kind.kind === TRAINJOB_KIND) return undefined;
    return `${req.kind.group || 'core'}/${req.kind.version}, Kind=${req.kind.kind}`;
  }
  for (const obj of [req.object, req.oldObject]) {
    if (!obj || (obj.apiVersion === undefined && obj.kind === undefined)) continue;
    const group =
      typeof obj.apiVersion === 'string' && obj.apiVersion.includes('/') ? obj.apiVersion.split('/')[0] : '';
    if (group !== TRAINJOB_GROUP || obj.kind !== TRAINJOB_KIND)
      return `${show(obj.apiVersion)}, Kind=${show(obj.kind)}`;
  }
  return undefined;
}

/** The parts of a request the decision code sees. */
export function admissionInput(req: AdmissionReviewRequest): AdmissionInput {
  return {
    uid: req.uid,
    operation: req.operation,
    namespace: req.namespace,
    name: req.name || undefined,
    object: req.object ?? undefined,
    oldObject: req.oldObject ?? undefined,
    dryRun: req.dryRun,
  };
}

export interface AdmissionResponse {
  uid: string;
  allowed: boolean;
  status?: Status;
  warnings?: string[];
  patchType?: 'JSONPatch';
  patch?: string;
}

export interface AdmissionReviewAnswer {
  apiVersion: AdmissionVersion;
  kind: 'AdmissionReview';
  response: AdmissionResponse;
}

export interface AnswerParts {
  allowed: boolean;
  status?: Status;
  warnings?: readonly string[];
  /** JSONPatch operations; an empty list sends no patch. */
  patch?: readonly unknown[];
}

/** The answer, in the request's own apiVersion (the API server rejects any other) with its uid. */
export function answer(
  req: Pick<AdmissionReviewRequest, 'apiVersion' | 'uid'>,
  parts: AnswerParts,
): AdmissionReviewAnswer {
  const response: AdmissionResponse = { uid: req.uid, allowed: parts.allowed };
  if (parts.status) response.status = parts.status;
  if (parts.warnings && parts.warnings.length > 0) response.warnings = [...parts.warnings];
  if (parts.patch && parts.patch.length > 0) {
    response.patchType = 'JSONPatch';
    response.patch = Buffer.from(JSON.stringify(parts.patch)).toString('base64');
  }
  return { apiVersion: req.apiVersion, kind: 'AdmissionReview', response };
}

function parseGvk(raw: unknown): GroupVersionKind | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (!isObject(raw))
    throw new EnvelopeError(`request.kind must be an object {group, version, kind}, got ${describeType(raw)}`);
  const { group = '', version = '', kind } = raw;
  if (typeof group !== 'string' || typeof version !== 'string' || typeof kind !== 'string' || kind === '') {
    throw new EnvelopeError('request.kind must have string fields group, version and a non-empty kind');
  }
  return { group, version, kind };
}

/** request.resource's group and resource, when it has them (read only to route a subresource's request). */
function resourceOf(raw: unknown): { group: string; resource: string } | undefined {
  if (!isObject(raw) || typeof raw.resource !== 'string') return undefined;
  return { group: typeof raw.group === 'string' ? raw.group : '', resource: raw.resource };
}

function objectOrNull(raw: unknown, what: string): Record<string, unknown> | null {
  if (raw === undefined || raw === null) return null;
  if (!isObject(raw)) throw new EnvelopeError(`${what} must be an object or null, got ${describeType(raw)}`);
  return raw;
}

function optionalString(raw: unknown, what: string): string | undefined {
  if (raw === undefined || raw === null || raw === '') return undefined;
  if (typeof raw !== 'string') throw new EnvelopeError(`${what} must be a string, got ${describeType(raw)}`);
  return raw;
}

function stringOf(raw: unknown): string | undefined {
  return typeof raw === 'string' && raw !== '' ? raw : undefined;
}

function describeType(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return typeof v === 'object' ? 'an object' : `a ${typeof v}`;
}

const SHOWN_CHARS = 80;

/**
 * A bad value in a message: scalars as JSON (strings cut to 80 characters), containers only by
 * type. Serialising a hostile container would cost its whole size, and one nested 10,000 deep
 * overflows the stack.
 */
function show(v: unknown): string {
  if (v === undefined) return 'nothing';
  if (typeof v === 'string') {
    return v.length > SHOWN_CHARS ? `${JSON.stringify(v.slice(0, SHOWN_CHARS - 3))}...` : JSON.stringify(v);
  }
  if (typeof v === 'object' && v !== null) return describeType(v);
  return String(v);
}
