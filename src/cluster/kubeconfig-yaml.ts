// A kubeconfig file's text parsed as client-go decodes it: clientcmd's Load
// (k8s.io/client-go/tools/clientcmd/loader.go) decodes with apimachinery's YAML serializer
// (pkg/runtime/serializer/json/json.go Decode), whose sigs.k8s.io/yaml YAMLToJSON reads it with
// go.yaml.in/yaml/v2: YAML 1.1, so `<<: *anchor` merge keys are applied (the yaml package implies
// `merge: true` for version 1.1) and yes/no/on/off are booleans. Both readers use it: the one
// explicit file (kube-access.ts) and kubectl's merged files (merged-kubeconfig.ts).

/** The parsed document (JSON is YAML too); maxAliasCount refuses an alias bomb. */
export async function parseKubeconfigYaml(text: string): Promise<unknown> {
  // yaml costs ~20 MiB at import: only here, as for every YAML input.
  const { parse } = await import('yaml');
  return parse(text, { version: '1.1', maxAliasCount: 100 });
}
