// The decision alone, in-process (bench/PROFILE.md): per stage, microseconds per request for an
// AdmissionReview body, under each policy. Run pinned, with the e2e lock:
//   flock /tmp/tjw-e2e.lock taskset -c 0 node [--cpu-prof] bench/profile-decide.ts [BODY] [table|embedded|upstream ...]
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseJsonLossless } from '../src/json/lossless.ts';
import { admissionInput, parseAdmissionReview } from '../src/webhook/envelope.ts';
import { decideCreate, decideUpdate } from '../src/rules/decide.ts';
import { buildPolicy, type Policy } from '../src/rules/policy.ts';
import { loadEmbeddedPolicy, loadPolicyFromFile } from '../src/rules/crd-policy.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const bodyFile = args[0]?.endsWith('.json')
  ? args.shift()!
  : path.join(root, 'examples/allowed-numnodes-suspended.json');
const kinds = args.length > 0 ? args : ['table', 'embedded', 'upstream'];
const text = readFileSync(bodyFile, 'utf8');
const ITER_MS = Number(process.env.ITER_MS ?? 2000);

async function policyFor(k: string): Promise<Policy> {
  if (k === 'table') return buildPolicy();
  if (k === 'embedded') return loadEmbeddedPolicy();
  return loadPolicyFromFile(path.join(root, 'upstream/crds/trainer.kubeflow.org_trainjobs.yaml'));
}

function time(label: string, fn: () => unknown): void {
  for (let i = 0; i < 200; i++) fn();
  // CPU time, not wall time: the machine is shared, and a descheduled process still waits.
  let n = 0;
  const cpu = () => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  };
  const start = cpu();
  let now = start;
  while (now - start < ITER_MS) {
    for (let i = 0; i < 50; i++) fn();
    n += 50;
    now = cpu();
  }
  console.log(`${label.padEnd(40)} ${(((now - start) * 1000) / n).toFixed(1).padStart(8)} µs CPU`);
}

console.log(`${path.basename(bodyFile)} (${text.length} B)`);
time('JSON.parse', () => JSON.parse(text));
time('parseJsonLossless', () => parseJsonLossless(text, 10_002));
for (const kind of kinds) {
  const policy = await policyFor(kind);
  const decide = () => {
    const input = admissionInput(parseAdmissionReview(parseJsonLossless(text, 10_002)));
    return input.operation === 'CREATE'
      ? decideCreate(policy, input.object)
      : decideUpdate(policy, input.object, input.oldObject);
  };
  const d = decide();
  console.log(`${kind}: ${d.causes.length} causes, ${d.warnings.length} warnings`);
  time(`${kind}: parse + envelope + decide`, decide);
}
