// Reads one Kubernetes object from a file the user names (YAML or JSON), with a clear error for
// anything that is not exactly one object: missing file, too large, bad syntax, several documents.
// JSON integers beyond 2^53 stay exact (BigInt); so do YAML ones.
import { readFile, stat } from 'node:fs/promises';
import { parseAllDocuments, type SchemaOptions } from 'yaml';
import { parseJsonLossless } from '../json/lossless.ts';

/** Larger than any object the API server stores (etcd's 1.5 MiB default, 3 MiB at most). */
export const MAX_INPUT_BYTES = 16 * 1024 * 1024;

export class InputError extends Error {}

function toSafeNumbers(value: unknown): unknown {
  // `!!binary`: go-yaml v2 decodes it into a string of its bytes (JSON then writes it as UTF-8).
  if (value instanceof Uint8Array) return Buffer.from(value).toString('utf8');
  if (typeof value === 'bigint') return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : value;
  if (Array.isArray(value)) return value.map(toSafeNumbers);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) Object.defineProperty(out, k, { value: toSafeNumbers(v), enumerable: true, writable: true, configurable: true });
    return out;
  }
  return value;
}

/**
 * kubectl's YAML (sigs.k8s.io/yaml on go-yaml v2) is YAML 1.1 with two exceptions: a value that
 * looks like a timestamp stays the string written (`2024-01-01`), and base-60 numbers (`1:30`) are
 * not numbers (go-yaml v2 resolve.go: "purposefully unsupported"). The 1.1 schema of `yaml` has both.
 */
function asKubectlReads(tags: Tags): Tags {
  return tags.filter((t) => typeof t === 'string' || (t.tag !== 'tag:yaml.org,2002:timestamp' && !('format' in t && t.format === 'TIME')));
}
type Tags = Extract<NonNullable<SchemaOptions['customTags']>, unknown[]>;

/** Parses text as JSON (when it looks like JSON) or YAML; exactly one document. */
export function parseObjectText(text: string, name: string): unknown {
  const trimmed = text.trimStart();
  if (trimmed.startsWith('{') || trimmed.startsWith('[')) {
    try {
      return parseJsonLossless(text);
    } catch (err) {
      throw new InputError(`${name}: not valid JSON: ${(err as Error).message}`);
    }
  }
  // YAML 1.1, as kubectl reads it: `yes`, `on`, `y` are booleans there.
  const docs = parseAllDocuments(text, { version: '1.1', intAsBigInt: true, uniqueKeys: true, customTags: asKubectlReads });
  if (!Array.isArray(docs)) throw new InputError(`${name}: empty document`);
  const real = docs.filter((d) => d.contents !== null);
  if (real.length !== 1) throw new InputError(`${name}: expected exactly one YAML document, found ${real.length}`);
  const [doc] = real;
  if (doc.errors.length) throw new InputError(`${name}: not valid YAML: ${doc.errors[0].message.split('\n')[0]}`);
  try {
    return toSafeNumbers(doc.toJS({ maxAliasCount: 100 }));
  } catch (err) {
    throw new InputError(`${name}: ${(err as Error).message.split('\n')[0]}`);
  }
}

export function requireObject(value: unknown, name: string): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new InputError(`${name}: expected a Kubernetes object (a mapping), got ${Array.isArray(value) ? 'a list' : value === null ? 'null' : typeof value}`);
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
  if (size > MAX_INPUT_BYTES) throw new InputError(`${path}: ${size} bytes is more than the ${MAX_INPUT_BYTES} bytes accepted`);
  const text = await readFile(path, 'utf8');
  return requireObject(parseObjectText(text, path), path);
}
