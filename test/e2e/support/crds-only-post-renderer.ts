// A Helm post-renderer that keeps only the CustomResourceDefinitions of what Helm rendered (stdin
// to stdout). Trainer's chart also has a Deployment, webhooks and RBAC; in the test world
// Trainer's manager is a host process (test/harness/upstream.ts), so those must not be applied:
// `helm install/upgrade` still installs and rewrites the CRDs exactly as the chart does (they are
// templates since Trainer v2.3.0, kubeflow/trainer#3655), with Helm's own patch or apply.
// Helm 3 runs it as an executable (`--post-renderer FILE`), Helm 4 as a postrenderer/v1 plugin.
import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';

const docs = parseAllDocuments(readFileSync(0, 'utf8'));
const kept = docs.filter((d) => (d.toJSON() as { kind?: unknown } | null)?.kind === 'CustomResourceDefinition');
process.stdout.write(kept.map((d) => d.toString()).join('---\n'));
