// Markdown tables of measurements, each value beside its ratio to a baseline of the same run.

/** `x1.23`; `n/a` when either side is missing or the baseline is 0. */
export function ratio(value: number, baseline: number): string {
  if (!Number.isFinite(value) || !Number.isFinite(baseline) || baseline === 0) return 'n/a';
  return `x${(value / baseline).toFixed(2)}`;
}

/** Milliseconds with three significant places below 10 ms (sub-millisecond latencies stay readable). */
export function ms(value: number): string {
  if (!Number.isFinite(value)) return 'n/a';
  return value < 10 ? value.toFixed(3) : value.toFixed(1);
}

export function mib(bytes: number): string {
  return Number.isFinite(bytes) ? (bytes / 1024 / 1024).toFixed(1) : 'n/a';
}

export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const esc = (c: string) => c.replace(/\|/g, '\\|');
  const line = (cells: readonly string[]) => `| ${cells.map(esc).join(' | ')} |`;
  const align = header.map((_, i) => (i === 0 ? '---' : '---:'));
  return [line(header), `|${align.map((a) => ` ${a} `).join('|')}|`, ...rows.map(line)].join('\n');
}

export interface LoadResult {
  server: string;
  body: string;
  connections: number;
  rps: number;
  p50: number;
  p99: number;
}

/**
 * One table per body and connection count: requests/s, p50, p99 (ms), each with its ratio to the
 * baseline server's result for the same body and connections (for latency, lower is better;
 * for requests/s, higher).
 */
export function loadTables(results: readonly LoadResult[], baseline: string): string {
  const groups = new Map<string, LoadResult[]>();
  for (const r of results) {
    const key = `${r.body}\u0000${r.connections}`;
    groups.set(key, [...(groups.get(key) ?? []), r]);
  }
  const out: string[] = [];
  for (const rs of groups.values()) {
    const base = rs.find((r) => r.server === baseline);
    out.push(`**${rs[0].body}**, ${rs[0].connections} connection${rs[0].connections === 1 ? '' : 's'}`, '');
    out.push(
      table(
        ['server', 'req/s', 'ratio', 'p50 ms', 'ratio', 'p99 ms', 'ratio'],
        rs.map((r) => [
          r.server,
          r.rps.toFixed(0),
          ratio(r.rps, base?.rps ?? NaN),
          ms(r.p50),
          ratio(r.p50, base?.p50 ?? NaN),
          ms(r.p99),
          ratio(r.p99, base?.p99 ?? NaN),
        ]),
      ),
      '',
    );
  }
  return out.join('\n');
}

export interface MemoryResult {
  server: string;
  /** VmRSS (bytes) read right after the loads of each body, in the order bodies were loaded. */
  rssAfter: { body: string; rss: number }[];
  /** VmHWM, the peak resident set over the run, bytes. */
  peak: number;
}

/** One row per server: its RSS after each body's loads and its peak, each with the ratio to the baseline's. */
export function memoryTable(results: readonly MemoryResult[], baseline: string): string {
  const base = results.find((r) => r.server === baseline);
  const bodies = results[0]?.rssAfter.map((a) => a.body) ?? [];
  const header = ['server', ...bodies.flatMap((b) => [`RSS after ${b}, MiB`, 'ratio']), 'peak RSS MiB', 'ratio'];
  return table(
    header,
    results.map((r) => [
      r.server,
      ...bodies.flatMap((b, i) => {
        const rss = r.rssAfter[i]?.rss ?? NaN;
        return [mib(rss), ratio(rss, base?.rssAfter[i]?.rss ?? NaN)];
      }),
      mib(r.peak),
      ratio(r.peak, base?.peak ?? NaN),
    ]),
  );
}
