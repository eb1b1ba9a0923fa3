// Generated files are committed (the CRD patch and VAP under manifests/, the embedded default CRD
// under src/embedded/); they must match the table and the vendored CRD they are generated for.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { generatedFiles, projectRoot } from '../../hack/generate.ts';

describe('generated files are up to date (regenerate with `npm run generate`)', async () => {
  const files = await generatedFiles();
  it('covers the patch, its restore, the VAP and the embedded CRD', () => {
    assert.deepEqual([...files.keys()].sort(), ['manifests/crd-patch/trainjob-crd-patch.yaml', 'manifests/crd-patch/trainjob-crd-restore.yaml', 'manifests/vap/trainjob-vap.yaml', 'src/embedded/trainjob-crd.json']);
  });
  for (const [file, content] of files) {
    it(file, () => {
      assert.equal(readFileSync(path.join(projectRoot, file), 'utf8'), content, `${file} is stale: run npm run generate`);
    });
  }
});
