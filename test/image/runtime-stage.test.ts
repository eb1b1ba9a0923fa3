// The image without a Docker engine: the Dockerfile's stages reproduced in empty folders (the build
// stage's RUNs run as written: an install from the lockfile, `npm run build` compiling the sources
// to JavaScript, then the production pruning), the runtime stage's COPYs as written, then `serve`
// started as the Dockerfile's non-root user from the read-only folder, running JavaScript only
// (type stripping off): /readyz answers, and one review is decided by the shipped rules.
// What differs from a real image, said plainly: the base image's `node` is this project's Node
// (the same version, checked below), the container's args are adapted as a pod's would be
// (ports 0, loopback, a certificate folder of the test's, --offline), and npm may use its cache.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { after, describe, it } from 'node:test';
import { ensureSelfSignedCert } from '../../src/certs/selfsigned.ts';
import { projectRoot } from '../harness/binaries.ts';
import { review, trainJob } from '../webhook/fixtures.ts';
import { includedInContext, parseDockerfile, type Stage } from './dockerfile.ts';

const VALIDATE = '/validate-trainer-kubeflow-org-v1alpha1-trainjob';
const dockerfile = readFileSync(path.join(projectRoot, 'Dockerfile'), 'utf8');
const dockerignore = readFileSync(path.join(projectRoot, '.dockerignore'), 'utf8');
const pkg = JSON.parse(readFileSync(path.join(projectRoot, 'package.json'), 'utf8')) as {
  devDependencies: Record<string, string>;
};

/** Every file under a folder (relative paths). */
function filesUnder(dir: string, base = dir): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? filesUnder(p, base) : [path.relative(base, p)];
  });
}

/** Apparent size (bytes) and disk usage (MiB, as du counts blocks) of a folder. */
function sizeOf(dir: string): { bytes: number; diskMiB: number } {
  const bytes = Number(execFileSync('du', ['-sb', dir], { encoding: 'utf8' }).split('\t')[0]);
  const diskMiB = Number(execFileSync('du', ['-sm', dir], { encoding: 'utf8' }).split('\t')[0]);
  return { bytes, diskMiB };
}

/** Runs a stage's instructions into `root` (a folder standing for the image's filesystem). */
// eslint-disable-next-line complexity -- a Dockerfile stage interpreter: one case per instruction
function buildStage(stage: Stage, root: string, stages: Map<string, string>, log: (s: string) => void) {
  let workdir = '/';
  const env: Record<string, string> = {};
  let user: string | undefined;
  let entrypoint: string[] = [];
  let cmd: string[] = [];
  const inRoot = (p: string) => path.join(root, path.posix.resolve(workdir, p));
  for (const ins of stage.instructions) {
    switch (ins.op) {
      case 'WORKDIR':
        workdir = path.posix.resolve(workdir, ins.path);
        mkdirSync(inRoot('.'), { recursive: true });
        break;
      case 'COPY': {
        const from = ins.from === undefined ? projectRoot : stages.get(ins.from);
        assert.ok(from, `COPY --from=${ins.from}: no such stage`);
        for (const source of ins.sources) {
          if (ins.from === undefined)
            assert.ok(
              includedInContext(dockerignore, source),
              `.dockerignore keeps ${source} out of the build context`,
            );
          const src = ins.from === undefined ? path.join(from, source) : path.join(from, source);
          const dest = ins.dest.endsWith('/') ? path.join(inRoot(ins.dest), path.basename(source)) : inRoot(ins.dest);
          cpSync(src, dest, { recursive: true });
        }
        break;
      }
      case 'RUN':
        log(`RUN ${ins.command}`);
        execFileSync('sh', ['-c', ins.command], {
          cwd: inRoot('.'),
          // The project's Node 24 first on PATH (npm runs on it); the npm cache may serve the tarballs.
          env: {
            PATH: `${path.dirname(process.execPath)}:${process.env.PATH}`,
            HOME: process.env.HOME ?? '/root',
            npm_config_prefer_offline: 'true',
            ...env,
          },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        break;
      case 'ENV':
        env[ins.name] = ins.value;
        break;
      case 'USER':
        user = ins.user;
        break;
      case 'ENTRYPOINT':
        entrypoint = ins.argv;
        break;
      case 'CMD':
        cmd = ins.argv;
        break;
      case 'EXPOSE':
        break;
    }
  }
  return { workdir: inRoot('.'), env, user, entrypoint, cmd };
}

function httpsPost(url: string, body: unknown, ca: string): Promise<{ status: number; json: any }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', ca, headers: { 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, json: text ? JSON.parse(text) : undefined }));
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

describe('the image, reproduced without a Docker engine', { timeout: 300_000 }, () => {
  it('is based on the exact Node version the project runs', () => {
    const stages = parseDockerfile(dockerfile);
    const want = `node:${pkg.devDependencies.node}-slim`;
    assert.ok(stages.length >= 2);
    for (const s of stages)
      assert.ok(s.image === want || s.image.startsWith(`${want}@sha256:`), `FROM ${s.image} is ${want}`);
    assert.equal(process.version, `v${pkg.devDependencies.node}`, 'the tests run on the same Node as the image');
  });

  it('runtime stage: production install and pruning, serve as a non-root uid from a read-only folder, /readyz and one review', async (t) => {
    if (process.getuid?.() !== 0 || !existsSync('/usr/bin/setpriv'))
      return t.skip('needs root and setpriv to start serve as the image user');
    const stages = parseDockerfile(dockerfile);
    const work = mkdtempSync(path.join(tmpdir(), 'tjw-image-'));
    after(() => {
      execFileSync('chmod', ['-R', 'u+w', work]);
      rmSync(work, { recursive: true, force: true });
    });
    chmodSync(work, 0o755); // the image user must reach the runtime folder

    const built = new Map<string, string>();
    let runtime!: ReturnType<typeof buildStage>;
    stages.forEach((stage, i) => {
      const root = path.join(work, `stage-${i}`);
      mkdirSync(root);
      runtime = buildStage(stage, root, built, (s) => t.diagnostic(s));
      if (stage.name) built.set(stage.name, root);
    });

    const modules = path.join(runtime.workdir, 'node_modules');
    const size = sizeOf(modules);
    t.diagnostic(`production node_modules: ${(size.bytes / 1e6).toFixed(1)} MB (${size.diskMiB} MiB on disk)`);
    const kubernetesClient = sizeOf(path.join(modules, '@kubernetes/client-node'));
    t.diagnostic(
      `of which @kubernetes/client-node: ${(kubernetesClient.bytes / 1e6).toFixed(1)} MB (${kubernetesClient.diskMiB} MiB on disk)`,
    );
    const files = filesUnder(modules);
    assert.deepEqual(
      files.filter((f) => /\.d\.[cm]?ts$|\.map$/.test(f)),
      [],
      'no declarations or source maps shipped',
    );
    assert.ok(!files.some((f) => f.startsWith('typescript/') || f.startsWith('fast-check/')), 'no dev dependencies');
    // What the runtime stage holds at the top: exactly what the Dockerfile copies.
    assert.deepEqual(readdirSync(runtime.workdir).sort(), ['bin', 'node_modules', 'package.json', 'src']);

    // The image user, from the Dockerfile.
    const [uid, gid] = (runtime.user ?? '').split(':').map(Number);
    assert.ok(
      uid !== undefined && uid > 0 && Number.isInteger(uid) && Number.isInteger(gid),
      `USER ${runtime.user} is a numeric non-root uid:gid`,
    );
    // Read-only: nothing in the folder is writable, by its owner (root) or anyone else.
    execFileSync('chmod', ['-R', 'a-w', runtime.workdir]);
    const certDir = path.join(work, 'certs');
    await ensureSelfSignedCert(certDir, {});
    execFileSync('chmod', ['-R', 'a+rX', certDir]);
    const asImageUser = (argv: string[]) => [
      '--reuid',
      String(uid),
      '--regid',
      String(gid),
      '--clear-groups',
      '--',
      ...argv,
    ];

    // Compiled: JavaScript and the embedded CRD, no TypeScript left for Node to strip.
    const shipped = [
      ...filesUnder(path.join(runtime.workdir, 'src')),
      ...filesUnder(path.join(runtime.workdir, 'bin')),
    ];
    assert.deepEqual(
      shipped.filter((f) => !f.endsWith('.js') && f !== path.join('embedded', 'trainjob-crd.json')),
      [],
      'only .js files and the embedded CRD in src/ and bin/',
    );
    assert.deepEqual(filesUnder(path.join(runtime.workdir, 'bin')), ['trainjob-webhook.js']);
    // Every module of src loads as the image user from the pruned tree (the reconciler's too,
    // which `serve` alone would not load).
    const sources = filesUnder(path.join(runtime.workdir, 'src')).filter((f) => f.endsWith('.js'));
    assert.ok(sources.length > 50, `${sources.length} compiled modules`);
    // And the process really is the image user, unable to write there.
    const importAll = [
      `for (const f of ${JSON.stringify(sources)}) await import('./src/' + f);`,
      `if (process.getuid() !== ${uid}) throw new Error('running as uid ' + process.getuid());`,
      `const { writeFileSync } = await import('node:fs');`,
      `let wrote = true; try { writeFileSync('probe', 'x'); } catch (err) { wrote = false; if (err.code !== 'EACCES') throw err; }`,
      `if (wrote) throw new Error('the runtime folder is writable');`,
    ].join('\n');
    execFileSync('/usr/bin/setpriv', asImageUser([process.execPath, '--input-type=module', '-e', importAll]), {
      cwd: runtime.workdir,
      env: { PATH: '/usr/bin:/bin', ...runtime.env },
    });

    // ENTRYPOINT + CMD, with the args adapted as a pod's would be.
    const [program, ...entryArgs] = runtime.entrypoint;
    assert.equal(program, 'node');
    const cmd = runtime.cmd.map((a) => (a === '/certs' ? certDir : a));
    assert.equal(cmd[0], 'serve');
    // Type stripping off: a TypeScript module left anywhere on serve's path would fail to load.
    const argv = [
      process.execPath,
      '--no-experimental-strip-types',
      ...entryArgs,
      ...cmd,
      '--port',
      '0',
      '--ops-port',
      '0',
      '--host',
      '127.0.0.1',
      '--offline',
    ];
    const child = spawn('/usr/bin/setpriv', asImageUser(argv), {
      cwd: runtime.workdir,
      env: { PATH: '/usr/bin:/bin', ...runtime.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    after(() => child.kill('SIGKILL'));
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const serving = await new Promise<Record<string, unknown>>((resolve, reject) => {
      createInterface({ input: child.stdout }).on('line', (line) => {
        try {
          const entry = JSON.parse(line) as Record<string, unknown>;
          if (entry.msg === 'serving') resolve(entry);
        } catch {
          // not a log line
        }
      });
      void exited.then((code) => reject(new Error(`serve exited ${code} before serving: ${stderr}`)));
    });

    const ops = String(serving.ops);
    const ready = await fetch(`${ops}/readyz`);
    assert.equal(ready.status, 200, await ready.text());
    const ca = readFileSync(path.join(certDir, 'ca.crt'), 'utf8');
    // One real decision: the image may not change on an UPDATE (only numNodes may).
    const changed = trainJob();
    (changed.spec as { trainer: { image: string } }).trainer.image = 'ghcr.io/acme/train:2.0';
    const res = await httpsPost(
      `${String(serving.admission)}${VALIDATE}`,
      review('UPDATE', { uid: 'image-1', object: changed }),
      ca,
    );
    assert.equal(res.status, 200);
    assert.equal(res.json.response.uid, 'image-1');
    assert.equal(res.json.response.allowed, false);
    assert.match(JSON.stringify(res.json.response.status), /image/);
    child.kill('SIGTERM');
    assert.equal(await exited, 0, stderr);
  });
});
