// An API server's (or a webhook's) refusal shown as kubectl shows it (k8s.io/kubectl
// pkg/cmd/util/helpers.go, checkErr and StandardErrorMessage): an Invalid (422) Status as
// `The Kind "name" is invalid: field: message` (one cause) or a list of causes; any other Status
// with a reason as `Error from server (Reason): message`; without one, `Error from server: message`.
// Then, where the refusal has a known cause, what to do. Pure.
import { isObject } from '../json/object.ts';
import { MAX_MESSAGE, printable } from './printable.ts';

export interface ApiStatus {
  code: number;
  reason?: string;
  message: string;
  details?: { kind?: string; name?: string; causes?: { field?: string; message?: string }[] };
}

/** The Status of an answer's body (or a bare one from the code when the body is not a Status). */
export function statusOf(code: number, body: string): ApiStatus {
  try {
    const v: unknown = JSON.parse(body);
    if (isObject(v) && v.kind === 'Status') {
      const details = isObject(v.details) ? v.details : undefined;
      return {
        code,
        ...(typeof v.reason === 'string' && v.reason ? { reason: v.reason } : {}),
        message: typeof v.message === 'string' ? v.message : '',
        ...(details ? { details: details as ApiStatus['details'] } : {}),
      };
    }
  } catch {
    // not JSON: the text itself is the message
  }
  return { code, message: body.trim().slice(0, 500) || `HTTP ${code}` };
}

export function kubectlMessage(s: ApiStatus): string {
  if (s.reason === 'Invalid' && s.details) {
    const what =
      s.details.kind || s.details.name
        ? `The ${s.details.kind ?? ''} "${s.details.name ?? ''}" is invalid`
        : 'The request is invalid';
    const causes = (s.details.causes ?? []).map((c) =>
      c.field ? `${c.field}: ${c.message ?? ''}` : (c.message ?? ''),
    );
    if (causes.length === 1) return `${what}: ${causes[0]}`;
    if (causes.length > 1) return `${what}: \n${causes.map((c) => `* ${c}`).join('\n')}`;
    return what;
  }
  if (s.reason === 'Unauthorized') return `error: You must be logged in to the server (${s.message})`;
  return s.reason ? `Error from server (${s.reason}): ${s.message}` : `Error from server: ${s.message}`;
}

/** The blanket rule of upstream's CRD: `self == oldSelf` on spec.trainer, "field is immutable". */
export function isBlanketRule(s: ApiStatus): boolean {
  return (
    s.code === 422 &&
    (s.details?.causes ?? []).some((c) => c.field === 'spec.trainer' && /field is immutable/.test(c.message ?? ''))
  );
}

/** What to do after the refusal, when its cause is known: '' otherwise (the message says it). */
export function adviceFor(s: ApiStatus): string {
  if (isBlanketRule(s))
    return (
      "The cluster's TrainJob CRD still has upstream's rule that makes all of spec.trainer immutable: trainjob-webhook's CRD patch is not applied. " +
      'Ask your platform team to apply it (kubectl patch crd trainjobs.trainer.kubeflow.org --type=json --patch-file manifests/crd-patch/trainjob-crd-patch.yaml; ' +
      "Trainer's main line has its own file under manifests/crd-patch/: see docs/install.md of trainjob-webhook)."
    );
  if (s.code === 503)
    return 'This refusal is for now (no reconciler leads, or a read failed): nothing was changed. Run the same command again in a few seconds; if it lasts more than a minute, tell your platform team.';
  if (s.code === 403 && s.details?.kind && !/denied the request/.test(s.message))
    return 'Your role lacks this right: ask your namespace admin for it (kubectl auth can-i lists what you may do).';
  if (s.code === 409) return 'Someone else changed the TrainJob meanwhile: run the same command again.';
  return '';
}

/** What the user reads of a refusal (stderr): kubectl's message, made printable, then what to do, if known. */
export function refusalLines(s: ApiStatus): string[] {
  const advice = adviceFor(s);
  return [printable(kubectlMessage(s), MAX_MESSAGE), ...(advice ? [advice] : [])];
}
