// Last-resort cleanup: whatever the harness started is killed, and its temp folders removed,
// when this process ends in any way it can observe: normal exit, SIGINT/SIGTERM/SIGHUP, and a
// crash on an uncaught error (node runs 'exit' handlers then too; under node:test an uncaught
// error fails the test instead and the suite's after() hook stops the cluster). A detached
// watchdog covers the one end this process cannot observe: SIGKILL.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const groups = new Set<number>(); // process-group ids (= pids of detached children)
const dirs = new Set<string>();
let installed = false;
let watchdog: { pid: number; stateFile: string; dir: string } | undefined;

/** Kills a whole process group; errors (already gone) are ignored. */
export function killGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    /* already gone */
  }
}

function cleanupNow(): void {
  for (const g of groups) killGroup(g, 'SIGKILL');
  groups.clear();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  dirs.clear();
  stopWatchdog();
}

function install(): void {
  if (installed) return;
  installed = true;
  // 'exit' handlers must be synchronous: SIGKILL and rmSync are.
  process.once('exit', cleanupNow);
  for (const [signal, code] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
    ['SIGHUP', 129],
  ] as const) {
    process.once(signal, () => {
      cleanupNow();
      process.exit(code);
    });
  }
}

// A shell that outlives this process only to kill the recorded groups and remove the recorded
// folders once this pid is gone. It reads its state file at that moment, so it is always current.
function ensureWatchdog(): void {
  if (watchdog) return;
  const dir = mkdtempSync(path.join(tmpdir(), 'tjw-watchdog-'));
  const stateFile = path.join(dir, 'state');
  writeFileSync(stateFile, '');
  const script = `
    while kill -0 ${process.pid} 2>/dev/null; do sleep 1; done
    while read -r kind value; do
      [ "$kind" = group ] && kill -KILL "-$value" 2>/dev/null # dash: no "--"
      [ "$kind" = dir ] && rm -rf -- "$value"
    done < "$1"
    rm -rf -- "$2"`;
  const child = spawn('sh', ['-c', script, 'tjw-watchdog', stateFile, dir], { detached: true, stdio: 'ignore' });
  child.unref();
  if (child.pid) watchdog = { pid: child.pid, stateFile, dir };
}

function stopWatchdog(): void {
  if (!watchdog) return;
  killGroup(watchdog.pid, 'SIGKILL');
  rmSync(watchdog.dir, { recursive: true, force: true });
  watchdog = undefined;
}

function syncState(): void {
  if (!watchdog) return;
  if (groups.size === 0 && dirs.size === 0) return stopWatchdog(); // nothing left to guard
  const lines = [...[...groups].map((g) => `group ${g}`), ...[...dirs].map((d) => `dir ${d}`)];
  writeFileSync(watchdog.stateFile, lines.join('\n') + '\n');
}

export function trackGroup(pgid: number): void {
  install();
  ensureWatchdog();
  groups.add(pgid);
  syncState();
}

export function untrackGroup(pgid: number): void {
  groups.delete(pgid);
  syncState();
}

export function trackDir(dir: string): void {
  install();
  ensureWatchdog();
  dirs.add(dir);
  syncState();
}

export function untrackDir(dir: string): void {
  dirs.delete(dir);
  syncState();
}
