// A child process the harness owns: its own process group (so grandchildren die with it),
// output captured to a log file, registered for last-resort cleanup, stopped with SIGTERM
// and then SIGKILL.
import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { killGroup, trackGroup, untrackGroup } from './cleanup.ts';

export interface StartProcessOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Ms between SIGTERM and SIGKILL at stop(); default 5000. */
  stopTimeoutMs?: number;
}

export interface ExitStatus {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface TrackedProcess {
  name: string;
  pid: number;
  logFile: string;
  /** Settles when the process exits (never rejects). */
  exited: Promise<ExitStatus>;
  /** Set once the process has exited. */
  exitStatus: ExitStatus | undefined;
  /** Sends a signal to the whole process group (e.g. SIGKILL to simulate a crash). */
  kill(signal?: NodeJS.Signals): void;
  /** SIGTERM, then SIGKILL after the timeout; resolves once the process is gone. */
  stop(): Promise<ExitStatus>;
  /** The last lines of the captured output. */
  logTail(lines?: number): string;
}

export function tailFile(file: string, lines = 40): string {
  try {
    return readFileSync(file, 'utf8')
      .split('\n')
      .slice(-lines - 1)
      .join('\n');
  } catch {
    return '';
  }
}

/**
 * Starts `cmd args` with stdout and stderr appended to `<logDir>/<name>.log`. An exit that
 * stop() did not ask for prints the log's tail to stderr, so a crashed component explains itself.
 */
export function startProcess(
  logDir: string,
  name: string,
  cmd: string,
  args: string[],
  opts: StartProcessOptions = {},
): TrackedProcess {
  const logFile = path.join(logDir, `${name}.log`);
  const fd = openSync(logFile, 'a');
  // detached: the child leads a new process group, which kill(-pid) reaches as a whole.
  const child = spawn(cmd, args, {
    cwd: opts.cwd,
    env: opts.env ?? process.env,
    detached: true,
    stdio: ['ignore', fd, fd],
  });
  closeSync(fd);
  if (child.pid === undefined) throw new Error(`${name}: could not start ${cmd}`);
  const pid = child.pid;
  trackGroup(pid);
  // Keep the event loop free: a suite that forgets stop() still ends (and 'exit' kills it).
  child.unref();

  let stopping = false;
  const proc: TrackedProcess = {
    name,
    pid,
    logFile,
    exitStatus: undefined,
    exited: new Promise<ExitStatus>((resolve) => {
      child.once('error', (err) => {
        proc.exitStatus = { code: -1, signal: null };
        process.stderr.write(`[harness] ${name}: ${err.message}\n`);
        resolve(proc.exitStatus);
      });
      child.once('exit', (code, signal) => {
        proc.exitStatus = { code, signal };
        // The group may hold grandchildren still; finish them before forgetting it.
        killGroup(pid, 'SIGKILL');
        untrackGroup(pid);
        if (!stopping) {
          process.stderr.write(
            `[harness] ${name} (pid ${pid}) exited unexpectedly (code ${code}, signal ${signal}); last lines of ${logFile}:\n${tailFile(logFile)}\n`,
          );
        }
        resolve(proc.exitStatus);
      });
    }),
    kill(signal: NodeJS.Signals = 'SIGTERM') {
      stopping = true; // a deliberate kill is not reported as a crash
      killGroup(pid, signal);
    },
    async stop() {
      if (proc.exitStatus) return proc.exitStatus;
      stopping = true;
      killGroup(pid, 'SIGTERM');
      const timer = setTimeout(() => killGroup(pid, 'SIGKILL'), opts.stopTimeoutMs ?? 5000);
      const status = await proc.exited;
      clearTimeout(timer);
      return status;
    },
    logTail(lines = 40) {
      return tailFile(logFile, lines);
    },
  };
  return proc;
}
