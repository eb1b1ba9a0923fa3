// `node hack/generate-chart.ts` (part of `npm run generate`): the Helm chart's templates
// (charts/trainjob-webhook/templates/, every file there that starts with the generated header),
// rendered from manifests/ by kustomize for every combination of the chart's values. The chart
// thus has no manifest of its own to drift: kustomize is the one source, and what the chart adds
// (the values choosing a combination, the release namespace, the image) are the same
// transformers a user's overlay would use (test/chart/chart-matches-kustomize.test.ts compares
// `helm template` with `kubectl kustomize` for each combination).
// `--check` writes nothing and exits 1 when a template is stale, missing or no longer generated.
// Needs the harness's kubectl (hack/build-binaries.sh k8s), unlike hack/generate.ts.
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { projectRoot } from '../test/harness/binaries.ts';
import { combinations } from './chart/combinations.ts';
import { certManagerReplacements, kustomizeWithOrigins, manifestsNamespace, pinnedKubectl } from './chart/kustomize.ts';
import { chartTemplates, GENERATED_HEADER, type Sentinels } from './chart/templates.ts';

export const chartDir = path.join(projectRoot, 'charts/trainjob-webhook');
export const templatesDir = path.join(chartDir, 'templates');

/** What kustomize is asked to render where the chart has a template action. */
export const SENTINELS: Omit<Sentinels, 'manifestsNamespace'> = {
  namespace: 'tjw-chart-release-namespace',
  imageRepository: 'tjw-chart-image-repository',
  imageTag: 'tjw-chart-image-tag',
};

/** Every generated template (name under templates/) and its content. */
export async function generatedTemplates(kubectl = pinnedKubectl()): Promise<Map<string, string>> {
  const replacements = await certManagerReplacements();
  const rendered = [];
  for (const combination of combinations())
    rendered.push({
      combination,
      objects: await kustomizeWithOrigins(kubectl, combination, {
        namespace: SENTINELS.namespace,
        image: { newName: SENTINELS.imageRepository, newTag: SENTINELS.imageTag },
        certManagerReplacements: replacements,
      }),
    });
  return chartTemplates(rendered, { ...SENTINELS, manifestsNamespace: await manifestsNamespace() });
}

/** The templates/ files written by this generator (the hand-written ones lack its header). */
export async function generatedFilesPresent(): Promise<string[]> {
  const out: string[] = [];
  for (const f of await readdir(templatesDir))
    if ((await readFile(path.join(templatesDir, f), 'utf8')).includes(GENERATED_HEADER)) out.push(f);
  return out.sort();
}

async function main(): Promise<number> {
  const check = process.argv.includes('--check');
  const files = await generatedTemplates();
  let stale = 0;
  for (const [file, content] of files) {
    const at = path.join(templatesDir, file);
    if ((await readFile(at, 'utf8').catch(() => undefined)) === content) continue;
    stale++;
    if (check) console.error(`charts/trainjob-webhook/templates/${file} is stale: run npm run generate`);
    else await writeFile(at, content);
  }
  for (const file of (await generatedFilesPresent()).filter((f) => !files.has(f))) {
    stale++;
    if (check) console.error(`charts/trainjob-webhook/templates/${file} is no longer generated: run npm run generate`);
    else await rm(path.join(templatesDir, file));
  }
  if (!check) console.log(`charts/trainjob-webhook/templates: ${files.size} generated, ${stale} written or removed`);
  return check && stale > 0 ? 1 : 0;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url))
  process.exitCode = await main();
