// The vendored upstream files (upstream/) are what their modules ship, and every one is recorded
// in upstream/SOURCES.md. Needs Go (the module cache or proxy): skipped with a message without it.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cp, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { staleFiles, upstreamRoot, vendoredFiles } from '../../hack/vendor-upstream.ts';

function goAvailable(): string | false {
  try {
    execFileSync('go', ['version'], { stdio: 'ignore' });
    return false;
  } catch {
    return 'Go is not installed: the vendored files cannot be compared with their modules (install Go, or run under CI=true)';
  }
}

/** Files under upstream/, relative to it. */
async function filesUnder(dir: string, prefix = ''): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const rel = path.posix.join(prefix, e.name);
    if (e.isDirectory()) out.push(...(await filesUnder(path.join(dir, e.name), rel)));
    else out.push(rel);
  }
  return out.sort();
}

/** Ours, not upstream's: the record itself and the kustomization that lets manifests/crd-patch render. */
const OURS = ['SOURCES.md', 'crds/trainer-v2.3.0/kustomization.yaml'];

describe('vendored upstream files', () => {
  it('every file under upstream/ is recorded in SOURCES.md, and every recorded file exists', async () => {
    const { modules, pinned } = await vendoredFiles();
    const recorded = [...modules.map((f) => f.file), ...pinned.map((f) => f.file), ...OURS].sort();
    assert.deepEqual(await filesUnder(upstreamRoot), recorded);
  });

  describe('match their sources', { skip: process.env.CI === 'true' ? false : goAvailable() }, () => {
    const temps: string[] = [];
    after(async () => Promise.all(temps.map((t) => rm(t, { recursive: true, force: true }))));

    it('each module file equals its module copy; the snapshot files their pinned SHA-256', async () => {
      assert.deepEqual(await staleFiles(), []);
    });

    it('a changed byte is reported, naming the file and its source', async () => {
      const copy = await mkdtemp(path.join(tmpdir(), 'tjw-upstream-'));
      temps.push(copy);
      await cp(upstreamRoot, copy, { recursive: true });
      await writeFile(path.join(copy, 'runtimes/torch_distributed.yaml'), 'edited\n');
      await writeFile(path.join(copy, 'crds/trainer.kubeflow.org_trainjobs.yaml'), 'edited\n');
      assert.deepEqual(await staleFiles(copy), [
        'runtimes/torch_distributed.yaml: differs from github.com/kubeflow/trainer/v2@v2.3.0 manifests/base/runtimes/torch_distributed.yaml',
        'crds/trainer.kubeflow.org_trainjobs.yaml: its SHA-256 is not the one upstream/SOURCES.md pins',
      ]);
    });
  });
});
