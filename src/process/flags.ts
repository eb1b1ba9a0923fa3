// Flag value parsers shared by the commands: each names the flag and the bad value in its error.
import { parseArgs, type ParseArgsOptionsConfig } from 'node:util';

/** A bad flag or value: the message says which and why (the CLI prints it and exits 2). */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

export function portFlag(flag: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) > 65535)
    throw new ConfigError(`${flag} must be a port number (0-65535), got "${raw}"`);
  return Number(raw);
}

export function nonEmptyFlag(flag: string, raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  if (raw.trim() === '') throw new ConfigError(`${flag} needs a value`);
  return raw;
}

export function oneOfFlag<T extends string>(
  flag: string,
  raw: string | undefined,
  allowed: readonly T[],
  fallback: T,
): T {
  if (raw === undefined) return fallback;
  if ((allowed as readonly string[]).includes(raw)) return raw as T;
  throw new ConfigError(`${flag} must be one of ${allowed.join(', ')}, got "${raw}"`);
}

/**
 * `args` parsed strictly (no positionals, only the flags in `options`): the flag values, or a
 * ConfigError with node:util's message (an unknown flag, a missing value).
 */
export function parseFlags<T extends ParseArgsOptionsConfig>(args: readonly string[], options: T) {
  try {
    return parseArgs({ args: [...args], strict: true, allowPositionals: false, options }).values;
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
}
