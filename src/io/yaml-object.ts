// The YAML side of reading a file the user names (read-object.ts): loaded only for YAML input, so
// `serve` on its embedded CRD or a JSON file never loads the `yaml` package (start-up, RSS).
import { parseAllDocuments, type SchemaOptions } from 'yaml';
import { InputError } from './input-error.ts';

function toSafeNumbers(value: unknown): unknown {
  // `!!binary`: go-yaml v2 decodes it into a string of its bytes (JSON then writes it as UTF-8).
  if (value instanceof Uint8Array) return Buffer.from(value).toString('utf8');
  if (typeof value === 'bigint')
    return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : value;
  if (Array.isArray(value)) return value.map(toSafeNumbers);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value))
      Object.defineProperty(out, k, { value: toSafeNumbers(v), enumerable: true, writable: true, configurable: true });
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
  return tags.filter(
    (t) =>
      typeof t === 'string' || (t.tag !== 'tag:yaml.org,2002:timestamp' && !('format' in t && t.format === 'TIME')),
  );
}
type Tags = Extract<NonNullable<SchemaOptions['customTags']>, unknown[]>;

/** Parses YAML text as kubectl does; exactly one document. */
export function parseYamlObject(text: string, name: string): unknown {
  // YAML 1.1, as kubectl reads it: `yes`, `on`, `y` are booleans there.
  const docs = parseAllDocuments(text, {
    version: '1.1',
    intAsBigInt: true,
    uniqueKeys: true,
    customTags: asKubectlReads,
  });
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
