// Servers on one core, the load generator on the other, so neither steals the other's CPU:
// `taskset -c 0` before every server command, this process (and the threads it starts later)
// moved to core 1. Without taskset, or with one core, nothing is pinned and the report says so.
import { execFileSync } from 'node:child_process';
import { availableParallelism } from 'node:os';

export interface Pinning {
  /** Prefix for a server's command line. */
  serverPrefix: string[];
  /** What the report says about it. */
  note: string;
}

export function pinCores(): Pinning {
  let taskset = true;
  try {
    execFileSync('taskset', ['-V'], { stdio: 'ignore' });
  } catch {
    taskset = false;
  }
  if (!taskset) return { serverPrefix: [], note: 'not pinned: taskset is not installed (util-linux)' };
  if (availableParallelism() < 2) return { serverPrefix: [], note: 'not pinned: one core only' };
  execFileSync('taskset', ['-a', '-c', '-p', '1', String(process.pid)], { stdio: 'ignore' });
  return {
    serverPrefix: ['taskset', '-c', '0'],
    note: 'servers pinned to core 0 (`taskset -c 0`, the Go peer with GOMAXPROCS=1), the load generator (autocannon, this process) to core 1',
  };
}
