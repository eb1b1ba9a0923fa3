// A Helm post-renderer that keeps only the CustomResourceDefinitions of what Helm rendered (stdin
// to stdout). Trainer's chart also has a Deployment, webhooks and RBAC; in the test world
// Trainer's manager is a host process (test/harness/upstream.ts), so those must not be applied:
// `helm install/upgrade` still installs and rewrites the CRDs exactly as the chart does (they are
// templates since Trainer v2.3.0, kubeflow/trainer#3655), with Helm's own patch or apply.
// Helm 3 runs it as an executable (`--post-renderer FILE`), Helm 4 as a postrenderer/v1 plugin.
// Text, not a YAML parse: Helm's output is 2.4 MB of documents separated by `---` lines, each with
// its top-level `kind:` unindented (a parse and re-serialisation cost seconds per upgrade here).
import { readFileSync } from 'node:fs';

const docs = readFileSync(0, 'utf8').split(/^---[ \t]*$/m);
const kept = docs.filter((d) => /^kind:[ \t]*CustomResourceDefinition[ \t]*$/m.test(d));
process.stdout.write(kept.map((d) => `---${d.startsWith('\n') ? '' : '\n'}${d}`).join(''));
