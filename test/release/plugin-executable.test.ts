// The kubectl plugin's release artifacts, as hack/build-plugin.ts makes them: one single executable
// per platform (the linux-x64 one is run; the others are checked structurally: their architecture,
// the SEA fuse flipped, the blob inside), reproducible archives (the linux ones with the completion
// helper kubectl runs), and a krew manifest that krew itself installs from the archives offline,
// and refuses when an archive does not match it.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { buildPlugin, COMPLETION_HELPER, SEA_FUSE, type BuildResult } from '../../hack/build-plugin.ts';
import { ensureKrew } from '../harness/plugin.ts';

const run = promisify(execFile);

/** ELF e_machine (offset 18) or PE's COFF Machine (after "PE\0\0" at e_lfanew). */
function machineOf(binary: Buffer): string {
  if (binary.subarray(0, 4).equals(Buffer.from([0x7f, 0x45, 0x4c, 0x46]))) {
    const m = binary.readUInt16LE(18);
    return m === 0x3e ? 'elf-x86_64' : m === 0xb7 ? 'elf-aarch64' : `elf-0x${m.toString(16)}`;
  }
  if (binary.subarray(0, 2).toString('latin1') === 'MZ') {
    const pe = binary.readUInt32LE(0x3c);
    assert.equal(binary.subarray(pe, pe + 4).toString('latin1'), 'PE\0\0');
    const m = binary.readUInt16LE(pe + 4);
    return m === 0x8664 ? 'pe-amd64' : `pe-0x${m.toString(16)}`;
  }
  return 'unknown';
}

const EXPECTED_MACHINE = { 'linux-x64': 'elf-x86_64', 'linux-arm64': 'elf-aarch64', 'win-x64': 'pe-amd64' };

describe('the kubectl plugin as single executables', () => {
  let out: string;
  let build: BuildResult;
  before(async () => {
    out = await mkdtemp(path.join(tmpdir(), 'tjw-plugin-'));
    build = await buildPlugin({ out });
  });
  after(() => rm(out, { recursive: true, force: true }));

  it('builds linux-x64, linux-arm64 and win-x64, each with the blob injected and the fuse flipped', async () => {
    assert.deepEqual(build.platforms.map((p) => p.id).sort(), ['linux-arm64', 'linux-x64', 'win-x64']);
    const blob = await readFile(build.blob);
    for (const p of build.platforms) {
      const binary = await readFile(p.binary);
      assert.equal(machineOf(binary), EXPECTED_MACHINE[p.id], p.id);
      // Node checks the fuse at start: ':0' runs plain node, ':1' runs the injected blob.
      assert.ok(binary.includes(`${SEA_FUSE}:1`), `${p.id}: fuse not flipped`);
      assert.ok(!binary.includes(`${SEA_FUSE}:0`), `${p.id}: an unflipped fuse is left`);
      assert.ok(binary.includes(blob), `${p.id}: the blob is not in the binary`);
    }
  });

  it('runs on this machine without Node: --help, and an unknown flag exits 1 with what to do', async () => {
    const x64 = build.platforms.find((p) => p.id === 'linux-x64')!;
    // No node on PATH, none of the project's files beside it: the executable is all it needs.
    const env = { PATH: '/nonexistent', HOME: out };
    const help = await run(x64.binary, ['--help'], { env, cwd: out });
    assert.match(help.stdout, /^ {2}scale +pause the job/m);
    assert.match(help.stdout, /^ {2}status +the node count/m);
    const bad = await run(x64.binary, ['scale', '--no-such-flag'], { env, cwd: out }).then(
      () => assert.fail('an unknown flag was accepted'),
      (err: { code: number; stderr: string }) => err,
    );
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /--no-such-flag/);
  });

  it('makes the same archives from the same tree (reproducible sha256)', async () => {
    const again = await mkdtemp(path.join(tmpdir(), 'tjw-plugin-again-'));
    try {
      const second = await buildPlugin({ out: again, platforms: ['linux-arm64'] });
      const first = build.platforms.find((p) => p.id === 'linux-arm64')!;
      assert.equal(second.platforms[0].sha256, first.sha256);
      const { stdout } = await run('tar', ['-tvzf', first.archive]);
      const lines = stdout.trim().split('\n');
      assert.equal(lines.length, 2, stdout);
      assert.match(lines[0], /^-rwxr-xr-x 0\/0 +\d+ 1970-01-01 00:00 kubectl-trainjob$/);
      assert.match(lines[1], /^-rwxr-xr-x 0\/0 +\d+ 1970-01-01 00:00 kubectl_complete-trainjob$/);
      const win = build.platforms.find((p) => p.id === 'win-x64')!;
      assert.equal((await run('tar', ['-tzf', win.archive])).stdout, 'kubectl-trainjob.exe\n');
    } finally {
      await rm(again, { recursive: true, force: true });
    }
  });

  it('is installed by krew from its manifest and archive, and krew refuses an archive the manifest does not name', async () => {
    const krew = await ensureKrew();
    const manifest = parse(await readFile(build.manifest, 'utf8'));
    assert.equal(manifest.kind, 'Plugin');
    assert.deepEqual(
      manifest.spec.platforms.map((p: { selector: { matchLabels: object } }) => p.selector.matchLabels),
      [
        { os: 'linux', arch: 'amd64' },
        { os: 'linux', arch: 'arm64' },
        { os: 'windows', arch: 'amd64' },
      ],
    );
    const x64 = build.platforms.find((p) => p.id === 'linux-x64')!;
    const krewRoot = path.join(out, 'krew');
    const env = { ...process.env, KREW_ROOT: krewRoot, KREW_OS: 'linux', KREW_ARCH: 'amd64' };
    await run(krew, ['install', `--manifest=${build.manifest}`, `--archive=${x64.archive}`], { env });
    const installed = path.join(krewRoot, 'bin', 'kubectl-trainjob');
    const help = await run(installed, ['--help'], { env: { PATH: '/nonexistent', HOME: out } });
    assert.match(help.stdout, /^ {2}scale +pause the job/m);

    // The completion helper is installed beside it; linked beside krew's link to the executable
    // (what the docs tell a krew user to do), kubectl's call of it completes.
    assert.deepEqual(
      manifest.spec.platforms.map((p: { files: { from: string }[] }) => p.files.map((f) => f.from)),
      [['kubectl-trainjob', COMPLETION_HELPER], ['kubectl-trainjob', COMPLETION_HELPER], ['kubectl-trainjob.exe']],
    );
    const stored = path.join(krewRoot, 'store', 'trainjob', manifest.spec.version, COMPLETION_HELPER);
    await symlink(stored, path.join(krewRoot, 'bin', COMPLETION_HELPER));
    // sh and dirname from the system; still no node on PATH.
    const complete = await run(path.join(krewRoot, 'bin', COMPLETION_HELPER), ['scale', 'llama', '--no'], {
      env: { PATH: '/usr/bin:/bin', HOME: out },
    });
    assert.equal(complete.stdout, '--nodes\n--no-resume\n:4\n');

    // The arm64 archive offered for linux/amd64: its sha256 is not the one the manifest names.
    const arm = build.platforms.find((p) => p.id === 'linux-arm64')!;
    const refused = await run(krew, ['install', `--manifest=${build.manifest}`, `--archive=${arm.archive}`], {
      env: { ...env, KREW_ROOT: path.join(out, 'krew-2') },
    }).then(
      () => assert.fail('krew installed an archive whose sha256 the manifest does not name'),
      (err: { stderr: string }) => err,
    );
    assert.match(refused.stderr, /sha256|checksum|hash/i);
  });
});
