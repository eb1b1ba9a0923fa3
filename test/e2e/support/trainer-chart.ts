// Trainer's Helm chart as its users install it, against the test control plane: the v2.2.1 and
// v2.3.0 charts from their Go modules (the module zip ships charts/) and the main line's vendored in upstream/,
// installed and upgraded with the real Helm 3 and Helm 4 binaries, rendered through a
// post-renderer that keeps only the CRDs (crds-only-post-renderer.ts says why).
import { execFile } from 'node:child_process';
import { cp, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { projectRoot, readVersions, upstreamDir, type TrainerLine } from '../../harness/binaries.ts';

const run = promisify(execFile);

/** The folder of a Go module version, downloaded into the module cache if missing (`go mod download -json`). */
export async function goModuleDir(mod: string): Promise<string> {
  const { stdout } = await run('go', ['mod', 'download', '-json', mod], { cwd: projectRoot, timeout: 300_000 });
  const dir = (JSON.parse(stdout) as { Dir?: string; Error?: string }).Dir;
  if (!dir) throw new Error(`go mod download ${mod}: ${stdout}`);
  return dir;
}

export interface TrainerCharts {
  /** Trainer v2.3.0's chart (a writable copy). */
  v230: string;
  /** Trainer's main line (upstream/trainer-main-*), a writable copy. */
  main: string;
}

/** Where a line's chart comes from: v2.2.1 and v2.3.0 from their Go modules (the zip ships charts/), main vendored. */
async function chartSource(line: TrainerLine): Promise<string> {
  const version = readVersions(undefined, { trainer: line, k8sMinor: '1.35' }).trainer;
  if (line === 'main') return path.join(upstreamDir, `trainer-${version}`, 'charts/kubeflow-trainer');
  return path.join(await goModuleDir(`github.com/kubeflow/trainer/v2@${version}`), 'charts/kubeflow-trainer');
}

/**
 * A writable copy of one line's chart in `dir`. Its dependencies (JobSet's and LWS's charts, from
 * OCI registries this machine cannot reach) are stood in for by empty charts of the names and
 * versions its Chart.yaml lists, in charts/, which Helm requires to exist whatever their
 * conditions; nothing of the upstream chart itself is changed.
 */
export async function prepareTrainerChart(dir: string, line: TrainerLine): Promise<string> {
  const out = path.join(dir, `chart-${line}`);
  await cp(await chartSource(line), out, { recursive: true });
  // The module cache is read-only; the copy must be writable (charts/ below, and its removal).
  await run('chmod', ['-R', 'u+w', out]);
  const meta = parse(await readFile(path.join(out, 'Chart.yaml'), 'utf8')) as {
    dependencies?: { name?: unknown; version?: unknown }[];
  };
  for (const dep of meta.dependencies ?? []) {
    if (typeof dep.name !== 'string' || typeof dep.version !== 'string')
      throw new Error(`${out}/Chart.yaml: a dependency without a name or version`);
    const sub = path.join(out, 'charts', dep.name);
    await mkdir(sub, { recursive: true });
    await writeFile(path.join(sub, 'Chart.yaml'), `apiVersion: v2\nname: ${dep.name}\nversion: ${dep.version}\n`);
  }
  return out;
}

/** Writable copies of the v2.3.0 and main charts (prepareTrainerChart). */
export async function prepareTrainerCharts(dir: string): Promise<TrainerCharts> {
  return { v230: await prepareTrainerChart(dir, 'v2.3.0'), main: await prepareTrainerChart(dir, 'main') };
}

/**
 * The TrainJob CRD of a chart, as it renders with the default values: its template is the CRD
 * between a licence comment and `{{- if .Values.crds.enabled }}` ... `{{- end }}` (asserted:
 * nothing else of Go templates may be in it). Read from the file: a `helm template` and a parse
 * of its 2.4 MB output cost seconds here.
 */
export async function chartTrainJobCrd(chart: string): Promise<Record<string, any>> {
  const file = path.join(chart, 'templates/crd/trainer.kubeflow.org_trainjobs.yaml');
  const text = (await readFile(file, 'utf8'))
    .replace(/^\{\{- \/\*[\s\S]*?\*\/ -\}\}$/m, '')
    .replace(/^\{\{- if \.Values\.crds\.enabled \}\}$/m, '')
    .replace(/^\{\{- end \}\}\s*$/m, '');
  if (text.includes('{{')) throw new Error(`${file}: template code besides the crds.enabled guard`);
  const crd = parse(text) as Record<string, any>;
  if (crd?.metadata?.name !== 'trainjobs.trainer.kubeflow.org') throw new Error(`${file}: not the TrainJob CRD`);
  return crd;
}

export interface Helm {
  name: 'helm3' | 'helm4';
  bin: string;
  /** The flags that make it render through the CRDs-only post-renderer. */
  postRender: string[];
  run(args: string[], opts?: { check?: boolean }): Promise<{ code: number; stdout: string; stderr: string }>;
}

/**
 * Helm 3 or 4 with its own cache, config and data folders under `dir` and the cluster's
 * kubeconfig in `env`; the post-renderer as Helm 3 wants it (an executable) or Helm 4 (a plugin
 * of type postrenderer/v1 in HELM_PLUGINS).
 */
export async function helmFor(name: Helm['name'], bin: string, dir: string, env: NodeJS.ProcessEnv): Promise<Helm> {
  const home = path.join(dir, name);
  const plugins = path.join(home, 'plugins');
  const script = path.join(home, 'crds-only.sh');
  await mkdir(path.join(plugins, 'crds-only'), { recursive: true });
  const renderer = path.join(projectRoot, 'test/e2e/support/crds-only-post-renderer.ts');
  await writeFile(script, `#!/bin/sh\nexec "${process.execPath}" "${renderer}"\n`, { mode: 0o755 });
  await writeFile(
    path.join(plugins, 'crds-only', 'plugin.yaml'),
    [
      'name: crds-only',
      'version: 0.1.0',
      'type: postrenderer/v1',
      'apiVersion: v1',
      'runtime: subprocess',
      'runtimeConfig:',
      '  platformCommand:',
      `    - command: ${script}`,
      '',
    ].join('\n'),
  );
  const helmEnv = {
    ...env,
    HELM_CACHE_HOME: path.join(home, 'cache'),
    HELM_CONFIG_HOME: path.join(home, 'config'),
    HELM_DATA_HOME: path.join(home, 'data'),
    HELM_PLUGINS: plugins,
  };
  return {
    name,
    bin,
    postRender: ['--post-renderer', name === 'helm3' ? script : 'crds-only'],
    async run(args, { check = true } = {}) {
      try {
        const { stdout, stderr } = await run(bin, args, { env: helmEnv, timeout: 180_000, maxBuffer: 64 << 20 });
        return { code: 0, stdout, stderr };
      } catch (err) {
        const e = err as { code?: number; stdout?: string; stderr?: string };
        const result = {
          code: typeof e.code === 'number' ? e.code : 1,
          stdout: e.stdout ?? '',
          stderr: e.stderr ?? '',
        };
        if (check)
          throw new Error(`${name} ${args.join(' ')} failed (exit ${result.code}): ${result.stderr.trim()}`, {
            cause: err,
          });
        return result;
      }
    },
  };
}
