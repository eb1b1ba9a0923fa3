// The log levels every command accepts (pino's, plus silent). No import: the flag parsers read it
// without loading the logger.
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
