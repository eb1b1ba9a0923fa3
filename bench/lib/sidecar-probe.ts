// The reconciler sidecar read as a black box, as the scale benchmark needs it: its Prometheus
// series (by name, with labels), its log read from where it was left off, its memory from /proc.
import { openSync, readSync, closeSync, fstatSync } from 'node:fs';

export interface Sample {
  labels: Record<string, string>;
  value: number;
}

/** The samples of one series in a Prometheus text exposition. */
export function samplesOf(text: string, name: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (!(line.startsWith(`${name} `) || line.startsWith(`${name}{`))) continue;
    const m = /^[^{\s]+(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const labels = Object.fromEntries([...(m[1] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    out.push({ labels, value: Number(m[2]) });
  }
  return out;
}

/** The sum of a series over the samples whose labels pass `keep`. */
export function sumOf(text: string, name: string, keep: (l: Record<string, string>) => boolean = () => true): number {
  return samplesOf(text, name)
    .filter((s) => keep(s.labels))
    .reduce((a, s) => a + s.value, 0);
}

/** Sums by one label's value, over the samples whose labels pass `keep`. */
export function byLabel(
  text: string,
  name: string,
  label: string,
  keep: (l: Record<string, string>) => boolean = () => true,
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const s of samplesOf(text, name).filter((x) => keep(x.labels)))
    out[s.labels[label] ?? ''] = (out[s.labels[label] ?? ''] ?? 0) + s.value;
  return out;
}

/** Differences of two `byLabel` readings (keys with no change left out). */
export function deltaOf(before: Record<string, number>, after: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(after)) if (v - (before[k] ?? 0) !== 0) out[k] = v - (before[k] ?? 0);
  return out;
}

export interface LogRecord {
  msg?: string;
  time?: string;
  [key: string]: unknown;
}

/** A log file read on from where the last read stopped (a long run's log is too large to read again). */
export function logTail(file: string): { next(): LogRecord[] } {
  let offset = 0;
  let partial = '';
  return {
    next() {
      const fd = openSync(file, 'r');
      try {
        const size = fstatSync(fd).size;
        if (size <= offset) return [];
        const buf = Buffer.alloc(size - offset);
        readSync(fd, buf, 0, buf.length, offset);
        offset = size;
        const lines = (partial + buf.toString('utf8')).split('\n');
        partial = lines.pop() ?? '';
        return lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as LogRecord);
      } finally {
        closeSync(fd);
      }
    },
  };
}
