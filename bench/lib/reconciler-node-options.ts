// The NODE_OPTIONS the shipped reconciler runs with, read from its manifest, so that a bench's
// reconciler has the heap limits a cluster's has.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { projectRoot } from '../../test/harness/index.ts';

/** The NODE_OPTIONS the default layout's reconciler container sets (its Deployment's env). */
export function shippedReconcilerNodeOptions(): string {
  const file = path.join(projectRoot, 'manifests/components/separate-reconciler/reconciler.yaml');
  const docs = parseAllDocuments(readFileSync(file, 'utf8')).map((d) => d.toJS() as Record<string, any>);
  const container = docs
    .find((d) => d.kind === 'Deployment')
    ?.spec?.template?.spec?.containers?.find((c: { name: string }) => c.name === 'reconciler');
  const value = container?.env?.find((e: { name: string }) => e.name === 'NODE_OPTIONS')?.value;
  if (typeof value !== 'string') throw new Error(`${file}: the reconciler container sets no NODE_OPTIONS`);
  return value;
}
