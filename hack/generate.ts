// `npm run generate`: everything this project generates from the rule table, written into the
// tree. The enforcers target Trainer v2.3.0's TrainJob CRD (the release the patch is applied to):
//   manifests/crd-patch/trainjob-crd-patch.yaml  the CRD patch (kustomize JSON6902)
//   manifests/crd-patch/trainjob-crd-restore.yaml the patch that undoes it (uninstall)
//   manifests/vap/trainjob-vap.yaml              the ValidatingAdmissionPolicy and binding
//   src/embedded/trainjob-crd.json               that CRD with the patch applied: serve's default
// `node hack/generate.ts --check` writes nothing and exits 1 when a file is stale. It runs with
// Node alone (test/repo/self-contained.test.ts runs it confined to the clone); `npm run generate`
// then runs hack/generate-chart.ts, which needs kubectl's kustomize for the Helm chart.
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { applyCrdPatch } from '../src/rules/crd-policy.ts';
import { readObjectFile } from '../src/io/read-object.ts';
import { rulesCommand } from '../src/commands/rules.ts';

export const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const TARGET_CRD = 'upstream/crds/trainer-v2.3.0/trainer.kubeflow.org_trainjobs.yaml';

async function rulesOutput(format: string): Promise<string> {
  let out = '';
  let err = '';
  const code = await rulesCommand(['--format', format, '--crd', path.join(projectRoot, TARGET_CRD)], {
    out: (t) => (out += t),
    err: (t) => (err += t),
  });
  if (code !== 0) throw new Error(`rules --format ${format} failed: ${err}`);
  return out;
}

/** Every generated file (path relative to the project root) and its content. */
export async function generatedFiles(): Promise<Map<string, string>> {
  const patch = await rulesOutput('crd-patch');
  const restore = await rulesOutput('crd-restore');
  const vap = await rulesOutput('vap');
  const crd = await readObjectFile(path.join(projectRoot, TARGET_CRD));
  const patched = applyCrdPatch(crd, parse(patch));
  return new Map([
    ['manifests/crd-patch/trainjob-crd-patch.yaml', patch],
    ['manifests/crd-patch/trainjob-crd-restore.yaml', restore],
    ['manifests/vap/trainjob-vap.yaml', vap],
    ['src/embedded/trainjob-crd.json', `${JSON.stringify(patched, null, 1)}\n`],
  ]);
}

async function main(): Promise<number> {
  const check = process.argv.includes('--check');
  let stale = 0;
  for (const [file, content] of await generatedFiles()) {
    const at = path.join(projectRoot, file);
    const current = await readFile(at, 'utf8').catch(() => undefined);
    if (current === content) continue;
    if (check) {
      console.error(`${file} is stale: run npm run generate`);
      stale++;
    } else {
      await writeFile(at, content);
      console.log(`wrote ${file}`);
    }
  }
  return stale > 0 ? 1 : 0;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url))
  process.exitCode = await main();
