// Writes fixtures/trainer-v2.3.0-jobset-<case>.json from the real Trainer v2.3.0: starts the e2e
// world (control plane, JobSet v0.12.0 and Trainer v2.3.0 managers, the upstream runtimes), applies
// the runtimes and suspended TrainJobs of trainer-cases.ts, and stores each JobSet Trainer applied
// with its uids replaced (jobset-uid-<name>, trainjob-uid-<name>) and the server's fields
// (resourceVersion, generation, creationTimestamp, managedFields, status) dropped.
//   node test/rebuild/capture-trainer-fixtures.ts [case ...]   (default: every case)
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { JobSet } from '../../src/api/objects.ts';
import { waitFor } from '../harness/index.ts';
import { api, startWorld } from '../reconciler/support/world.ts';
import { CASE_RUNTIMES, CASES, caseTrainJob, type CaseName } from './trainer-cases.ts';

const here = path.dirname(fileURLToPath(import.meta.url));
const names = (process.argv.length > 2 ? process.argv.slice(2) : Object.keys(CASES)) as CaseName[];
for (const n of names) if (!(n in CASES)) throw new Error(`no case ${n}; cases: ${Object.keys(CASES).join(', ')}`);

function sanitized(js: JobSet, name: string): JobSet {
  const { labels, annotations, ownerReferences } = js.metadata;
  return {
    apiVersion: js.apiVersion,
    kind: js.kind,
    metadata: {
      name: js.metadata.name,
      namespace: js.metadata.namespace,
      ...(labels ? { labels } : {}),
      ...(annotations ? { annotations } : {}),
      ownerReferences: ownerReferences?.map((o) => ({ ...o, uid: `trainjob-uid-${name}` })),
      uid: `jobset-uid-${name}`,
    },
    spec: js.spec,
  };
}

const w = await startWorld({ trainer: true, webhook: false });
try {
  const a = api(w.cp);
  const runtimes = [...new Set(names.map((n) => CASES[n].runtime))]
    .filter((r) => r !== 'torchtune-llama3.2-1b') // the world applies it already
    .map((r) => JSON.stringify(CASE_RUNTIMES[r]())); // JSON: kubectl's YAML 1.1 reads a bare y as true
  if (runtimes.length) await w.cp.applyYaml(runtimes.join('\n---\n'));
  await w.cp.kubectl(['create', 'namespace', 'ns']);
  for (const n of names) {
    const { uid: _uid, generation: _generation, ...metadata } = caseTrainJob(n).metadata;
    // Trainer's webhook reads runtimes from its cache: a runtime applied just now may not be there yet.
    await waitFor(
      `TrainJob ${n} admitted`,
      () =>
        w.cp.applyYaml(JSON.stringify({ ...caseTrainJob(n), metadata })).then(
          () => true,
          (err: Error) => (/must be created before the TrainJob/.test(err.message) ? false : Promise.reject(err)),
        ),
      { timeoutMs: 180_000 },
    );
  }
  for (const n of names) {
    const js = await a.waitJobSet('ns', n, 'built by Trainer', () => true);
    const file = path.join(here, 'fixtures', `trainer-v2.3.0-jobset-${n}.json`);
    await writeFile(file, `${JSON.stringify(sanitized(js, n), null, 2)}\n`);
    process.stdout.write(`${file}\n`);
  }
} catch (err) {
  process.stderr.write(w.cp.logTails(40));
  throw err;
} finally {
  await w.stop();
}
