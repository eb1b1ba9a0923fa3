// The generated enforcers are committed under manifests/; they must match the table.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { rulesCommand } from '../../src/commands/rules.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const crd = path.resolve(root, 'upstream/crds/trainer.kubeflow.org_trainjobs.yaml');

async function generate(format: string): Promise<string> {
  let out = '';
  const code = await rulesCommand(['--format', format, '--crd', crd], { out: (t) => (out += t.endsWith('\n') ? t : `${t}\n`), err: (t) => assert.fail(t) });
  assert.equal(code, 0);
  return out;
}

describe('generated manifests are up to date (regenerate with `npm run generate`)', () => {
  for (const [format, file] of [
    ['crd-patch', 'manifests/crd-patch/trainjob-crd-patch.yaml'],
    ['vap', 'manifests/vap/trainjob-vap.yaml'],
  ] as const) {
    it(file, async () => {
      assert.equal(readFileSync(path.join(root, file), 'utf8'), await generate(format), `${file} is stale: run npm run generate`);
    });
  }
});
