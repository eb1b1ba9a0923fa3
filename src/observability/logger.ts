// One pino logger for the process. Admission lines carry who/what/decision, never objects:
// TrainJob env values can carry secrets, so anything object-like is redacted as a backstop.
import { pino } from 'pino';
import type { DestinationStream, Logger } from 'pino';
import type { LogLevel } from './log-levels.ts';

export type { Logger } from 'pino';

const REDACTED_PATHS = [
  'object',
  'oldObject',
  'body',
  'patch',
  'env',
  '*.object',
  '*.oldObject',
  '*.body',
  '*.patch',
  '*.env',
  'request.object',
  'request.oldObject',
];

/**
 * What the log may hold unwritten. Pino's default destination buffers without a bound while
 * stdout is slower than the logging: a flood of reviews with a 1 MiB uid each exhausted the
 * heap that way. Past the bound, lines are dropped (sonic-boom's maxLength), not held.
 */
export const LOG_BUFFER_BYTES = 8 * 1024 * 1024;

export function createLogger(level: LogLevel, destination?: DestinationStream): Logger {
  const options = {
    level,
    base: { component: 'trainjob-webhook' },
    timestamp: pino.stdTimeFunctions.isoTime,
    // Level names ("info") rather than numbers: what log tooling in a cluster expects.
    formatters: { level: (label: string) => ({ level: label }) },
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
  };
  return pino(options, destination ?? pino.destination({ fd: 1, sync: false, maxLength: LOG_BUFFER_BYTES }));
}

/** The one line logged per admission request. */
export interface AdmissionLogEntry {
  /** AdmissionRequest uid: the id the API server logs for the same call. */
  reqId: string;
  webhook: 'validate' | 'mutate';
  operation: string;
  namespace?: string;
  name?: string;
  user?: string;
  dryRun: boolean;
  decision: 'allowed' | 'denied' | 'error';
  /** Status code of a denial (422, 403, 500, 400). */
  code?: number;
  /** Violated rule ids (FieldError.origin, else the field path). */
  rules?: string[];
  warnings?: number;
  /** JSONPatch operations returned by the mutating webhook. */
  patchOps?: number;
  /** Message of a thrown error (never a stack). */
  error?: string;
  latencyMs: number;
}

/** The longest string an admission line carries: the request's strings are anyone's to choose. */
export const LOGGED_STRING_CHARS = 256;
/** The most rule ids an admission line lists. */
export const LOGGED_RULES = 32;

export function logAdmission(logger: Logger, entry: AdmissionLogEntry): void {
  const line: AdmissionLogEntry = {
    ...entry,
    reqId: clip(entry.reqId),
    namespace: clipOptional(entry.namespace),
    name: clipOptional(entry.name),
    user: clipOptional(entry.user),
    rules: entry.rules && entry.rules.length > 0 ? clipRules(entry.rules) : entry.rules,
    error: clipOptional(entry.error),
  };
  if (entry.decision === 'error') logger.error(line, 'admission');
  else logger.info(line, 'admission');
}

/** A string cut to LOGGED_STRING_CHARS, saying how long it was. */
export function clip(s: string): string {
  return s.length <= LOGGED_STRING_CHARS ? s : `${s.slice(0, LOGGED_STRING_CHARS)}...(${s.length} chars)`;
}

function clipOptional(s: string | undefined): string | undefined {
  return s === undefined ? undefined : clip(s);
}

function clipRules(rules: string[]): string[] {
  const shown = rules.slice(0, LOGGED_RULES).map(clip);
  if (rules.length > LOGGED_RULES) shown.push(`...(${rules.length} rules)`);
  return shown;
}
