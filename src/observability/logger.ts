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

export function createLogger(level: LogLevel, destination?: DestinationStream): Logger {
  const options = {
    level,
    base: { component: 'trainjob-webhook' },
    timestamp: pino.stdTimeFunctions.isoTime,
    // Level names ("info") rather than numbers: what log tooling in a cluster expects.
    formatters: { level: (label: string) => ({ level: label }) },
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
  };
  return destination ? pino(options, destination) : pino(options);
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

export function logAdmission(logger: Logger, entry: AdmissionLogEntry): void {
  if (entry.decision === 'error') logger.error(entry, 'admission');
  else logger.info(entry, 'admission');
}
