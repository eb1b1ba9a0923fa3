// metav1.Status for a denial, built the way the API server builds its own errors
// (k8s.io/apimachinery/pkg/api/errors: NewInvalid, NewForbidden, NewInternalError), so kubectl
// and clients read a webhook denial exactly like a schema or CEL rejection.
import { errorBody, errorString } from '../field/errors.ts';
import type { FieldError } from '../field/errors.ts';
import { MAX_FIELD_ERRORS } from '../field/error-cap.ts';
import { goQuote } from '../field/gofmt.ts';
import { TRAINJOB_GROUP, TRAINJOB_KIND } from '../api/names.ts';

export interface StatusCause {
  /** field.ErrorType, e.g. `FieldValueInvalid` (metav1.StatusCause.Type is `reason` in JSON). */
  reason?: string;
  message: string;
  field?: string;
}

export interface Status {
  metadata: Record<string, never>;
  status: 'Failure';
  message: string;
  reason: 'Invalid' | 'Forbidden' | 'InternalError' | 'BadRequest' | 'ServiceUnavailable';
  code: 422 | 403 | 500 | 400 | 503;
  details?: {
    name?: string;
    group?: string;
    kind?: string;
    causes?: StatusCause[];
  };
}

/**
 * Appended (as a cause and to the message) when causes were left out (field/error-cap.ts): the
 * sentinel kube-apiserver appends where it cuts an error list (apiserver's storage/etcd3
 * corrupt_obj_deleter.go, errTooMany), with the count listed.
 */
export const TRUNCATED_CAUSES = `too many errors, the list is truncated: the first ${MAX_FIELD_ERRORS} are listed`;

/** `TrainJob.trainer.kubeflow.org` (schema.GroupKind.String()). */
const GROUP_KIND = `${TRAINJOB_KIND}.${TRAINJOB_GROUP}`;
/** `trainjobs.trainer.kubeflow.org` (schema.GroupResource.String(), what NewForbidden names). */
const GROUP_RESOURCE = `trainjobs.${TRAINJOB_GROUP}`;
const RESOURCE = 'trainjobs';

/**
 * The Status for a denial with these causes:
 * - every cause FieldValueForbidden: 403 Forbidden (NewForbidden);
 * - every cause InternalError (the JobSet read failed, nothing else violated): 500 (NewInternalError);
 * - anything else, including a mix of Forbidden and InternalError: 422 Invalid (NewInvalid).
 * Unlike NewForbidden/NewInternalError, every variant lists each violated rule as a cause.
 */
export function denialStatus(name: string, causes: readonly FieldError[]): Status {
  if (causes.length > 0 && causes.every((c) => c.type === 'FieldValueForbidden')) return forbiddenStatus(name, causes);
  if (causes.length > 0 && causes.every((c) => c.type === 'InternalError')) return internalErrorStatus(causes);
  return invalidStatus(name, causes);
}

/** apierrors.NewInvalid(GroupKind{trainer.kubeflow.org, TrainJob}, name, errs). */
export function invalidStatus(name: string, all: readonly FieldError[]): Status {
  const causes = shown(all);
  const agg = aggregateShown(causes, all);
  return {
    metadata: {},
    status: 'Failure',
    message:
      agg === undefined
        ? `${GROUP_KIND} ${goQuote(name)} is invalid`
        : `${GROUP_KIND} ${goQuote(name)} is invalid: ${agg}`,
    reason: 'Invalid',
    code: 422,
    details: { name, group: TRAINJOB_GROUP, kind: TRAINJOB_KIND, causes: causesOf(causes, all) },
  };
}

/** apierrors.NewForbidden(GroupResource{trainer.kubeflow.org, trainjobs}, name, errs.ToAggregate()). */
export function forbiddenStatus(name: string, all: readonly FieldError[]): Status {
  const causes = shown(all);
  const agg = aggregateShown(causes, all) ?? '';
  const message =
    name === '' ? `${GROUP_RESOURCE} is forbidden: ${agg}` : `${GROUP_RESOURCE} ${goQuote(name)} is forbidden: ${agg}`;
  return {
    metadata: {},
    status: 'Failure',
    message,
    reason: 'Forbidden',
    code: 403,
    // NewForbidden puts the resource (not the kind) in details.kind.
    details: { name, group: TRAINJOB_GROUP, kind: RESOURCE, causes: causesOf(causes, all) },
  };
}

/**
 * A refusal that clears by itself (no reconciler leads, a read failed): like
 * apierrors.NewServiceUnavailable, 503, plus the kind, name and causes NewInvalid gives, so a
 * person and a GitOps tool both see it is to be retried. No details.retryAfterSeconds: the API
 * server would turn it into a Retry-After header, and client-go (kubectl, Argo CD, Flux) would
 * then retry silently up to 10 times before the user sees the reason.
 */
export function transientStatus(name: string, all: readonly FieldError[]): Status {
  const causes = shown(all);
  const agg = aggregateShown(causes, all) ?? '';
  return {
    metadata: {},
    status: 'Failure',
    message: `${GROUP_KIND} ${goQuote(name)} cannot be changed now: ${agg}`,
    reason: 'ServiceUnavailable',
    code: 503,
    details: { name, group: TRAINJOB_GROUP, kind: TRAINJOB_KIND, causes: causesOf(causes, all) },
  };
}

/** apierrors.NewInternalError(errs.ToAggregate()), with one cause per field error. */
export function internalErrorStatus(all: readonly FieldError[]): Status {
  const causes = shown(all);
  return internalError(aggregateShown(causes, all) ?? '', causesOf(causes, all));
}

/** The causes an answer lists: the first MAX_FIELD_ERRORS. */
function shown(all: readonly FieldError[]): readonly FieldError[] {
  return all.length > MAX_FIELD_ERRORS ? all.slice(0, MAX_FIELD_ERRORS) : all;
}

function aggregateShown(causes: readonly FieldError[], all: readonly FieldError[]): string | undefined {
  const messages = causes.map(errorString);
  if (causes.length < all.length) messages.push(TRUNCATED_CAUSES);
  return aggregate(messages);
}

function causesOf(causes: readonly FieldError[], all: readonly FieldError[]): StatusCause[] {
  const out = causes.map(toCause);
  if (causes.length < all.length) out.push({ message: TRUNCATED_CAUSES });
  return out;
}

/** apierrors.NewInternalError(err) for an error thrown while deciding (a bug, not a rule). */
export function thrownErrorStatus(err: unknown): Status {
  const text = err instanceof Error ? err.message || err.name : String(err);
  return internalError(text, [{ message: text }]);
}

/** apierrors.NewBadRequest(reason): a request this webhook cannot decide (wrong kind). */
export function badRequestStatus(message: string): Status {
  return { metadata: {}, status: 'Failure', message, reason: 'BadRequest', code: 400 };
}

function internalError(text: string, causes: StatusCause[]): Status {
  return {
    metadata: {},
    status: 'Failure',
    message: `Internal error occurred: ${text}`,
    reason: 'InternalError',
    code: 500,
    details: { causes },
  };
}

/** metav1.StatusCause from a field error, as NewInvalid builds it (`omitempty` fields left out). */
function toCause(e: FieldError): StatusCause {
  const cause: StatusCause = { reason: e.type, message: errorBody(e) };
  if (e.field) cause.field = e.field;
  return cause;
}

/**
 * field.ErrorList.ToAggregate().Error(): duplicate messages dropped, one message alone, several
 * in brackets joined by ", " (utilerrors.NewAggregate). Undefined for an empty list.
 */
export function aggregate(messages: readonly string[]): string | undefined {
  const unique = [...new Set(messages)];
  if (unique.length === 0) return undefined;
  if (unique.length === 1) return unique[0];
  return `[${unique.join(', ')}]`;
}
