// Resident memory of a process, from /proc/PID/status (Linux).
import { readFileSync } from 'node:fs';

export interface Memory {
  /** VmRSS: resident now, bytes. */
  rss: number;
  /** VmHWM: the peak resident set since the process started, bytes. */
  peak: number;
}

/** Parses the VmRSS and VmHWM lines (kB) of a /proc/PID/status text. */
export function parseProcStatus(text: string): Memory {
  const kb = (key: string) => {
    const m = new RegExp(`^${key}:\\s+(\\d+) kB$`, 'm').exec(text);
    if (!m) throw new Error(`no ${key} line in /proc/PID/status`);
    return Number(m[1]) * 1024;
  };
  return { rss: kb('VmRSS'), peak: kb('VmHWM') };
}

export function processMemory(pid: number): Memory {
  return parseProcStatus(readFileSync(`/proc/${pid}/status`, 'utf8'));
}
