// Rendering manifests/ with kustomize: the kubectl of the harness's default cell (its built-in
// kustomize, v5.7.1 in kubectl v1.35.8), pinned so that the chart is generated and checked with
// the same kustomize on every machine.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { locateControlPlaneBinaries, projectRoot } from '../../test/harness/binaries.ts';
import { kustomizationFor, type Combination, type OverlayOptions } from './combinations.ts';
import type { Obj, RenderedObject } from './templates.ts';

export const manifestsDir = path.join(projectRoot, 'manifests');
const ORIGIN = 'config.kubernetes.io/origin';

/** The environment without TJW_CELL: the chart is generated with the default cell's kubectl in every cell. */
export function defaultCellEnv(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const { TJW_CELL: _cell, ...rest } = env;
  return rest;
}

/** The default cell's kubectl. */
export function pinnedKubectl(env: NodeJS.ProcessEnv = process.env): string {
  const found = locateControlPlaneBinaries(defaultCellEnv(env));
  if (!found.found)
    throw new Error(
      `kubectl not found (searched ${found.searched.filter((s) => s.endsWith('kubectl')).join(', ')}): run hack/build-binaries.sh k8s`,
    );
  return found.paths.kubectl;
}

/** `kubectl kustomize DIR`, parsed into its objects. */
export async function kustomize(kubectl: string, dir: string): Promise<Obj[]> {
  const { stdout } = await promisify(execFile)(kubectl, ['kustomize', dir], {
    env: { PATH: process.env.PATH ?? '' },
    maxBuffer: 64 * 1024 * 1024,
  });
  return parseAllDocuments(stdout)
    .map((d) => d.toJSON() as Obj | null)
    .filter((d): d is Obj => d !== null)
    .map((d) => {
      if (typeof d.kind !== 'string' || typeof d.metadata?.name !== 'string')
        throw new Error(`kubectl kustomize ${dir}: a document without kind or metadata.name`);
      return d;
    });
}

/** What a combination's kustomization needs from manifests/: the cert-manager overlay's replacements. */
export async function certManagerReplacements(): Promise<unknown[]> {
  const file = path.join(manifestsDir, 'overlays/cert-manager/kustomization.yaml');
  const k = parse(await readFile(file, 'utf8')) as { replacements?: unknown[] };
  if (!Array.isArray(k?.replacements)) throw new Error(`${file}: no replacements`);
  return k.replacements;
}

/** The namespace manifests/base puts everything in. */
export async function manifestsNamespace(): Promise<string> {
  const file = path.join(manifestsDir, 'base/kustomization.yaml');
  const ns = (parse(await readFile(file, 'utf8')) as { namespace?: unknown })?.namespace;
  if (typeof ns !== 'string' || ns === '') throw new Error(`${file}: no namespace`);
  return ns;
}

/** A combination rendered from a kustomization of a user's own (in a temp folder), as kustomize renders it. */
export async function kustomizeCombination(
  kubectl: string,
  c: Combination,
  o: Omit<OverlayOptions, 'manifests'>,
): Promise<Obj[]> {
  return (await renderIn(kubectl, c, o)).objects;
}

/** A combination rendered with the manifests/ file each object comes from (kustomize's origin annotation). */
export async function kustomizeWithOrigins(
  kubectl: string,
  c: Combination,
  o: Omit<OverlayOptions, 'manifests' | 'buildMetadata'>,
): Promise<RenderedObject[]> {
  const { dir, objects } = await renderIn(kubectl, c, { ...o, buildMetadata: ['originAnnotations'] });
  return objects.map((obj) => splitOrigin(obj, dir));
}

async function renderIn(
  kubectl: string,
  c: Combination,
  o: Omit<OverlayOptions, 'manifests'>,
): Promise<{ dir: string; objects: Obj[] }> {
  const dir = await mkdtemp(path.join(tmpdir(), 'tjw-chart-'));
  try {
    const k = kustomizationFor(c, { ...o, manifests: path.relative(dir, manifestsDir) });
    await writeFile(path.join(dir, 'kustomization.yaml'), stringify(k));
    return { dir, objects: await kustomize(kubectl, dir) };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The origin annotation resolved to a path in the project and taken off (the rest kept in their order). */
function splitOrigin(o: Obj, dir: string): RenderedObject {
  // No origin where a JSON patch replaced the annotations (components/cert-manager's): the
  // same object's origin in another combination names it (templates.ts).
  const origin = parse(o.metadata?.annotations?.[ORIGIN] ?? 'null') as { path?: string } | null;
  const annotations = Object.fromEntries(Object.entries(o.metadata.annotations ?? {}).filter(([k]) => k !== ORIGIN));
  const metadata = Object.fromEntries(
    Object.entries(o.metadata)
      .map(([k, v]) => [k, k === 'annotations' ? annotations : v])
      .filter(([k]) => k !== 'annotations' || Object.keys(annotations).length > 0),
  ) as Obj['metadata'];
  return {
    origin: origin?.path ? path.relative(projectRoot, path.resolve(dir, origin.path)) : undefined,
    object: { ...o, metadata },
  };
}
