// The TrainJob update policy, one row per rule. Every enforcer reads this table: the validating
// webhook evaluates the CEL, `rules --format crd-patch` writes it into the CRD and
// `rules --format vap` into a ValidatingAdmissionPolicy.
//
// In short: inside spec.trainer nothing may change (add, change and remove all count) except
// numNodes, and numNodes only while the TrainJob is suspended before or after the update, never to
// a negative count, and never once the job has finished for good. Outside spec.trainer the rows
// keep upstream Trainer's rules exactly.
import {
  eitherSuspended,
  finishedForGood,
  immutableTrainerField,
  numNodesNotNegative,
  unchangedAtSpec,
  unchangedPath,
  UNNAMED_TRAINER_FIELD,
} from './cel-snippets.ts';
import { TRAINER_LINES, type TrainerLine } from '../api/trainer-line.ts';

export type Reason = 'FieldValueInvalid' | 'FieldValueForbidden';

export interface RuleRow {
  /** Stable name, used in logs, causes and generated manifests. */
  id: string;
  /** The field the rule guards (what a denial blames). */
  field: string;
  /**
   * Where the CEL runs: `self`/`oldSelf` are the values at this path ('' is the object: the only
   * place status is visible).
   */
  scope: string;
  /** When a change is allowed, in words. */
  allowed:
    | 'never'
    | 'while suspended before or after the update'
    | 'to 0 or more (a negative count already stored may stay)'
    | 'until the TrainJob has finished for good (Complete, or Failed with DeadlineExceeded)'
    | 'until the TrainJob has finished for good (Complete or Failed)'
    | 'when absent before (upstream transition rule)';
  /** CEL over self/oldSelf at `scope`; true means the update is fine. */
  rule: string;
  message: string;
  reason: Reason;
  /** The upstream CRD rule this row replaces or mirrors, which the webhook then does not evaluate twice. */
  supersedes?: { path: string; rule: string };
  /** Rows evaluated once per spec.trainer field the table does not name (bound to `key`). */
  perUnnamedTrainerField?: true;
}

const IMMUTABLE = 'field is immutable';
const UPSTREAM_TRAINER_RULE = { path: 'spec.trainer', rule: 'self == oldSelf' };

/** The spec.trainer fields the table names; every other field there is immutable by the last trainer row. */
export const NAMED_TRAINER_FIELDS = [
  'image',
  'command',
  'args',
  'env',
  'resourcesPerNode',
  'numProcPerNode',
  'numNodes',
] as const;

const immutableInTrainer = (name: (typeof NAMED_TRAINER_FIELDS)[number]): RuleRow => ({
  id: `trainer-${name}-immutable`,
  field: `spec.trainer.${name}`,
  scope: 'spec',
  allowed: 'never',
  rule: immutableTrainerField(name),
  message: IMMUTABLE,
  reason: 'FieldValueInvalid',
  supersedes: UPSTREAM_TRAINER_RULE,
});

const upstreamImmutable = (path: string): RuleRow => ({
  id: `${path
    .replace(/^spec\./, '')
    .replace(/\[\*\]/g, '')
    .replace(/\./g, '-')}-immutable`,
  field: path,
  scope: path,
  allowed: 'when absent before (upstream transition rule)',
  rule: 'self == oldSelf',
  message: IMMUTABLE,
  reason: 'FieldValueInvalid',
  supersedes: { path, rule: 'self == oldSelf' },
});

/**
 * The finished-job row for a Trainer line: on v2.2.1 and v2.3.0 only a Failed with reason
 * DeadlineExceeded is final, on main and an unknown line every Failed is (src/api/trainer-line.ts).
 */
function notAfterFinish(line: Pick<TrainerLine, 'failedIsTerminal'>): RuleRow {
  const finished = line.failedIsTerminal
    ? 'condition Complete or Failed'
    : 'condition Complete, or Failed with reason DeadlineExceeded';
  return {
    // First of the numNodes rows: a VAP reports only the first failure, and suspending would not help here.
    id: 'trainer-numNodes-not-after-finish',
    field: 'spec.trainer.numNodes',
    scope: '',
    allowed: line.failedIsTerminal
      ? 'until the TrainJob has finished for good (Complete or Failed)'
      : 'until the TrainJob has finished for good (Complete, or Failed with DeadlineExceeded)',
    // oldSelf.status: the stored status (a spec update cannot change status, a subresource).
    rule: `${unchangedPath('spec.trainer.numNodes')} || !${finishedForGood('oldSelf', line.failedIsTerminal)}`,
    message: `numNodes may not change once the TrainJob has finished (${finished}): Trainer never reconciles it again, so no JobSet would run with the new count; create a new TrainJob to train again`,
    reason: 'FieldValueForbidden',
  };
}

/** The table for one Trainer line (only the finished-job row differs between lines). */
export function rulesFor(line: Pick<TrainerLine, 'failedIsTerminal'>): readonly RuleRow[] {
  return [
    immutableInTrainer('image'),
    immutableInTrainer('command'),
    immutableInTrainer('args'),
    immutableInTrainer('env'),
    immutableInTrainer('resourcesPerNode'),
    immutableInTrainer('numProcPerNode'),
    notAfterFinish(line),
    {
      id: 'trainer-numNodes-while-suspended',
      field: 'spec.trainer.numNodes',
      scope: 'spec',
      allowed: 'while suspended before or after the update',
      rule: `${immutableTrainerField('numNodes')} || ${eitherSuspended()}`,
      message:
        'numNodes may only change while the TrainJob is suspended: set spec.suspend to true first (or in the same update), then change numNodes',
      reason: 'FieldValueForbidden',
      supersedes: UPSTREAM_TRAINER_RULE,
    },
    {
      id: 'trainer-numNodes-not-negative',
      field: 'spec.trainer.numNodes',
      scope: 'spec',
      allowed: 'to 0 or more (a negative count already stored may stay)',
      rule: `${immutableTrainerField('numNodes')} || ${numNodesNotNegative()}`,
      message:
        "numNodes may only change to 0 or more (0 makes the job complete at once), or be removed to use the runtime's default",
      reason: 'FieldValueInvalid',
    },
    {
      id: 'trainer-unnamed-field-immutable',
      field: 'spec.trainer.<any other field>',
      scope: 'spec',
      allowed: 'never',
      rule: immutableTrainerField(UNNAMED_TRAINER_FIELD),
      message: IMMUTABLE,
      reason: 'FieldValueInvalid',
      supersedes: UPSTREAM_TRAINER_RULE,
      perUnnamedTrainerField: true,
    },
    upstreamImmutable('spec.runtimeRef'),
    upstreamImmutable('spec.initializer'),
    upstreamImmutable('spec.managedBy'),
    upstreamImmutable('spec.activeDeadlineSeconds'),
    {
      id: 'runtimePatches-while-suspended',
      field: 'spec.runtimePatches',
      scope: 'spec',
      allowed: 'while suspended before or after the update',
      rule: `${unchangedAtSpec('runtimePatches')} || ${eitherSuspended()}`,
      message: 'runtimePatches may only change while the TrainJob is suspended',
      reason: 'FieldValueForbidden',
    },
    upstreamImmutable('spec.runtimePatches[*].manager'),
  ];
}

/** Trainer v2.3.0's table: the default CRD's (embedded), the shipped patch's and the VAP's. */
export const RULES: readonly RuleRow[] = rulesFor(TRAINER_LINES['v2.3.0']);
