// Writes fixtures/by-line/<line>-jobset-<case>.json from the real managers of each Trainer line:
// starts that line's world (its Trainer and JobSet managers and CRDs), applies the same runtimes
// (line-cases.ts: v2.2.1's vendored torch and DeepSpeed ones, and one with node resources) and the
// same suspended TrainJobs, and stores each JobSet Trainer built, uids replaced and the server's
// fields (resourceVersion, generation, creationTimestamp, managedFields, status) dropped.
//   node test/rebuild/capture-jobsets-by-line.ts [v2.2.1|v2.3.0|main ...]   (default: all three)
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { JobSet } from '../../src/api/objects.ts';
import { TRAINER_LINES, waitFor, type TrainerLine } from '../harness/index.ts';
import { api, startWorld } from '../reconciler/support/world.ts';
import { LINE_CASES, lineRuntimeDocs, lineTrainJob } from './line-cases.ts';

const here = path.dirname(fileURLToPath(import.meta.url));
const lines = (process.argv.length > 2 ? process.argv.slice(2) : TRAINER_LINES) as TrainerLine[];
for (const l of lines)
  if (!TRAINER_LINES.includes(l)) throw new Error(`no line ${l}; lines: ${TRAINER_LINES.join(', ')}`);

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

const out = path.join(here, 'fixtures', 'by-line');
await mkdir(out, { recursive: true });
for (const line of lines) {
  const w = await startWorld({ trainer: true, webhook: false, line });
  try {
    const a = api(w.cp);
    await w.cp.applyYaml(lineRuntimeDocs().join('\n---\n'));
    await w.cp.kubectl(['create', 'namespace', 'ns']);
    for (const n of Object.keys(LINE_CASES))
      // Trainer's webhook reads runtimes from its cache: one applied just now may not be there yet.
      await waitFor(
        `${line}: TrainJob ${n} admitted`,
        () =>
          w.cp.applyYaml(JSON.stringify(lineTrainJob(n, 'ns'))).then(
            () => true,
            (err: Error) =>
              /must be created before the TrainJob|not found/.test(err.message) ? false : Promise.reject(err),
          ),
        { timeoutMs: 120_000 },
      );
    for (const n of Object.keys(LINE_CASES)) {
      const js = await a.waitJobSet('ns', n, `built by Trainer ${line}`, () => true);
      const file = path.join(out, `${line}-jobset-${n}.json`);
      await writeFile(file, `${JSON.stringify(sanitized(js, n), null, 2)}\n`);
      process.stdout.write(`${file}\n`);
    }
  } catch (err) {
    process.stderr.write(w.cp.logTails(40));
    throw err;
  } finally {
    await w.stop();
  }
}
