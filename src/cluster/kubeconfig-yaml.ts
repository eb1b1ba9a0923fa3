// A kubeconfig file's text parsed as client-go decodes it: clientcmd's Load
// (k8s.io/client-go/tools/clientcmd/loader.go) decodes with apimachinery's YAML serializer
// (pkg/runtime/serializer/json/json.go Decode), whose sigs.k8s.io/yaml YAMLToJSON reads it with
// go.yaml.in/yaml/v2: YAML 1.1, so `<<: *anchor` merge keys are applied (the yaml package implies
// `merge: true` for version 1.1) and yes/no/on/off are booleans. Both readers use it: the one
// explicit file (kube-access.ts) and kubectl's merged files (merged-kubeconfig.ts).
//
// Where go-yaml v2 and the yaml package's 1.1 schema differ, go-yaml's answer is kept:
// - timestamps (`2024-01-01`) and base-60 numbers (`12:34:56`) stay the text written: decoding
//   into interface{}, go-yaml v2 keeps a timestamp's text (decode.go, "backward compatibility")
//   and has no base-60 numbers; the 1.1 schema would make them a Date and a number (an exec
//   plugin's argument `12:34:56` became 45296);
// - a key given twice keeps its last value (go-yaml v2 overwrites), not an error;
// - no warnings printed: the yaml package's warning for a local tag quotes the line, a token with
//   it, on stderr (the pod's log for `serve`).
// - floats need a digit (`.` stays text);
// - only the first document counts (go-yaml v2's Unmarshal), so a trailing `---` is no error.
// Left as they are (rare, and each refused or read alike by the consumers): merge keys applied in
// document order by go-yaml (an explicit key before `<<` is overwritten there, kept here).
import type { ScalarTag, Tags } from 'yaml';

/** The timestamp tag resolved to its text, as go-yaml v2 decodes it into interface{}. */
const TIMESTAMP_AS_TEXT: ScalarTag = {
  tag: 'tag:yaml.org,2002:timestamp',
  identify: () => false, // never chosen for a plain scalar: only an explicit !!timestamp
  resolve: (text: string) => text,
};

const FLOAT = 'tag:yaml.org,2002:float';
/**
 * go-yaml v2's floats need a digit (resolve.go yamlStyleFloat, then strconv.ParseFloat): `.`, `-.`
 * and `.e5` stay text (the 1.1 schema: NaN, which JSON makes null).
 */
const GO_FLOAT = /^[-+]?(?:\.[0-9][0-9_]*|[0-9][0-9_]*\.[0-9_]*)$/;
const GO_FLOAT_EXP = /^[-+]?(?:\.[0-9][0-9_]*|[0-9][0-9_]*(?:\.[0-9_]*)?)[eE][-+]?[0-9]+$/;

/** The 1.1 schema's tags as go-yaml v2 applies them to untagged scalars. */
function goYamlV2Tags(tags: Tags): Tags {
  return [
    ...tags
      .filter((t) => (t as ScalarTag).tag !== 'tag:yaml.org,2002:timestamp' && (t as ScalarTag).format !== 'TIME')
      .map((t) => {
        const tag = t as ScalarTag;
        if (tag.tag !== FLOAT || !tag.test || tag.test.test('.inf')) return t;
        return { ...tag, test: tag.format === 'EXP' ? GO_FLOAT_EXP : GO_FLOAT };
      }),
    TIMESTAMP_AS_TEXT,
  ];
}

/** The parsed document (JSON is YAML too); maxAliasCount refuses an alias bomb. */
export async function parseKubeconfigYaml(text: string): Promise<unknown> {
  // yaml costs ~20 MiB at import: only here, as for every YAML input.
  const { parseAllDocuments } = await import('yaml');
  // go-yaml v2's Unmarshal decodes the first document and ignores the rest (a trailing `---` too).
  const [first] = parseAllDocuments(text, {
    version: '1.1',
    customTags: goYamlV2Tags,
    uniqueKeys: false,
    logLevel: 'error',
  });
  if (!first) return null;
  if (first.errors.length > 0) throw first.errors[0];
  return first.toJS({ maxAliasCount: 100 });
}
