// A real control plane for end-to-end suites: etcd, kube-apiserver and kube-controller-manager
// on 127.0.0.1 with free ports and fresh certificates in a temp folder, and everything needed
// to run more processes beside it (webhooks, controllers) that the API server trusts.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import type { ControlPlaneBinaries } from './binaries.ts';
import { ensureControlPlaneBinaries } from './availability.ts';
import { trackDir, untrackDir } from './cleanup.ts';
import { apiServerArgs, controllerManagerArgs, etcdArgs } from './flags.ts';
import { writeKubeconfig } from './kubeconfig.ts';
import { runKubectl, yamlSource, type KubectlOptions } from './kubectl.ts';
import {
  createCA,
  createServiceAccountKeys,
  issueClientCert,
  issueServingCert,
  writeKeyPair,
  type ServingCert,
  type ServingCertOptions,
} from './pki.ts';

export type { ServingCert } from './pki.ts';
import { startProcess, type TrackedProcess } from './process.ts';
import { freePort, freePorts, httpGet, httpsGet, waitFor } from './wait.ts';
import { startWorld, type World, type WorldHost, type WorldOptions } from './world.ts';

export { controlPlaneAvailability, upstreamControllersAvailability, type Availability } from './availability.ts';

export interface ControlPlaneOptions {
  /** CRD YAML files, installed and Established before the controller manager starts (its
   *  garbage collector re-discovers kinds only every ~30 s; foreground deletes of kinds it
   *  has not discovered stall). */
  crds?: string[];
  /** Start kube-controller-manager (default true). */
  controllerManager?: boolean;
  /**
   * The world pods run in (default on, needs the controller manager): kube-scheduler, KWOK and
   * a few fake Nodes (world.ts). `false` leaves pods Pending for good.
   */
  world?: boolean | WorldOptions;
  apiServerArgs?: string[];
  /** More etcd flags (e.g. a larger --quota-backend-bytes for a benchmark's many objects). */
  etcdArgs?: string[];
  controllerManagerArgs?: string[];
  /** Default: located (or built) by ensureControlPlaneBinaries(). */
  binaries?: ControlPlaneBinaries;
  /** Per component; default 60 s. */
  startTimeoutMs?: number;
}

export interface UserKubeconfig {
  path: string;
  kubeConfig: KubeConfig;
}

/** The control plane a test drives; the world (scheduler, KWOK, nodes) joins it as a WorldHost. */
export interface ControlPlane extends WorldHost {
  /** The temp folder holding certs, data, logs; removed at stop(). */
  dir: string;
  logsDir: string;
  server: string;
  caPem: string;
  kubeConfig: KubeConfig;
  binaries: ControlPlaneBinaries;
  processes: { etcd: TrackedProcess; apiServer: TrackedProcess; controllerManager?: TrackedProcess };
  /** The scheduler, KWOK and the fake nodes, unless started with `world: false`. */
  world?: World;
  /** Applies CRD files and waits for them to be Established. */
  installCRDs(files: string[]): Promise<void>;
  issueServingCert(name: string, opts?: ServingCertOptions): Promise<ServingCert>;
  makeUserKubeconfig(user: string, groups?: string[]): Promise<UserKubeconfig>;
  /** A fresh folder inside dir. */
  tempDir(name: string): Promise<string>;
  /** The last lines of every process's log, for a failing test's message. */
  logTails(lines?: number): string;
  /**
   * Stops kube-apiserver (SIGTERM, or SIGKILL for a crash) and starts it again with the same
   * flags on the same port, etcd and certificates; resolves once /readyz answers 200. Clients keep
   * their kubeconfigs; `processes.apiServer` is the new process afterwards. `addArgs` are added
   * to its flags from this start on (kept by later restarts).
   */
  restartApiServer(opts?: { signal?: 'SIGTERM' | 'SIGKILL'; addArgs?: string[] }): Promise<void>;
  stop(): Promise<void>;
}

// Webhook and controller traffic stays on loopback: a proxy from the developer's environment
// must never see it (Go honours HTTPS_PROXY for webhook calls).
function cleanEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!/^(https?|all|no)_proxy$/i.test(k) && k !== 'KUBECONFIG') env[k] = v;
  }
  return { ...env, NO_PROXY: '127.0.0.1,localhost', no_proxy: '127.0.0.1,localhost', ...extra };
}

// eslint-disable-next-line max-lines-per-function -- starts etcd, apiserver, controllers; its methods close over them
export async function startControlPlane(opts: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const binaries = opts.binaries ?? (await ensureControlPlaneBinaries());
  const timeoutMs = opts.startTimeoutMs ?? 60_000;
  const dir = await mkdtemp(path.join(tmpdir(), 'tjw-e2e-'));
  trackDir(dir);
  const logsDir = path.join(dir, 'logs');
  const certsDir = path.join(dir, 'certs');
  await mkdir(logsDir);
  const extra: TrackedProcess[] = [];
  const started: TrackedProcess[] = [];
  let stopped = false;

  const stop = async () => {
    if (stopped) return;
    stopped = true;
    // Dependents first: extra processes, then the controller manager, apiserver, etcd.
    for (const p of [...extra].reverse()) await p.stop();
    for (const p of [...started].reverse()) await p.stop();
    if (process.env.TJW_KEEP_TMP === '1') {
      process.stderr.write(`[harness] TJW_KEEP_TMP=1: keeping ${dir}\n`);
    } else {
      await rm(dir, { recursive: true, force: true });
    }
    untrackDir(dir);
  };

  try {
    const ca = await createCA();
    const caFile = path.join(certsDir, 'ca.crt');
    await mkdir(certsDir, { recursive: true, mode: 0o700 });
    await writeFile(caFile, ca.certPem);
    const sa = await createServiceAccountKeys();
    const saPublicKey = path.join(certsDir, 'sa.pub');
    const saPrivateKey = path.join(certsDir, 'sa.key');
    await writeFile(saPublicKey, sa.publicPem);
    await writeFile(saPrivateKey, sa.privatePem, { mode: 0o600 });
    const files = { caCert: caFile, saPublicKey, saPrivateKey };

    // etcd
    const [clientPort, peerPort] = await freePorts(2);
    const etcd = startProcess(
      logsDir,
      'etcd',
      binaries.etcd,
      [...etcdArgs({ dataDir: path.join(dir, 'etcd'), clientPort, peerPort }), ...(opts.etcdArgs ?? [])],
      { env: cleanEnv() },
    );
    started.push(etcd);
    const etcdUrl = `http://127.0.0.1:${clientPort}`;
    await waitFor('etcd /health', async () => (await httpGet(`${etcdUrl}/health`)).body.includes('"true"'), {
      timeoutMs,
      process: etcd,
    });

    // kube-apiserver
    const port = await freePort();
    const server = `https://127.0.0.1:${port}`;
    // 10.0.0.1 is the `kubernetes` Service's address in --service-cluster-ip-range.
    const apiCert = await writeKeyPair(
      path.join(certsDir, 'apiserver'),
      await issueServingCert(ca, 'kube-apiserver', {
        dnsNames: ['localhost', 'kubernetes', 'kubernetes.default', 'kubernetes.default.svc'],
        ips: ['127.0.0.1', '10.0.0.1'],
      }),
    );
    const apiServerCommand = [
      ...apiServerArgs({
        ...files,
        port,
        etcdUrl,
        servingCert: apiCert.certFile,
        servingKey: apiCert.keyFile,
        certDir: path.join(certsDir, 'apiserver'),
      }),
      ...(opts.apiServerArgs ?? []),
    ];
    // The same name each time: a restarted API server appends to the same log.
    const launchApiServer = () =>
      startProcess(logsDir, 'kube-apiserver', binaries.kubeApiserver, apiServerCommand, { env: cleanEnv() });
    const apiServer = launchApiServer();
    started.push(apiServer);
    const admin = await issueClientCert(ca, 'e2e-admin', ['system:masters']);
    const tls = { ca: ca.certPem, cert: admin.certPem, key: admin.keyPem };
    const apiServerReady = (proc: TrackedProcess) =>
      waitFor('kube-apiserver /readyz', async () => (await httpsGet(`${server}/readyz`, tls)).status === 200, {
        timeoutMs,
        process: proc,
      });
    await apiServerReady(apiServer);

    const kubeconfigPath = await writeKubeconfig(
      path.join(dir, 'admin.kubeconfig'),
      server,
      ca.certPem,
      'e2e-admin',
      admin,
    );
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromFile(kubeconfigPath);
    const kubectlTarget = {
      bin: binaries.kubectl,
      kubeconfig: kubeconfigPath,
      cacheDir: path.join(dir, 'kubectl-cache'),
    };
    const kubectl = (args: string[], o?: KubectlOptions) => runKubectl(kubectlTarget, args, o);

    const applyYaml = (textOrFile: string, o: KubectlOptions = {}) => {
      const src = yamlSource(textOrFile);
      // Server-side: CRDs are too large for client-side apply's last-applied annotation.
      const args = [
        'apply',
        '--server-side',
        '--force-conflicts',
        '--field-manager=e2e-harness',
        '-f',
        src.file ?? '-',
      ];
      return kubectl(args, { ...o, input: src.text ?? o.input });
    };
    // One apply and one wait for all the files (each kubectl run costs about half a second).
    const installCRDs = async (crdFiles: string[]) => {
      if (crdFiles.length === 0) return;
      const files = crdFiles.flatMap((f) => ['-f', f]);
      await kubectl(['apply', '--server-side', '--force-conflicts', '--field-manager=e2e-harness', ...files]);
      // `kubectl wait` right after a create can see `status.conditions: null` and fail at once
      // ("accessor error: <nil>"): waitFor retries a failed wait until its own deadline.
      await waitFor(
        `CRDs ${crdFiles.join(', ')} Established`,
        async () => (await kubectl(['wait', '--for=condition=Established', '--timeout=30s', ...files])) && true,
      );
    };
    await installCRDs(opts.crds ?? []);

    // kube-controller-manager, as system:masters (it runs without per-controller service
    // account credentials, so its own identity needs every controller's permissions).
    let controllerManager: TrackedProcess | undefined;
    if (opts.controllerManager !== false) {
      const kcmKubeconfig = await writeKubeconfig(
        path.join(dir, 'kcm.kubeconfig'),
        server,
        ca.certPem,
        'system:kube-controller-manager',
        await issueClientCert(ca, 'system:kube-controller-manager', ['system:masters']),
      );
      const kcmPort = await freePort();
      const kcmCert = await writeKeyPair(
        path.join(certsDir, 'kcm'),
        await issueServingCert(ca, 'kube-controller-manager'),
      );
      controllerManager = startProcess(
        logsDir,
        'kube-controller-manager',
        binaries.kubeControllerManager,
        [
          ...controllerManagerArgs({
            ...files,
            port: kcmPort,
            kubeconfig: kcmKubeconfig,
            servingCert: kcmCert.certFile,
            servingKey: kcmCert.keyFile,
          }),
          ...(opts.controllerManagerArgs ?? []),
        ],
        { env: cleanEnv() },
      );
      started.push(controllerManager);
      await waitFor(
        'kube-controller-manager /healthz',
        async () => (await httpsGet(`https://127.0.0.1:${kcmPort}/healthz`, { ca: ca.certPem })).status === 200,
        { timeoutMs, process: controllerManager },
      );
      // Controllers are running once the service-account controller has made `default`.
      await waitFor(
        'serviceaccount default/default',
        async () => (await kubectl(['get', 'serviceaccount', 'default', '-n', 'default'], { check: false })).code === 0,
        { timeoutMs, process: controllerManager },
      );
    }

    const cp: ControlPlane = {
      dir,
      logsDir,
      server,
      caPem: ca.certPem,
      kubeconfigPath,
      kubeConfig,
      binaries,
      processes: { etcd, apiServer, controllerManager },
      kubectl,
      applyYaml,
      installCRDs,
      async issueServingCert(name, certOpts) {
        const pair = await issueServingCert(ca, name, certOpts);
        const certDir = path.join(certsDir, 'serving', name);
        const written = await writeKeyPair(certDir, pair);
        return { dir: certDir, ...written, ...pair, caPem: ca.certPem };
      },
      async makeUserKubeconfig(user, groups = []) {
        await mkdir(path.join(dir, 'kubeconfigs'), { recursive: true });
        const file = path.join(dir, 'kubeconfigs', `${user.replace(/[^A-Za-z0-9_.-]/g, '_')}.kubeconfig`);
        await writeKubeconfig(file, server, ca.certPem, user, await issueClientCert(ca, user, groups));
        const kc = new KubeConfig();
        kc.loadFromFile(file);
        return { path: file, kubeConfig: kc };
      },
      childEnv: (more = {}) => cleanEnv({ KUBECONFIG: kubeconfigPath, ...more }),
      startProcess(name, cmd, args, procOpts = {}) {
        if (stopped) throw new Error(`control plane stopped: cannot start ${name}`);
        const p = startProcess(logsDir, name, cmd, args, {
          ...procOpts,
          env: procOpts.env ?? cleanEnv({ KUBECONFIG: kubeconfigPath }),
        });
        extra.push(p);
        return p;
      },
      async tempDir(name) {
        return mkdtemp(path.join(dir, `${name}-`));
      },
      async restartApiServer({ signal = 'SIGTERM', addArgs = [] } = {}) {
        if (stopped) throw new Error('control plane stopped: cannot restart kube-apiserver');
        apiServerCommand.push(...addArgs);
        const previous = cp.processes.apiServer;
        if (signal === 'SIGKILL') previous.kill('SIGKILL');
        await previous.stop();
        const next = launchApiServer();
        started[started.indexOf(previous)] = next;
        cp.processes.apiServer = next;
        await apiServerReady(next);
      },
      logTails(lines = 30) {
        return [...started, ...extra].map((p) => `--- ${p.name} (${p.logFile})\n${p.logTail(lines)}`).join('\n');
      },
      stop,
    };
    if (controllerManager && opts.world !== false) {
      cp.world = await startWorld(cp, binaries, typeof opts.world === 'object' ? opts.world : {}, timeoutMs);
    }
    return cp;
  } catch (err) {
    await stop();
    throw err;
  }
}
