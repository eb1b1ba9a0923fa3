// Reads one Kubernetes object from a file the user names (YAML or JSON), with a clear error for
// anything that is not exactly one object: missing file, too large, bad syntax, several documents.
// JSON integers beyond 2^53 stay exact (BigInt); so do YAML ones. The `yaml` package loads only
// for YAML input (yaml-object.ts).
import { readFile, stat } from 'node:fs/promises';
import { parseJsonLossless } from '../json/lossless.ts';
import { InputError } from './input-error.ts';

export { InputError };

/** Larger than any object the API server stores (etcd's 1.5 MiB default, 3 MiB at most). */
export const MAX_INPUT_BYTES = 16 * 1024 * 1024;

/** Parses text as JSON (when it looks like JSON) or YAML; exactly one document. */
export async function parseObjectText(text: string, name: string): Promise<unknown> {
  const trimmed = text.trimStart();
  if (trimmed.startsWith('{') || trimmed.startsWith('[')) {
    try {
      return parseJsonLossless(text);
    } catch (err) {
      throw new InputError(`${name}: not valid JSON: ${(err as Error).message}`);
    }
  }
  return (await import('./yaml-object.ts')).parseYamlObject(text, name);
}

export function requireObject(value: unknown, name: string): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new InputError(
      `${name}: expected a Kubernetes object (a mapping), got ${Array.isArray(value) ? 'a list' : value === null ? 'null' : typeof value}`,
    );
  return value as Record<string, unknown>;
}

export async function readObjectFile(path: string): Promise<Record<string, unknown>> {
  let size: number;
  try {
    const info = await stat(path);
    if (!info.isFile()) throw new InputError(`${path}: not a regular file`);
    size = info.size;
  } catch (err) {
    if (err instanceof InputError) throw err;
    throw new InputError(`${path}: cannot read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  if (size > MAX_INPUT_BYTES)
    throw new InputError(`${path}: ${size} bytes is more than the ${MAX_INPUT_BYTES} bytes accepted`);
  const text = await readFile(path, 'utf8');
  return requireObject(await parseObjectText(text, path), path);
}
