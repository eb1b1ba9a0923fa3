// kubectl's kubeconfig read as client-go's ClientConfigLoadingRules.Load reads a precedence list
// (k8s.io/client-go/tools/clientcmd/loader.go, v0.37.2): each file in order, a file that does not
// exist skipped (os.IsNotExist: ENOENT only), any other read or parse error an error naming the
// file ("error loading config file"), then merged (kubeconfig-merge.ts) and the merged view's
// current context read and checked as one file's is (kube-access.ts). Each file is read no
// further than MAX_KUBECONFIG_BYTES. Used by `kubectl trainjob` only ('merged-kubeconfig').
import { readFile } from 'node:fs/promises';
import type { JsonObject } from '../json/object.ts';
import { accessFromKubeconfig, filesOf, MAX_KUBECONFIG_BYTES, readBounded, type LoadedAccess } from './kube-access.ts';
import { KubeconfigFileError, mergeKubeconfigs, type KubeconfigDocument } from './kubeconfig-merge.ts';
import { parseKubeconfigYaml } from './kubeconfig-yaml.ts';

export interface MergedKubeconfig {
  /** One kubeconfig document, its paths absolute. */
  doc: JsonObject;
  /** The files read, in precedence order (those that do not exist left out). */
  files: string[];
  /** The files asked for, for the error when none exists. */
  precedence: readonly string[];
}

const firstLine = (err: unknown) => (err instanceof Error ? err.message : String(err)).split('\n')[0];

/** What an error of the merged view is prefixed with: the file, or the files merged. */
export const mergedLabel = (files: readonly string[]) =>
  files.length === 1 ? `kubeconfig ${files[0]}` : `the kubeconfig merged from ${files.join(', ')}`;

/** The files of `precedence` read and merged; an empty Config when none exists. */
export async function readMergedKubeconfig(precedence: readonly string[]): Promise<MergedKubeconfig> {
  const documents: KubeconfigDocument[] = [];
  // Empty names are skipped and a name given twice is read once, as client-go's loader does.
  for (const file of new Set(precedence.filter(Boolean))) {
    let text: string;
    try {
      text = await readBounded(file, MAX_KUBECONFIG_BYTES);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw new KubeconfigFileError(file, firstLine(err));
    }
    try {
      documents.push({ file, doc: await parseKubeconfigYaml(text) });
    } catch (err) {
      throw new KubeconfigFileError(file, firstLine(err));
    }
  }
  return { doc: mergeKubeconfigs(documents), files: documents.map((d) => d.file), precedence };
}

/** The merged view's current context (or `context`) as connection material; errors are one line naming the file(s). */
export async function accessOfMerged(
  merged: MergedKubeconfig,
  context?: string,
): Promise<{ loaded: LoadedAccess; label: string }> {
  if (merged.files.length === 0)
    throw new Error(`no kubeconfig: none of the files (${merged.precedence.join(', ')}) exists`);
  const label = mergedLabel(merged.files);
  try {
    // Every path in the merged document is absolute: the directory given here resolves none.
    const loaded = accessFromKubeconfig(merged.doc, process.cwd(), context);
    if (loaded.kind === 'direct') for (const f of filesOf(loaded.access)) await readFile(f);
    return { loaded, label };
  } catch (err) {
    throw new Error(`${label}: ${firstLine(err)}`, { cause: err });
  }
}

/** The files of `precedence` read, merged and their current context (or `context`) taken: accessOfMerged. */
export async function loadMergedKubeconfig(
  precedence: readonly string[],
  context?: string,
): Promise<{ loaded: LoadedAccess; merged: MergedKubeconfig; label: string }> {
  const merged = await readMergedKubeconfig(precedence);
  return { ...(await accessOfMerged(merged, context)), merged };
}
