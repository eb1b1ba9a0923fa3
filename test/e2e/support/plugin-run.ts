// The kubectl plugin's single executable run as a user runs it: its own process, nothing else on
// PATH (no Node), the user's KUBECONFIG; its exit, stdout and stderr. For the plugin's e2e suites.
import { spawn } from 'node:child_process';
import type { ControlPlane, UserKubeconfig } from '../../harness/index.ts';

export interface PluginRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  out: string;
  err: string;
}

/** Runs `bin args` as `user`; killed after killAfterMs (a hung run fails its test, not the suite). */
export function runPlugin(
  cp: ControlPlane,
  bin: string,
  user: UserKubeconfig,
  args: string[],
  killAfterMs = 120_000,
): Promise<PluginRun> {
  return new Promise((resolve, reject) => {
    const env = cp.childEnv({ KUBECONFIG: user.path, PATH: '/nonexistent' });
    const child = spawn(bin, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, out, err });
    });
  });
}

/** A run as an assertion message shows it. */
export const showRun = (r: PluginRun) => `exit ${r.code}\n--- stdout\n${r.out}\n--- stderr\n${r.err}`;
