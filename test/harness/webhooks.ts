// Registering out-of-cluster webhooks: the API server reaches them through
// `clientConfig.url: https://127.0.0.1:PORT/path` and trusts them through `caBundle`.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import jsonpatch from 'fast-json-patch';
import { parse, parseAllDocuments, stringify } from 'yaml';

type Obj = Record<string, any>;

export function urlClientConfig(port: number, urlPath: string, caPem: string): { url: string; caBundle: string } {
  return { url: `https://127.0.0.1:${port}${urlPath}`, caBundle: Buffer.from(caPem).toString('base64') };
}

/**
 * Reads a kustomize webhook folder (manifests.yaml plus the JSON6902 patches its
 * kustomization.yaml lists, e.g. the object selectors upstream adds) without kustomize.
 */
export function loadKustomizedWebhooks(dir: string): Obj[] {
  const docs = parseAllDocuments(readFileSync(path.join(dir, 'manifests.yaml'), 'utf8'))
    .map((d) => d.toJSON() as Obj | null)
    .filter((d): d is Obj => !!d?.kind);
  const kustomization = parse(readFileSync(path.join(dir, 'kustomization.yaml'), 'utf8')) as Obj;
  for (const p of (kustomization.patches ?? []) as Obj[]) {
    const ops = parse(readFileSync(path.join(dir, p.path), 'utf8'));
    for (const doc of docs) {
      const t = p.target ?? {};
      if ((t.kind && t.kind !== doc.kind) || (t.name && t.name !== doc.metadata?.name)) continue;
      jsonpatch.applyPatch(doc, ops, true, true);
    }
  }
  return docs;
}

/**
 * Points every webhook of the given configurations at 127.0.0.1:port (keeping each one's
 * service path) with the CA bundle, and renames the configurations with `namePrefix`.
 */
export function pointWebhooksAt(docs: Obj[], port: number, caPem: string, namePrefix = ''): string {
  const out = docs.map((doc) => ({
    ...doc,
    metadata: { name: `${namePrefix}${doc.metadata.name}` },
    webhooks: (doc.webhooks as Obj[]).map((w) => ({
      ...w,
      clientConfig: urlClientConfig(port, w.clientConfig?.service?.path ?? '/', caPem),
    })),
  }));
  return out.map((d) => stringify(d)).join('---\n');
}
