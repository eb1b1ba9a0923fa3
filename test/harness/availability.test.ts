// The harness's lookup order and skip rules, without starting anything.
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { controlPlaneAvailability, kueueAvailability, skipUnless } from './availability.ts';
import {
  cacheDirs,
  locateControlPlaneBinaries,
  locateKueueBinaries,
  matrixCells,
  readVersions,
  readVersionsFile,
} from './binaries.ts';

const root = mkdtempSync(path.join(tmpdir(), 'tjw-availability-'));
after(() => rmSync(root, { recursive: true, force: true }));

function fakeBinary(dir: string, name: string): string {
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, name);
  writeFileSync(file, '#!/bin/sh\n');
  chmodSync(file, 0o755);
  return file;
}

// No Go on this PATH, and a cache folder of our own.
const base = { PATH: '/nonexistent', HOME: root, TJW_BIN_CACHE: path.join(root, 'cache') };

describe('binaries lookup', () => {
  it('prefers TEST_ASSET_* over KUBEBUILDER_ASSETS over the build cache', () => {
    const v = readVersions();
    const dirs = cacheDirs(v, base);
    for (const b of ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'kubectl']) fakeBinary(dirs.k8s, b);
    fakeBinary(dirs.etcd, 'etcd');
    fakeBinary(dirs.kwok, 'kwok');
    const assets = path.join(root, 'assets');
    for (const b of ['kube-apiserver', 'etcd', 'kubectl']) fakeBinary(assets, b);
    const explicit = fakeBinary(path.join(root, 'explicit'), 'my-etcd');

    const found = locateControlPlaneBinaries({ ...base, KUBEBUILDER_ASSETS: assets, TEST_ASSET_ETCD: explicit });
    assert.ok(found.found);
    assert.equal(found.paths.etcd, explicit);
    assert.equal(found.paths.kubeApiserver, path.join(assets, 'kube-apiserver'));
    // envtest's assets have no controller manager: it comes from the cache.
    assert.equal(found.paths.kubeControllerManager, path.join(dirs.k8s, 'kube-controller-manager'));
    assert.equal(found.paths.kubeScheduler, path.join(dirs.k8s, 'kube-scheduler'));
    assert.equal(found.paths.kwok, path.join(dirs.kwok, 'kwok'));
  });

  it('reports a missing kube-scheduler or kwok (the world needs both)', () => {
    const v = readVersions();
    const cache = path.join(root, 'no-world');
    const dirs = cacheDirs(v, { ...base, TJW_BIN_CACHE: cache });
    for (const b of ['kube-apiserver', 'kube-controller-manager', 'kubectl']) fakeBinary(dirs.k8s, b);
    fakeBinary(dirs.etcd, 'etcd');
    const found = locateControlPlaneBinaries({ ...base, TJW_BIN_CACHE: cache });
    assert.ok(!found.found);
    assert.deepEqual(found.missing.sort(), ['kube-scheduler', 'kwok']);
    const withEnv = locateControlPlaneBinaries({
      ...base,
      TJW_BIN_CACHE: cache,
      TEST_ASSET_KUBE_SCHEDULER: fakeBinary(path.join(root, 'x'), 'sched'),
      TEST_ASSET_KWOK: fakeBinary(path.join(root, 'x'), 'kwok'),
    });
    assert.ok(withEnv.found);
  });

  it('reports a TEST_ASSET_* path that is not executable as missing', () => {
    const found = locateControlPlaneBinaries({ ...base, TEST_ASSET_KUBECTL: path.join(root, 'nope') });
    assert.equal(found.found, false);
    assert.ok(!found.found && found.missing.includes('kubectl'));
  });
});

describe('skip rules', () => {
  const empty = { ...base, TJW_BIN_CACHE: path.join(root, 'empty') };

  it('skips with instructions when neither binaries nor Go are there', () => {
    const a = controlPlaneAvailability(empty);
    assert.equal(a.available, false);
    assert.ok(!a.available && /hack\/build-binaries\.sh/.test(a.reason) && /KUBEBUILDER_ASSETS/.test(a.reason));
  });

  it('fails under CI=true instead of skipping', () => {
    assert.throws(() => controlPlaneAvailability({ ...empty, CI: 'true' }), /CI=true/);
  });

  it('builds when Go is on PATH', () => {
    const goDir = path.join(root, 'gobin');
    fakeBinary(goDir, 'go');
    assert.deepEqual(controlPlaneAvailability({ ...empty, PATH: goDir }), { available: true, needsBuild: true });
    assert.equal(controlPlaneAvailability({ ...empty, PATH: goDir, TJW_NO_BUILD: '1' }).available, false);
  });
});

describe('Kueue (only the suites that queue jobs need it)', () => {
  const empty = { ...base, TJW_BIN_CACHE: path.join(root, 'no-kueue') };

  it('is found in its own cache folder, keyed by KUEUE_VERSION, or at TEST_ASSET_KUEUE', () => {
    const cache = path.join(root, 'kueue-cache');
    const dir = cacheDirs(readVersions(), { ...base, TJW_BIN_CACHE: cache }).kueue;
    assert.equal(path.basename(dir), `kueue-${readVersions().kueue}`);
    const cached = fakeBinary(dir, 'kueue');
    assert.deepEqual(locateKueueBinaries({ ...base, TJW_BIN_CACHE: cache }), { found: true, paths: { kueue: cached } });
    const explicit = fakeBinary(path.join(root, 'explicit'), 'my-kueue');
    assert.deepEqual(locateKueueBinaries({ ...empty, TEST_ASSET_KUEUE: explicit }), {
      found: true,
      paths: { kueue: explicit },
    });
  });

  it("follows the cell's Kubernetes: KUEUE_NEXT_VERSION in the newer one's cells, from `kueue-next`", () => {
    const file = readVersionsFile();
    const next = matrixCells().filter((c) => c.k8sMinor === '1.37');
    assert.ok(next.length > 0 && file.KUEUE_NEXT_VERSION && file.KUEUE_NEXT_VERSION !== file.KUEUE_VERSION);
    for (const c of matrixCells()) {
      const env = { ...empty, TJW_CELL: c.name };
      const want = c.k8sMinor === '1.37' ? file.KUEUE_NEXT_VERSION : file.KUEUE_VERSION;
      assert.equal(readVersions(undefined, c).kueue, want, c.name);
      const a = locateKueueBinaries(env);
      assert.ok(!a.found && a.searched.some((d) => d.includes(`/kueue-${want}/`)), `${c.name}: ${JSON.stringify(a)}`);
      const how = kueueAvailability(env);
      const component = c.k8sMinor === '1.37' ? 'kueue-next' : 'kueue';
      assert.ok(!how.available && how.reason.includes(`hack/build-binaries.sh ${component}\``), JSON.stringify(how));
    }
  });

  it('absent: skips saying how to build it, fails under CI=true, builds when Go is on PATH', () => {
    const a = kueueAvailability(empty);
    assert.ok(
      !a.available &&
        /Kueue not available \(missing kueue;/.test(a.reason) &&
        /hack\/build-binaries\.sh kueue/.test(a.reason),
      JSON.stringify(a),
    );
    assert.throws(
      () => kueueAvailability({ ...empty, CI: 'true' }),
      /CI=true: the end-to-end suites must run, but Kueue not available/,
    );
    const goDir = path.join(root, 'gobin-kueue');
    fakeBinary(goDir, 'go');
    assert.deepEqual(kueueAvailability({ ...empty, PATH: goDir }), { available: true, needsBuild: true });
  });

  it('found, but no mount namespace can be made here: skips saying why, fails under CI=true', () => {
    const cache = path.join(root, 'kueue-cache-2');
    fakeBinary(cacheDirs(readVersions(), { ...base, TJW_BIN_CACHE: cache }).kueue, 'kueue');
    const noNamespace = () => 'unshare failed';
    const a = kueueAvailability({ ...base, TJW_BIN_CACHE: cache }, noNamespace);
    assert.deepEqual(a, { available: false, reason: 'Kueue cannot run here: unshare failed' });
    assert.throws(
      () => kueueAvailability({ ...base, TJW_BIN_CACHE: cache, CI: 'true' }, noNamespace),
      /CI=true: .*Kueue cannot: unshare failed/,
    );
    assert.deepEqual(
      kueueAvailability({ ...base, TJW_BIN_CACHE: cache }, () => undefined),
      { available: true, needsBuild: false },
    );
  });
});

describe("skipUnless: a suite's skip from what it needs", () => {
  it('false when all are available, else the first missing one’s reason', () => {
    const ok = { available: true, needsBuild: false } as const;
    const noEtcd = { available: false, reason: 'no etcd' } as const;
    const noTrainer = { available: false, reason: 'no Trainer' } as const;
    assert.equal(skipUnless(ok, ok), false);
    assert.equal(skipUnless(), false);
    assert.equal(skipUnless(ok, noEtcd, noTrainer), 'no etcd');
    assert.equal(skipUnless(noTrainer, ok), 'no Trainer');
  });
});
