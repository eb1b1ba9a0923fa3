// `trainjob-webhook review --old FILE --new FILE [--crd FILE]`: decides one change offline and
// prints the answer the validating webhook would give. Exit 0 allowed, 1 denied, 2 bad input.
import { createValidator } from '../rules/validator.ts';
import { answer } from '../webhook/envelope.ts';
import { denialStatus, transientStatus } from '../webhook/status.ts';
import { scaleCheckResult } from '../scale/reads/scale-check.ts';
import { admitScale, type Read } from '../scale/scale-admission.ts';
import type { Mode } from '../api/names.ts';
import type { JobSet, RuntimeSpec, TrainJob } from '../api/objects.ts';
import type { ScaleCheck } from '../rules/contract.ts';
import { isObject } from '../json/object.ts';
import { InputError, readObjectFile } from '../io/read-object.ts';
import { stringifyJsonLossless } from '../json/lossless.ts';
import { loadEmbeddedPolicy, loadPolicyFromFile } from '../rules/crd-policy.ts';
import { buildPolicy } from '../rules/policy.ts';
import type { CommandIo } from './io.ts';
import { parseFlags } from '../process/flags.ts';

/** Every flag of `review`, each one in REVIEW_USAGE (a test keeps them equal). */
export const REVIEW_FLAGS = {
  old: { type: 'string' },
  new: { type: 'string' },
  crd: { type: 'string' },
  'table-only': { type: 'boolean' },
  runtime: { type: 'string' },
  jobset: { type: 'string' },
  mode: { type: 'string' },
} as const;

export const REVIEW_USAGE = `Usage: trainjob-webhook review [--old FILE] --new FILE [--crd FILE | --table-only]

  --new FILE     the TrainJob as submitted (YAML or JSON)
  --old FILE     the stored TrainJob; given: an UPDATE, omitted: a CREATE
  --crd FILE     the TrainJob CRD whose schema and rules are checked too
                 (default: the embedded Trainer v2.3.0 CRD with this project's CRD patch)
  --table-only   check the rule table alone: no CRD schema, defaults or CRD rules
  --runtime FILE the (Cluster)TrainingRuntime the TrainJob names: a numNodes change the rules
                 allow is then judged as the webhook judges it (can it be carried out?)
  --jobset FILE  its JobSet as it is (with --runtime; omitted: it has none yet)
  --mode MODE    the reconciler's mode to judge for: companion (default) or standalone

Whether a reconciler leads is never checked offline. Prints the AdmissionReview answer the webhook would give. Exit code 0 allowed, 1 denied, 2 bad input.`;

/** The flags as parsed (REVIEW_FLAGS). */
interface ReviewValues {
  old?: string;
  new?: string;
  crd?: string;
  'table-only'?: boolean;
  runtime?: string;
  jobset?: string;
  mode?: string;
}

// eslint-disable-next-line complexity -- the command top to bottom: flags, policy, files, review, exit code
export async function reviewCommand(args: string[], io: CommandIo): Promise<number> {
  let values: ReviewValues;
  try {
    values = parseFlags(args, REVIEW_FLAGS);
  } catch (err) {
    io.err(`review: ${(err as Error).message}\n\n${REVIEW_USAGE}`);
    return 2;
  }
  const wrong = wrongFlags(values);
  if (wrong) {
    io.err(`review: ${wrong}\n\n${REVIEW_USAGE}`);
    return 2;
  }
  try {
    const policy = values.crd
      ? await loadPolicyFromFile(values.crd)
      : values['table-only']
        ? buildPolicy()
        : await loadEmbeddedPolicy();
    for (const u of policy.crd?.uncompilable ?? []) {
      io.err(
        `review: warning: ${u.error}; ${u.part === 'rule' ? 'the rule is skipped here (the API server would still enforce it)' : 'the rule runs with its static message'}`,
      );
    }
    const object = await readObjectFile(values.new ?? '');
    const oldObject = values.old ? await readObjectFile(values.old) : undefined;
    const meta = (object.metadata ?? {}) as { name?: unknown; namespace?: unknown };
    const name = typeof meta.name === 'string' ? meta.name : '';
    const namespace = typeof meta.namespace === 'string' ? meta.namespace : undefined;
    const scaleCheck = values.runtime
      ? await judgeFromFiles(values.runtime, values.jobset, values.mode === 'standalone' ? 'standalone' : 'companion')
      : undefined;
    const decision = await createValidator({ policy, scaleCheck }).validate({
      uid: 'offline-review',
      operation: oldObject ? 'UPDATE' : 'CREATE',
      namespace,
      name,
      object,
      oldObject,
      dryRun: true,
    });
    const allowed = decision.causes.length === 0;
    const review = answer(
      { apiVersion: 'admission.k8s.io/v1', uid: 'offline-review' },
      {
        allowed,
        warnings: decision.warnings,
        status: allowed
          ? undefined
          : decision.transient
            ? transientStatus(name, decision.causes)
            : denialStatus(name, decision.causes),
      },
    );
    io.out(stringifyJsonLossless(review, 2));
    return allowed ? 0 : 1;
  } catch (err) {
    if (err instanceof InputError || (err as Error).name === 'CrdLoadError') {
      io.err(`review: ${(err as Error).message}`);
      return 2;
    }
    throw err;
  }
}

/** What is wrong with the flags together, if anything. */
function wrongFlags(values: ReviewValues): string | undefined {
  if (!values.new) return '--new is required';
  if (values.crd !== undefined && values['table-only']) return '--crd and --table-only contradict each other';
  if (values.jobset !== undefined && values.runtime === undefined) return '--jobset needs --runtime';
  if (values.mode !== undefined && values.mode !== 'companion' && values.mode !== 'standalone')
    return `--mode must be companion or standalone, got "${values.mode}"`;
  return undefined;
}

const RUNTIME_KINDS = new Set(['TrainingRuntime', 'ClusterTrainingRuntime']);
const OFFLINE_NOTE =
  'spec.trainer.numNodes: judged from the files given; whether a reconciler leads to carry it out was not checked';

/** `--runtime` (and `--jobset`): the webhook's judgment of a numNodes change, from files instead of the cluster. */
async function judgeFromFiles(runtimeFile: string, jobSetFile: string | undefined, mode: Mode): Promise<ScaleCheck> {
  const runtime = await readObjectFile(runtimeFile);
  const kind = runtime.kind;
  const meta = isObject(runtime.metadata) ? runtime.metadata : {};
  if (typeof kind !== 'string' || !RUNTIME_KINDS.has(kind) || !isObject(runtime.spec))
    throw new InputError(`${runtimeFile}: not a TrainingRuntime or ClusterTrainingRuntime with a spec`);
  const jobSet = jobSetFile ? await readObjectFile(jobSetFile) : undefined;
  if (jobSet && (jobSet.kind !== 'JobSet' || !isObject(jobSet.metadata)))
    throw new InputError(`${jobSetFile}: not a JobSet with metadata`);
  const jobSetRead: Read<JobSet> = jobSet ? { kind: 'found', value: jobSet as unknown as JobSet } : { kind: 'absent' };
  return async ({ name, trainer, object }) => {
    const trainJob = (isObject(object) ? object : { metadata: {} }) as unknown as TrainJob;
    const verdict = admitScale({
      trainer,
      trainJob: { ...trainJob, metadata: { ...trainJob.metadata, name } },
      jobSet: jobSetRead,
      runtime: {
        kind: 'found',
        value: { kind, name: typeof meta.name === 'string' ? meta.name : '?', spec: runtime.spec as RuntimeSpec },
      },
      lease: 'unchecked',
      mode,
      nowMs: Date.now(),
    });
    return scaleCheckResult(verdict, [OFFLINE_NOTE]);
  };
}
